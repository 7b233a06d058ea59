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
    const json caps = expect_family_capabilities(server, "MiniT2I", "minit2i", "minit2i_tiny_dit");
    SCOPED_TRACE(caps.dump(1));
    const json& model = caps["model"]["defaults"];
    EXPECT_TRUE(caps["model"]["vae"].is_null());
    EXPECT_FALSE(model.contains("flow_shift"));
    EXPECT_FALSE(model.contains("eta"));
    EXPECT_EQ(caps["features"]["ref_images"], false);
}

TEST(ServerMiniT2I, A1111Txt2ImgGivesTheGoldenImage) {
    if (!prerequisites_ok()) return;
    const std::string suite = e2e::repo_suite_dir("minit2i_tiny");
    ServerProcess server(model_args(), true, "", false);
    auto c = server.client();
    const json body = dpmpp2m_neg_request(64, 64);
    const std::string parameters = expect_a1111_golden(c, "/sdapi/v1/txt2img", body,
                                                       suite + "/minit2i_dpmpp2m_neg.png", server);
    auto info = parse_infotext(parameters);
    ASSERT_TRUE(info.ok()) << parameters;
    EXPECT_EQ(info->model, "minit2i_tiny_dit") << parameters;
    EXPECT_FLOAT_EQ(info->cfg_scale, 5.0f);
}

}  // namespace
}  // namespace ggdiff::server_test
