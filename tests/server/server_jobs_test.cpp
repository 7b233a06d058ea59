// The job queue through HTTP: cancel of a queued and of a running job (the running one stops
// at its next step and frees its slot), A1111's interrupt and progress, a full queue (429
// with Retry-After), and results expiring after --result-ttl (410).
#include <fstream>
#include <future>

#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

std::string submit(httplib::Client& c, const json& body) {
    auto r = post_json(c, "/sdcpp/v1/img_gen", body);
    if (!r || r->status != 202) {
        ADD_FAILURE() << "submit failed: " << (r ? r->body : httplib::to_string(r.error()));
        return "";
    }
    return body_json(r)["id"];
}

TEST(ServerJobs, CancelQueuedAndRunningJobs) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({"--max-queue", "4"});
    auto c = server.client();
    const std::string running = submit(c, small_job(150, 1));
    const std::string queued = submit(c, small_job(2, 2));
    ASSERT_FALSE(running.empty());
    ASSERT_FALSE(queued.empty());
    json r = wait_sampling(c, running, 1);
    EXPECT_EQ(r["status"], "generating");
    EXPECT_TRUE(r["progress"]["eta_seconds"].is_number()) << r.dump();
    json q = body_json(c.Get(("/sdcpp/v1/jobs/" + queued).c_str()));
    EXPECT_EQ(q["status"], "queued");
    EXPECT_EQ(q["queue_position"], 1);

    // A queued job is cancelled at once.
    auto cq = c.Post(("/sdcpp/v1/jobs/" + queued + "/cancel").c_str(), "", "application/json");
    ASSERT_TRUE(cq);
    EXPECT_EQ(cq->status, 200);
    EXPECT_EQ(body_json(cq)["status"], "cancelled");

    // A running one stops at its next step.
    const auto t0 = std::chrono::steady_clock::now();
    auto cr = c.Post(("/sdcpp/v1/jobs/" + running + "/cancel").c_str(), "", "application/json");
    ASSERT_TRUE(cr);
    EXPECT_TRUE(cr->status == 202 || cr->status == 200) << cr->body;
    EXPECT_EQ(body_json(cr)["cancel_requested"], true);
    json done = wait_job(c, running, 60);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(done["status"], "cancelled");
    EXPECT_EQ(done["error"]["code"], "cancelled");
    EXPECT_LT(done["progress"]["step"].get<int>(), 150);
    EXPECT_LT(secs, 20.0) << "cancel took " << secs << " s";

    // The slot is free: the next job runs to the end.
    const std::string next = submit(c, small_job(2, 3));
    EXPECT_EQ(wait_job(c, next)["status"], "completed");
    // Cancelling a finished job changes nothing.
    auto again = c.Post(("/sdcpp/v1/jobs/" + next + "/cancel").c_str(), "", "application/json");
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 200);
    EXPECT_EQ(body_json(again)["status"], "completed");
}

TEST(ServerJobs, A1111InterruptAndProgress) {
    if (!e2e::prerequisites_ok()) return;
    // (With a key given on the command line: every route below needs it.)
    ServerProcess server({"--api-key", "k3y"});
    auto c = server.client();
    EXPECT_EQ(c.Get("/sdapi/v1/progress")->status, 401);
    c.set_default_headers({{"Authorization", "Bearer k3y"}});
    auto pending = std::async(std::launch::async, [&server] {
        auto c2 = server.client();
        c2.set_default_headers({{"X-Api-Key", "k3y"}});
        return post_json(
            c2, "/sdapi/v1/txt2img",
            {{"prompt", "x"}, {"width", 64}, {"height", 64}, {"steps", 150}, {"seed", 1}});
    });
    json p;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
        p = body_json(c.Get("/sdapi/v1/progress"));
        if (p["state"]["sampling_step"].get<int>() >= 1) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(p["state"]["job"], "txt2img");
    EXPECT_EQ(p["state"]["sampling_steps"], 150);
    EXPECT_GT(p["progress"].get<double>(), 0.0);
    EXPECT_LT(p["progress"].get<double>(), 1.0);
    EXPECT_GT(p["eta_relative"].get<double>(), 0.0);
    auto stop = c.Post("/sdapi/v1/interrupt", "", "application/json");
    ASSERT_TRUE(stop);
    EXPECT_EQ(body_json(stop)["interrupted"], true);
    auto r = pending.get();
    ASSERT_TRUE(r);
    // Like A1111: an interrupted request answers with what was finished (nothing here).
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(body_json(r)["images"], json::array());
    EXPECT_EQ(body_json(c.Get("/sdapi/v1/progress"))["state"]["job_count"], 0);
}

TEST(ServerJobs, FullQueueAnswers429WithRetryAfter) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({"--max-queue", "1"});
    auto c = server.client();
    const std::string a = submit(c, small_job(150, 1));
    wait_sampling(c, a, 1);
    const std::string b = submit(c, small_job(2, 2));
    ASSERT_FALSE(b.empty());
    auto full = post_json(c, "/sdcpp/v1/img_gen", small_job(2, 3));
    ASSERT_TRUE(full);
    EXPECT_EQ(full->status, 429);
    EXPECT_FALSE(full->get_header_value("Retry-After").empty());
    EXPECT_GE(std::stoi("0" + full->get_header_value("Retry-After")), 1);
    EXPECT_NE(body_json(full)["error"].get<std::string>().find("queue is full"), std::string::npos);
    // The other APIs say it in their own shapes.
    auto oai = post_json(c, "/v1/images/generations", {{"prompt", "x"}, {"size", "64x64"}});
    ASSERT_TRUE(oai);
    EXPECT_EQ(oai->status, 429);
    EXPECT_EQ(body_json(oai)["error"]["type"], "rate_limit_error");
    // Still serving, and the queue drains.
    EXPECT_EQ(c.Get("/health")->status, 200);
    c.Post(("/sdcpp/v1/jobs/" + a + "/cancel").c_str(), "", "application/json");
    EXPECT_EQ(wait_job(c, b)["status"], "completed");
    EXPECT_EQ(post_json(c, "/sdcpp/v1/img_gen", small_job(1, 4))->status, 202);
}

TEST(ServerJobs, EngineFlagsSetDefaultsAndResultsExpire) {
    if (!e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir();
    std::ofstream(dir + "/prompt.txt") << "a tree by a lake\n";
    ServerProcess server({"--result-ttl", "3", "--max-results-mb", "0", "-W", "64", "-H", "72",
                          "--steps", "1", "--sampling-method", "euler", "-s", "5", "--cfg-scale",
                          "4.5", "--prompt-file", dir + "/prompt.txt"});
    auto c = server.client();
    // The CLI's generation flags are the defaults of requests that leave fields out.
    json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    EXPECT_EQ(caps["defaults"]["width"], 64);
    EXPECT_EQ(caps["defaults"]["height"], 72);
    EXPECT_EQ(caps["defaults"]["seed"], 5);
    EXPECT_EQ(caps["defaults"]["sample_params"]["sample_steps"], 1);
    EXPECT_EQ(caps["defaults"]["sample_params"]["sample_method"], "euler");
    const std::string id = submit(c, json::object());
    json job = wait_job(c, id);
    EXPECT_EQ(job["status"], "completed");
    ASSERT_EQ(job["result"]["images"].size(), 1u);
    const std::string params = job["result"]["images"][0]["parameters"];
    EXPECT_EQ(params.rfind("a tree by a lake\n", 0), 0u) << params;
    for (const char* want :
         {"Steps: 1,", "Sampler: Euler,", "CFG scale: 4.5,", "Seed: 5,", "Size: 64x72"}) {
        EXPECT_NE(params.find(want), std::string::npos) << want << " in " << params;
    }
    // --max-results-mb 0: a newer result pushes the older one out (the latest always stays).
    const std::string second = submit(c, {{"prompt", "a bush"}});
    EXPECT_EQ(wait_job(c, second)["status"], "completed");
    auto pushed_out = c.Get(("/sdcpp/v1/jobs/" + id).c_str());
    ASSERT_TRUE(pushed_out);
    EXPECT_EQ(pushed_out->status, 410) << pushed_out->body;
    EXPECT_EQ(c.Get(("/sdcpp/v1/jobs/" + second).c_str())->status, 200);
    // After --result-ttl the result is gone: 410.
    std::this_thread::sleep_for(std::chrono::milliseconds(4000));
    auto gone = c.Get(("/sdcpp/v1/jobs/" + second).c_str());
    ASSERT_TRUE(gone);
    EXPECT_EQ(gone->status, 410) << gone->body;
    auto cancel = c.Post(("/sdcpp/v1/jobs/" + second + "/cancel").c_str(), "", "application/json");
    ASSERT_TRUE(cancel);
    EXPECT_EQ(cancel->status, 410);
}

}  // namespace
}  // namespace ggdiff::server_test
