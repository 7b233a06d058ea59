// ggdiff-server with the Krea2 part files of the krea2_tiny golden set (tests/golden):
// /sdcpp/v1/capabilities names the family and what Krea2 uses for the settings a request leaves
// out (euler, CFG 7, 512x512; no fixed flow shift listed: its shift is FLUX's mu; no reference
// images); A1111 txt2img with the golden case krea2_dpmpp2m_neg's settings (a negative prompt at
// cfg 5) gives the golden image, and the PNG's parameters name the DiT file as the model.
#include "../golden/e2e_support.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

std::vector<std::string> model_args() {
    return {"--diffusion-model",
            e2e::built_fixture("krea2_tiny_dit"),
            "--llm",
            e2e::built_fixture("krea2_tiny_llm"),
            "--vae",
            e2e::built_fixture("qwen_vae"),
            "--llm-tokenizer",
            e2e::shared_dir() + "/data/qwen2_synthetic"};
}

bool prerequisites_ok() {
    return built_fixtures_present({"krea2_tiny_dit", "krea2_tiny_llm", "qwen_vae"});
}

TEST(ServerKrea2, CapabilitiesNameTheFamilyAndItsDefaults) {
    if (!prerequisites_ok()) return;
    ServerProcess server(model_args(), /*wait_ready=*/true, "", /*with_model=*/false);
    const json caps = expect_family_capabilities(server, "Krea2", "krea2", "krea2_tiny_dit");
    SCOPED_TRACE(caps.dump(1));
    const json& model = caps["model"]["defaults"];
    EXPECT_EQ(caps["model"]["vae"], "qwen_vae");
    EXPECT_FALSE(model.contains("flow_shift"));
    EXPECT_FALSE(model.contains("eta"));
    EXPECT_EQ(caps["features"]["ref_images"], false);
}

TEST(ServerKrea2, A1111Txt2ImgGivesTheGoldenImage) {
    if (!prerequisites_ok()) return;
    const std::string suite = e2e::repo_suite_dir("krea2_tiny");
    ServerProcess server(model_args(), true, "", false);
    auto c = server.client();
    const json body = dpmpp2m_neg_request(64, 64);
    const std::string parameters =
        expect_a1111_golden(c, "/sdapi/v1/txt2img", body, suite + "/krea2_dpmpp2m_neg.png", server);
    auto info = parse_infotext(parameters);
    ASSERT_TRUE(info.ok()) << parameters;
    EXPECT_EQ(info->model, "krea2_tiny_dit") << parameters;
    EXPECT_FLOAT_EQ(info->cfg_scale, 5.0f);
}

}  // namespace
}  // namespace ggdiff::server_test
