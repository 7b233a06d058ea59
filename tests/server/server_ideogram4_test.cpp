// ggdiff-server with the Ideogram 4 part files of the ideogram4_tiny golden set (tests/golden):
// /sdcpp/v1/capabilities names the family and what Ideogram 4 uses for the settings a request
// leaves out (euler, the logit_normal schedule, CFG 7, 512x512; no reference images); A1111
// txt2img with the golden case ideogram4_euler_a's settings gives the golden image, and the PNG's
// parameters name the DiT file as the model.
#include "../golden/e2e_support.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

std::string gguf(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".gguf";
}

std::vector<std::string> model_args() {
    return {"--diffusion-model",
            gguf("ideogram4_tiny_dit"),
            "--llm",
            gguf("ideogram4_tiny_llm"),
            "--vae",
            e2e::built_fixture("flux2_vae"),
            "--llm-tokenizer",
            e2e::shared_dir() + "/data/qwen2_synthetic"};
}

bool prerequisites_ok() {
    for (const std::string& f : {gguf("ideogram4_tiny_dit"), gguf("ideogram4_tiny_llm")}) {
        if (!std::filesystem::is_regular_file(f)) {
            ADD_FAILURE() << "missing " << f << " (run through ctest: its fixture tests make it)";
            return false;
        }
    }
    return built_fixtures_present({"flux2_vae"});
}

TEST(ServerIdeogram4, CapabilitiesNameTheFamilyAndItsDefaults) {
    if (!prerequisites_ok()) return;
    ServerProcess server(model_args(), /*wait_ready=*/true, "", /*with_model=*/false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    SCOPED_TRACE(caps.dump(1));
    EXPECT_EQ(caps["model"]["family"], "Ideogram 4");
    EXPECT_EQ(caps["model"]["family_id"], "ideogram4");
    EXPECT_EQ(caps["model"]["stem"], "ideogram4_tiny_dit");
    EXPECT_EQ(caps["model"]["vae"], "flux2_vae");
    const json& model = caps["model"]["defaults"];
    EXPECT_EQ(model["sample_method"], "euler");
    EXPECT_EQ(model["cfg_scale"], 7.0);
    EXPECT_EQ(model["width"], 512);
    EXPECT_EQ(model["height"], 512);
    EXPECT_EQ(caps["features"]["ref_images"], false);
    EXPECT_EQ(caps["features"]["lora"], true);
    EXPECT_NE(caps["families"].dump().find("\"ideogram4\""), std::string::npos);
    EXPECT_NE(caps.dump().find("\"logit_normal\""), std::string::npos);
}

TEST(ServerIdeogram4, A1111Txt2ImgGivesTheGoldenImage) {
    if (!prerequisites_ok()) return;
    const std::string suite = e2e::repo_suite_dir("ideogram4_tiny");
    ServerProcess server(model_args(), true, "", false);
    auto c = server.client();
    const json body = {{"prompt", "a lovely cat sitting on a red sofa"},
                       {"width", 64},
                       {"height", 64},
                       {"steps", 3},
                       {"sampler_name", "Euler a"},
                       {"cfg_scale", 1},
                       {"seed", 3}};
    auto r = post_json(c, "/sdapi/v1/txt2img", body);
    ASSERT_TRUE(r) << httplib::to_string(r.error()) << "\n" << server.log();
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 1000) << "\n" << server.log();
    const json j = body_json(r);
    ASSERT_EQ(j["images"].size(), 1u) << r->body.substr(0, 500);
    std::string parameters;
    const Image img = decode_b64_image(j["images"][0], &parameters);
    ASSERT_FALSE(img.empty());
    const std::string out = e2e::fresh_dir() + "/txt2img.png";
    ASSERT_TRUE(write_image(out, img).ok());
    e2e::expect_images_near(out, suite + "/ideogram4_euler_a.png", e2e::suite_tolerance(suite),
                            "A1111 txt2img vs ideogram4_euler_a");
    auto info = parse_infotext(parameters);
    ASSERT_TRUE(info.ok()) << parameters;
    EXPECT_EQ(info->model, "ideogram4_tiny_dit") << parameters;
    EXPECT_FLOAT_EQ(info->cfg_scale, 1.0f);
}

}  // namespace
}  // namespace ggdiff::server_test
