// ggdiff-server with the MiniT2I part files of the minit2i_tiny golden set (tests/golden):
// /sdcpp/v1/capabilities names the family and what MiniT2I uses for the settings a request
// leaves out (euler, CFG 7, 512x512; no flow shift: its schedule has none; no reference
// images); A1111 txt2img with the golden case minit2i_dpmpp2m_neg's settings (a negative
// prompt, which MiniT2I does not use, at cfg 5) gives the golden image, and the PNG's
// parameters name the DiT file as the model.
#include "../golden/e2e_support.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

std::vector<std::string> model_args() {
    return {"--diffusion-model", e2e::built_fixture("minit2i_tiny_dit"),
            "--t5xxl",           e2e::built_fixture("flux_tiny_t5"),
            "--t5xxl-tokenizer", e2e::shared_dir() + "/data/t5_synthetic"};
}

bool prerequisites_ok() {
    return built_fixtures_present({"minit2i_tiny_dit", "flux_tiny_t5"});
}

TEST(ServerMiniT2I, CapabilitiesNameTheFamilyAndItsDefaults) {
    if (!prerequisites_ok()) return;
    ServerProcess server(model_args(), /*wait_ready=*/true, "", /*with_model=*/false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    SCOPED_TRACE(caps.dump(1));
    EXPECT_EQ(caps["model"]["family"], "MiniT2I");
    EXPECT_EQ(caps["model"]["family_id"], "minit2i");
    EXPECT_EQ(caps["model"]["stem"], "minit2i_tiny_dit");
    EXPECT_TRUE(caps["model"]["vae"].is_null());
    const json& model = caps["model"]["defaults"];
    EXPECT_EQ(model["sample_method"], "euler");
    EXPECT_EQ(model["cfg_scale"], 7.0);
    EXPECT_EQ(model["width"], 512);
    EXPECT_EQ(model["height"], 512);
    EXPECT_FALSE(model.contains("flow_shift"));
    EXPECT_FALSE(model.contains("eta"));
    EXPECT_EQ(caps["features"]["ref_images"], false);
    EXPECT_EQ(caps["features"]["lora"], true);
    EXPECT_NE(caps["families"].dump().find("\"minit2i\""), std::string::npos);
}

TEST(ServerMiniT2I, A1111Txt2ImgGivesTheGoldenImage) {
    if (!prerequisites_ok()) return;
    const std::string suite = e2e::repo_suite_dir("minit2i_tiny");
    auto golden = read_image(suite + "/minit2i_dpmpp2m_neg.png");
    ASSERT_TRUE(golden.ok()) << golden.status().message();
    ServerProcess server(model_args(), true, "", false);
    auto c = server.client();
    const json body = {{"prompt", "a castle on a hill at sunset"},
                       {"negative_prompt", "blurry, dark"},
                       {"width", 64},
                       {"height", 64},
                       {"steps", 4},
                       {"sampler_name", "DPM++ 2M"},
                       {"cfg_scale", 5},
                       {"seed", 7}};
    auto r = post_json(c, "/sdapi/v1/txt2img", body);
    ASSERT_TRUE(r) << httplib::to_string(r.error()) << "\n" << server.log();
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 1000) << "\n" << server.log();
    const json j = body_json(r);
    ASSERT_EQ(j["images"].size(), 1u) << r->body.substr(0, 500);
    std::string parameters;
    const Image img = decode_b64_image(j["images"][0], &parameters);
    ASSERT_FALSE(img.empty());
    const Image g =
        golden->channels == img.channels ? *golden : convert_channels(*golden, img.channels);
    ASSERT_EQ(g.pixels.size(), img.pixels.size());
    double sum = 0;
    for (size_t i = 0; i < img.pixels.size(); ++i) {
        sum += std::abs(int(img.pixels[i]) - int(g.pixels[i]));
    }
    const double d = sum / static_cast<double>(img.pixels.size());
    std::printf("A1111 txt2img vs minit2i_dpmpp2m_neg: mean_abs_diff %.3f\n", d);
    EXPECT_LE(d, e2e::suite_tolerance(suite));
    auto info = parse_infotext(parameters);
    ASSERT_TRUE(info.ok()) << parameters;
    EXPECT_EQ(info->model, "minit2i_tiny_dit") << parameters;
    EXPECT_FLOAT_EQ(info->cfg_scale, 5.0f);
}

}  // namespace
}  // namespace ggdiff::server_test
