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
    const json caps = expect_family_capabilities(server, "Lens", "lens", "lens_tiny_dit");
    SCOPED_TRACE(caps.dump(1));
    const json& model = caps["model"]["defaults"];
    EXPECT_EQ(caps["model"]["vae"], "flux2_vae");
    EXPECT_FALSE(model.contains("flow_shift"));
    EXPECT_FALSE(model.contains("eta"));
    EXPECT_EQ(caps["features"]["ref_images"], false);
}

TEST(ServerLens, A1111Txt2ImgGivesTheGoldenImage) {
    if (!prerequisites_ok()) return;
    const std::string suite = e2e::repo_suite_dir("lens_tiny");
    ServerProcess server(model_args(), true, "", false);
    auto c = server.client();
    const json body = dpmpp2m_neg_request(96, 64);
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
