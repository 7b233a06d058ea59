// Live previews through HTTP: A1111's /sdapi/v1/progress shows the running job's latest
// preview as current_image (proj by default, every show_progress_every_n_steps steps; none with
// skip_current_image or live_previews_enable off), and the native job status and event stream
// carry the preview of a request that asks for one.
#include <future>

#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

// Polls /sdapi/v1/progress until it shows a current_image (or the deadline).
json progress_with_image(httplib::Client& c, const std::string& query = "") {
    json p;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
        p = body_json(c.Get(("/sdapi/v1/progress" + query).c_str()));
        if (p.is_null() || p["current_image"].is_string()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return p;
}

TEST(ServerPreview, A1111ProgressShowsTheCurrentImage) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();
    // Nothing runs: no image.
    EXPECT_TRUE(body_json(c.Get("/sdapi/v1/progress"))["current_image"].is_null());
    json opts = body_json(c.Get("/sdapi/v1/options"));
    EXPECT_EQ(opts["live_previews_enable"], true);
    EXPECT_EQ(opts["show_progress_every_n_steps"], 10);
    auto set = post_json(c, "/sdapi/v1/options", {{"show_progress_every_n_steps", 1}});
    ASSERT_TRUE(set);
    EXPECT_EQ(set->status, 200) << set->body;
    auto bad = post_json(c, "/sdapi/v1/options", {{"show_progress_every_n_steps", 99}});
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);

    auto pending = std::async(std::launch::async, [&server] {
        auto c2 = server.client();
        return post_json(
            c2, "/sdapi/v1/txt2img",
            {{"prompt", "x"}, {"width", 64}, {"height", 64}, {"steps", 150}, {"seed", 1}});
    });
    json p = progress_with_image(c);
    ASSERT_TRUE(p["current_image"].is_string()) << p.dump().substr(0, 500);
    // proj (the server has no --preview): the latent's size, 64 / 8.
    const Image img = decode_b64_image(p["current_image"]);
    EXPECT_EQ(img.width, 8);
    EXPECT_EQ(img.height, 8);
    EXPECT_GE(p["state"]["sampling_step"].get<int>(), 1);
    // A client that polls often skips it.
    json skipped = body_json(c.Get("/sdapi/v1/progress?skip_current_image=true"));
    EXPECT_TRUE(skipped["current_image"].is_null());
    EXPECT_EQ(skipped["state"]["job"], "txt2img");
    c.Post("/sdapi/v1/interrupt", "", "application/json");
    auto r = pending.get();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    // Done: no current image.
    EXPECT_TRUE(body_json(c.Get("/sdapi/v1/progress"))["current_image"].is_null());

    // live_previews_enable off for one request: no preview while it samples.
    auto quiet = std::async(std::launch::async, [&server] {
        auto c2 = server.client();
        return post_json(c2, "/sdapi/v1/txt2img",
                         {{"prompt", "x"},
                          {"width", 64},
                          {"height", 64},
                          {"steps", 6},
                          {"seed", 1},
                          {"override_settings", {{"live_previews_enable", false}}}});
    });
    bool any_image = false;
    while (quiet.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
        json q = body_json(c.Get("/sdapi/v1/progress"));
        any_image = any_image || q["current_image"].is_string();
    }
    EXPECT_EQ(quiet.get()->status, 200);
    EXPECT_FALSE(any_image);
}

TEST(ServerPreview, NativeJobStatusAndEventsCarryThePreview) {
    if (!e2e::prerequisites_ok()) return;
    // The server's --preview vae is what "preview": true asks for.
    ServerProcess server({"--preview", "vae"});
    auto c = server.client();
    EXPECT_EQ(body_json(c.Get("/sdcpp/v1/capabilities"))["features"]["preview"], true);
    json body = small_job(150, 7);
    body["preview"] = true;
    body["preview_interval"] = 2;
    auto sub = post_json(c, "/sdcpp/v1/img_gen", body);
    ASSERT_TRUE(sub);
    ASSERT_EQ(sub->status, 202) << sub->body;
    const std::string id = body_json(sub)["id"];

    // The status shows the latest preview: a VAE decode at the image's size, at an even step.
    json j;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
        j = body_json(c.Get(("/sdcpp/v1/jobs/" + id).c_str()));
        if (j.is_null() || j["preview"].is_object()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(j["preview"].is_object()) << j.dump().substr(0, 500);
    EXPECT_EQ(j["preview"]["step"].get<int>() % 2, 0);
    EXPECT_EQ(j["preview"]["total"], 150);
    EXPECT_EQ(j["preview"]["output_format"], "png");
    EXPECT_EQ(j["preview"]["seed"], 7);
    const Image img = decode_b64_image(j["preview"]["b64_json"]);
    EXPECT_EQ(img.width, 64);
    EXPECT_EQ(img.height, 64);

    // The event stream sends each new preview as a "preview" event.
    std::string events;
    c.Get(("/sdcpp/v1/jobs/" + id + "/events").c_str(), [&](const char* data, size_t n) {
        events.append(data, n);
        return events.find("event: preview\ndata: ") == std::string::npos ||
               events.find("\n\n", events.find("event: preview\ndata: ")) == std::string::npos;
    });
    const size_t at = events.find("event: preview\ndata: ");
    ASSERT_NE(at, std::string::npos) << events.substr(0, 2000);
    const size_t start = at + 21;
    json ev = json::parse(events.substr(start, events.find("\n\n", start) - start), nullptr, false);
    ASSERT_TRUE(ev.is_object()) << events.substr(at, 300);
    EXPECT_EQ(ev["id"], id);
    EXPECT_EQ(ev["width"], 64);
    EXPECT_TRUE(ev["b64_json"].is_string());
    c.Post(("/sdcpp/v1/jobs/" + id + "/cancel").c_str(), "", "application/json");
    json done = wait_job(c, id, 60);
    EXPECT_EQ(done["status"], "cancelled");
    EXPECT_TRUE(done["preview"].is_null());  // dropped when the job ends

    // A job that asks for none has none; a bad method is named.
    json plain = small_job(2, 8);
    plain["preview"] = false;
    auto p2 = post_json(c, "/sdcpp/v1/img_gen", plain);
    ASSERT_TRUE(p2);
    json finished = wait_job(c, body_json(p2)["id"]);
    EXPECT_EQ(finished["status"], "completed");
    EXPECT_TRUE(finished["preview"].is_null());
    json wrong = small_job(2, 9);
    wrong["preview"] = "png";
    auto p3 = post_json(c, "/sdcpp/v1/img_gen", wrong);
    ASSERT_TRUE(p3);
    EXPECT_EQ(p3->status, 400);
    EXPECT_NE(p3->body.find("preview"), std::string::npos) << p3->body;
}

}  // namespace
}  // namespace ggdiff::server_test
