// PuLID-FLUX through the server: the weights and the identity come from its command line
// (--pulid-weights, --pulid-id-embedding; requests name no files), capabilities say so, and a
// request sets the identity's strength: sd-server's img_gen field pulid_id_weight, the A1111
// override setting pulid_id_weight, or the "ggdiff" options object. The images are the pulid_tiny
// golden ones; a server without PuLID refuses the field, naming it.
#include "../golden/pulid_e2e.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

namespace pulid = e2e::pulid;
namespace flux = e2e::flux;

std::vector<std::string> pulid_server_args() {
    std::vector<std::string> a = pulid::model_args();
    a.insert(a.end(), {"--pulid-id-embedding", pulid::identity()});
    return a;
}

// pulid_euler's settings in sd-server's schema.
json pulid_job() {
    return {{"prompt", "a photograph of an astronaut riding a horse"},
            {"width", 64},
            {"height", 64},
            {"seed", 42},
            {"sample_params",
             {{"sample_method", "euler"}, {"sample_steps", 4}, {"guidance", {{"txt_cfg", 1}}}}}};
}

// The same for /sdapi/v1/txt2img.
json pulid_txt2img() {
    return {{"prompt", "a photograph of an astronaut riding a horse"},
            {"width", 64},
            {"height", 64},
            {"seed", 42},
            {"steps", 4},
            {"cfg_scale", 1},
            {"sampler_name", "euler"}};
}

Image job_image(httplib::Client& c, const json& body, const ServerProcess& server) {
    auto r = post_json(c, "/sdcpp/v1/img_gen", body);
    if (!r || r->status != 202) {
        ADD_FAILURE() << "submit failed: " << (r ? r->body : httplib::to_string(r.error())) << "\n"
                      << server.log();
        return {};
    }
    const json job = wait_job(c, body_json(r)["id"]);
    if (job["status"] != "completed") {
        ADD_FAILURE() << job.dump().substr(0, 1000) << "\n" << server.log();
        return {};
    }
    return decode_b64_image(job["result"]["images"][0]["b64_json"]);
}

// `img` within the suite's tolerance of golden `file`.
void expect_golden(const Image& img, const std::string& file) {
    ASSERT_FALSE(img.empty());
    const std::string path = e2e::fresh_dir() + "/served.png";
    ASSERT_TRUE(write_image(path, img).ok());
    e2e::expect_images_near(path, pulid::golden(file), pulid::tolerance(), file.c_str());
}

TEST(ServerPulid, RequestsSetTheIdentityStrength) {
    if (!pulid::prerequisites_ok()) return;
    ServerProcess server(pulid_server_args(), true, "", false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    EXPECT_EQ(caps["features"]["pulid"], true) << caps["features"].dump();
    EXPECT_EQ(caps["model"]["family_id"], "flux");

    expect_golden(job_image(c, pulid_job(), server), "pulid_euler.png");
    json weaker = pulid_job();
    weaker["pulid_id_weight"] = 0.6;
    expect_golden(job_image(c, weaker, server), "pulid_weight06.png");

    json a1111 = pulid_txt2img();
    a1111["override_settings"] = {{"pulid_id_weight", 0.6}};
    auto r = post_json(c, "/sdapi/v1/txt2img", a1111);
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body.substr(0, 1000) : "no response");
    expect_golden(decode_b64_image(body_json(r)["images"][0]), "pulid_weight06.png");

    // The engine options object takes the strength too, but no file.
    json option = pulid_job();
    option["ggdiff"] = {{"pulid-id-weight", 0.6}};
    expect_golden(job_image(c, option, server), "pulid_weight06.png");
    json file = pulid_job();
    file["ggdiff"] = {{"pulid-id-embedding", pulid::identity(true)}};
    auto bad = post_json(c, "/sdcpp/v1/img_gen", file);
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_NE(bad->body.find("file paths are not taken from requests"), std::string::npos)
        << bad->body;
}

TEST(ServerPulid, WithoutPulidTheFieldIsRefused) {
    if (!pulid::prerequisites_ok()) return;
    ServerProcess server(flux::model_args(), true, "", false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    EXPECT_EQ(caps["features"]["pulid"], false) << caps["features"].dump();
    json job = pulid_job();
    job["pulid_id_weight"] = 0.6;
    auto bad = post_json(c, "/sdcpp/v1/img_gen", job);
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_NE(bad->body.find("pulid_id_weight"), std::string::npos) << bad->body;
    EXPECT_NE(bad->body.find("--pulid-weights"), std::string::npos) << bad->body;
    json a1111 = pulid_txt2img();
    a1111["override_settings"] = {{"pulid_id_weight", 0.6}};
    bad = post_json(c, "/sdapi/v1/txt2img", a1111);
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_NE(bad->body.find("override_settings.pulid_id_weight"), std::string::npos) << bad->body;
}

}  // namespace
}  // namespace ggdiff::server_test
