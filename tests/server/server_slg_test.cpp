// Skip-layer guidance through sd-server's request schema: sample_params.guidance.slg
// (scale, layers, layer_start, layer_end) reaches the engine, so a FLUX job gives the CLI's
// image for the same flags; capabilities say per loaded family whether it is supported, and
// a model that cannot skip blocks fails the job with the engine's message.
#include "../golden/flux_e2e.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

namespace flux = e2e::flux;

json slg_job() {
    return {
        {"prompt", "a photograph of an astronaut riding a horse"},
        {"width", 64},
        {"height", 64},
        {"seed", 42},
        {"sample_params",
         {{"sample_method", "euler"},
          {"sample_steps", 4},
          {"guidance",
           {{"txt_cfg", 1},
            {"slg",
             {{"scale", 2.5}, {"layers", {0, 1}}, {"layer_start", 0.1}, {"layer_end", 0.7}}}}}}}};
}

std::string submit(httplib::Client& c, const json& body) {
    auto r = post_json(c, "/sdcpp/v1/img_gen", body);
    if (!r || r->status != 202) {
        ADD_FAILURE() << "submit failed: " << (r ? r->body : httplib::to_string(r.error()));
        return "";
    }
    return body_json(r)["id"];
}

TEST(ServerSkipLayerGuidance, FluxJobEqualsTheCliImage) {
    if (!flux::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir();
    std::vector<std::string> args = flux::model_args();
    for (const char* a : {"-p",
                          "a photograph of an astronaut riding a horse",
                          "-W",
                          "64",
                          "-H",
                          "64",
                          "--steps",
                          "4",
                          "--sampling-method",
                          "euler",
                          "--cfg-scale",
                          "1",
                          "-s",
                          "42",
                          "--slg-scale",
                          "2.5",
                          "--skip-layers",
                          "0,1",
                          "--skip-layer-start",
                          "0.1",
                          "--skip-layer-end",
                          "0.7"}) {
        args.push_back(a);
    }
    args.insert(args.end(), {"-o", dir + "/cli.png"});
    const e2e::RunResult cli = e2e::run_ggdiff(args, dir);
    ASSERT_TRUE(cli.succeeded()) << cli.describe();

    ServerProcess server(flux::model_args(), true, "", false);
    auto c = server.client();
    json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    EXPECT_EQ(caps["features"]["skip_layer_guidance"], true) << caps["features"].dump();
    const json slg = caps["defaults"]["sample_params"]["guidance"]["slg"];
    EXPECT_EQ(slg["layers"], json::array({7, 8, 9})) << slg.dump();
    EXPECT_EQ(slg["layer_start"], 0.01) << slg.dump();
    EXPECT_EQ(slg["layer_end"], 0.2) << slg.dump();
    EXPECT_EQ(slg["scale"], 0) << slg.dump();

    const std::string id = submit(c, slg_job());
    json job = wait_job(c, id);
    ASSERT_EQ(job["status"], "completed") << job.dump().substr(0, 1000);
    ASSERT_EQ(job["result"]["images"].size(), 1u);
    Image served = decode_b64_image(job["result"]["images"][0]["b64_json"]);
    auto reference = read_image(dir + "/cli.png");
    ASSERT_TRUE(reference.ok());
    EXPECT_EQ(served.pixels, reference->pixels) << "the server's image differs from the CLI's";

    // sd-server's neutral object (scale 0) is no request: the plain image.
    json off = slg_job();
    off["sample_params"]["guidance"]["slg"]["scale"] = 0;
    json plain = wait_job(c, submit(c, off));
    ASSERT_EQ(plain["status"], "completed") << plain.dump().substr(0, 1000);
    Image unguided = decode_b64_image(plain["result"]["images"][0]["b64_json"]);
    EXPECT_NE(unguided.pixels, served.pixels);
}

TEST(ServerSkipLayerGuidance, Sd1RefusesIt) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();
    json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    EXPECT_EQ(caps["features"]["skip_layer_guidance"], false) << caps["features"].dump();
    json body = slg_job();
    body["sample_params"]["sample_steps"] = 1;
    json job = wait_job(c, submit(c, body));
    EXPECT_EQ(job["status"], "failed") << job.dump().substr(0, 1000);
    EXPECT_NE(job.dump().find("not supported for SD1"), std::string::npos) << job.dump();
    // A malformed field is refused when the request arrives, naming it.
    body["sample_params"]["guidance"]["slg"]["layers"] = "7,8";
    auto bad = post_json(c, "/sdcpp/v1/img_gen", body);
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_NE(bad->body.find("sample_params.guidance.slg.layers"), std::string::npos) << bad->body;
    body["sample_params"]["guidance"]["slg"]["layers"] = {7};
    body["sample_params"]["guidance"]["slg"]["layer_end"] = 3;
    bad = post_json(c, "/sdcpp/v1/img_gen", body);
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_NE(bad->body.find("layer_end"), std::string::npos) << bad->body;
}

}  // namespace
}  // namespace ggdiff::server_test
