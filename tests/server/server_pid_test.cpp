// ggdiff-server with the PiD part files of the pid_tiny golden set (tests/golden):
// /sdcpp/v1/capabilities names the family and what PiD uses for the settings a request leaves
// out (lcm, CFG 7, 512x512, flow shift 1.5; reference images taken); A1111 txt2img with the
// golden case pid_euler's settings and its source image in stable-diffusion.cpp's
// `extra_images` gives the golden image, and the same request without it is refused with the
// reason (PiD decodes a reference image's latent).
#include "../golden/e2e_support.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

// The DiT fixture is a sparse GGUF (its zero blocks are holes on disk).
std::string pid_dit() {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/pid_tiny_dit.gguf";
}

std::vector<std::string> model_args() {
    const std::string suite = e2e::repo_suite_dir("pid_tiny");
    return {"--diffusion-model",
            pid_dit(),
            "--llm",
            e2e::built_fixture("pid_tiny_llm"),
            "--vae",
            e2e::built_fixture("flux_ae"),
            "--vae-format",
            "flux",
            "--type",
            "f32",
            "--llm-tokenizer",
            suite + "/gemma2_tokenizer.json"};
}

bool prerequisites_ok() {
    if (!std::filesystem::is_regular_file(pid_dit())) {
        ADD_FAILURE() << "missing " << pid_dit()
                      << " (run through ctest: its fixture tests make it)";
        return false;
    }
    return built_fixtures_present({"pid_tiny_llm", "flux_ae"});
}

TEST(ServerPid, CapabilitiesNameTheFamilyAndItsDefaults) {
    if (!prerequisites_ok()) return;
    ServerProcess server(model_args(), /*wait_ready=*/true, "", /*with_model=*/false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    SCOPED_TRACE(caps.dump(1));
    EXPECT_EQ(caps["model"]["family"], "PiD");
    EXPECT_EQ(caps["model"]["family_id"], "pid");
    EXPECT_EQ(caps["model"]["stem"], "pid_tiny_dit");
    EXPECT_EQ(caps["model"]["vae"], "flux_ae");
    const json& model = caps["model"]["defaults"];
    EXPECT_EQ(model["sample_method"], "lcm");
    EXPECT_EQ(model["cfg_scale"], 7.0);
    EXPECT_EQ(model["width"], 512);
    EXPECT_EQ(model["height"], 512);
    ASSERT_TRUE(model.contains("flow_shift"));
    EXPECT_NEAR(model["flow_shift"].get<double>(), 1.5, 1e-5);
    EXPECT_EQ(caps["features"]["ref_images"], true);
    EXPECT_NE(caps["families"].dump().find("\"pid\""), std::string::npos);
}

TEST(ServerPid, A1111Txt2ImgWithExtraImagesGivesTheGoldenImage) {
    if (!prerequisites_ok()) return;
    const std::string suite = e2e::repo_suite_dir("pid_tiny");
    ServerProcess server(model_args(), true, "", false);
    auto c = server.client();
    json body = {{"prompt", "a lovely cat"}, {"width", 64},    {"height", 64}, {"steps", 2},
                 {"sampler_name", "Euler"},  {"cfg_scale", 1}, {"seed", 42}};
    // Without its source image PiD has nothing to decode: the request is refused.
    auto refused = post_json(c, "/sdapi/v1/txt2img", body);
    ASSERT_TRUE(refused) << httplib::to_string(refused.error()) << "\n" << server.log();
    EXPECT_GE(refused->status, 400) << refused->body.substr(0, 1000);
    EXPECT_NE(refused->body.find("reference image"), std::string::npos) << refused->body;

    body["extra_images"] = {base64_encode(read_bytes(suite + "/ref_stripes.png"))};
    const std::string parameters =
        expect_a1111_golden(c, "/sdapi/v1/txt2img", body, suite + "/pid_euler.png", server);
    auto info = parse_infotext(parameters);
    ASSERT_TRUE(info.ok()) << parameters;
    EXPECT_EQ(info->model, "pid_tiny_dit") << parameters;
    EXPECT_FLOAT_EQ(info->cfg_scale, 1.0f);
}

}  // namespace
}  // namespace ggdiff::server_test
