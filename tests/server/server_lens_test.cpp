// ggdiff-server with the Lens part files of the lens_tiny golden set (tests/golden): its DiT, the
// GPT-OSS LLM (a GGUF), FLUX.2's VAE and the synthetic GPT-OSS tokenizer. /sdcpp/v1/capabilities
// names the family and what Lens uses for the settings a request leaves out (euler, CFG 7,
// 512x512; no fixed flow shift listed: its shift is FLUX's mu; no reference images); A1111
// txt2img with the golden case lens_dpmpp2m_neg's settings (a negative prompt at cfg 5, 96x64)
// gives the golden image, and the PNG's parameters name the DiT file as the model.
#include "../golden/e2e_support.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

std::string llm() {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/lens_tiny_llm.gguf";
}

std::vector<std::string> model_args() {
    return {"--diffusion-model",
            e2e::built_fixture("lens_tiny_dit"),
            "--llm",
            llm(),
            "--vae",
            e2e::built_fixture("flux2_vae"),
            "--llm-tokenizer",
            e2e::repo_suite_dir("lens_tiny") + "/gpt_oss_tokenizer.json"};
}

bool prerequisites_ok() {
    if (!std::filesystem::is_regular_file(llm())) {
        ADD_FAILURE() << "missing " << llm() << " (run through ctest: its fixture tests make it)";
        return false;
    }
    return built_fixtures_present({"lens_tiny_dit", "flux2_vae"});
}

TEST(ServerLens, CapabilitiesNameTheFamilyAndItsDefaults) {
    if (!prerequisites_ok()) return;
    ServerProcess server(model_args(), /*wait_ready=*/true, "", /*with_model=*/false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    SCOPED_TRACE(caps.dump(1));
    EXPECT_EQ(caps["model"]["family"], "Lens");
    EXPECT_EQ(caps["model"]["family_id"], "lens");
    EXPECT_EQ(caps["model"]["stem"], "lens_tiny_dit");
    EXPECT_EQ(caps["model"]["vae"], "flux2_vae");
    const json& model = caps["model"]["defaults"];
    EXPECT_EQ(model["sample_method"], "euler");
    EXPECT_EQ(model["cfg_scale"], 7.0);
    EXPECT_EQ(model["width"], 512);
    EXPECT_EQ(model["height"], 512);
    EXPECT_FALSE(model.contains("flow_shift"));
    EXPECT_FALSE(model.contains("eta"));
    EXPECT_EQ(caps["features"]["ref_images"], false);
    EXPECT_EQ(caps["features"]["lora"], true);
    EXPECT_NE(caps["families"].dump().find("\"lens\""), std::string::npos);
}

TEST(ServerLens, A1111Txt2ImgGivesTheGoldenImage) {
    if (!prerequisites_ok()) return;
    const std::string suite = e2e::repo_suite_dir("lens_tiny");
    ServerProcess server(model_args(), true, "", false);
    auto c = server.client();
    const json body = {{"prompt", "a castle on a hill at sunset"},
                       {"negative_prompt", "blurry, dark"},
                       {"width", 96},
                       {"height", 64},
                       {"steps", 4},
                       {"sampler_name", "DPM++ 2M"},
                       {"cfg_scale", 5},
                       {"seed", 7}};
    Image img;
    const std::string parameters = expect_a1111_golden(
        c, "/sdapi/v1/txt2img", body, suite + "/lens_dpmpp2m_neg.png", server, &img);
    ASSERT_EQ(img.width, 96);
    ASSERT_EQ(img.height, 64);
    auto info = parse_infotext(parameters);
    ASSERT_TRUE(info.ok()) << parameters;
    EXPECT_EQ(info->model, "lens_tiny_dit") << parameters;
    EXPECT_FLOAT_EQ(info->cfg_scale, 5.0f);
}

}  // namespace
}  // namespace ggdiff::server_test
