// ggdiff-server with the SeFi-Image part files of the sefi_tiny golden set (tests/golden):
// /sdcpp/v1/capabilities names the family and what SeFi-Image uses for the settings a request
// leaves out (euler, CFG 7, 512x512; no reference images: they would need semantic channels no
// encoder gives); A1111 txt2img with the golden case sefi_cfg_neg's settings (a negative prompt
// at cfg 4) gives the golden image, and the PNG's parameters name the DiT file as the model.
#include "../golden/e2e_support.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

std::vector<std::string> model_args() {
    return {"--diffusion-model",
            e2e::built_fixture("sefi_tiny_dit"),
            "--llm",
            e2e::built_fixture("flux2_tiny_llm"),
            "--vae",
            e2e::built_fixture("flux2_vae"),
            "--llm-tokenizer",
            e2e::shared_dir() + "/data/qwen2_synthetic"};
}

bool prerequisites_ok() {
    return built_fixtures_present({"sefi_tiny_dit", "flux2_tiny_llm", "flux2_vae"});
}

TEST(ServerSefi, CapabilitiesNameTheFamilyAndItsDefaults) {
    if (!prerequisites_ok()) return;
    ServerProcess server(model_args(), /*wait_ready=*/true, "", /*with_model=*/false);
    const json caps =
        expect_family_capabilities(server, "SeFi-Image", "sefi_image", "sefi_tiny_dit");
    SCOPED_TRACE(caps.dump(1));
    EXPECT_EQ(caps["features"]["ref_images"], false);
}

TEST(ServerSefi, A1111Txt2ImgGivesTheGoldenImage) {
    if (!prerequisites_ok()) return;
    const std::string suite = e2e::repo_suite_dir("sefi_tiny");
    ServerProcess server(model_args(), true, "", false);
    auto c = server.client();
    const json body = {{"prompt", "a castle on a hill at sunset"},
                       {"negative_prompt", "blurry, dark"},
                       {"width", 64},
                       {"height", 64},
                       {"steps", 3},
                       {"cfg_scale", 4},
                       {"seed", 7}};
    const std::string parameters =
        expect_a1111_golden(c, "/sdapi/v1/txt2img", body, suite + "/sefi_cfg_neg.png", server);
    auto info = parse_infotext(parameters);
    ASSERT_TRUE(info.ok()) << parameters;
    EXPECT_EQ(info->model, "sefi_tiny_dit") << parameters;
    EXPECT_FLOAT_EQ(info->cfg_scale, 4.0f);
}

}  // namespace
}  // namespace ggdiff::server_test
