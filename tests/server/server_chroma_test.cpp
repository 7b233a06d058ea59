// ggdiff-server with the Chroma part files of the chroma_tiny golden suite:
// /sdcpp/v1/capabilities names the family and what Chroma uses for the settings a request
// leaves out (euler, real CFG 7); A1111 txt2img with a negative prompt at cfg_scale 4 gives the
// golden chroma_cfg image; bad requests are a 400 and the server keeps serving.
#include "../golden/chroma_e2e.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

namespace chroma = e2e::chroma;

// The golden case chroma_cfg's settings in A1111's schema.
json cfg_request() {
    return {{"prompt", "a red cube on a wooden table"},
            {"negative_prompt", "blurry, low quality"},
            {"width", 64},
            {"height", 64},
            {"steps", 4},
            {"sampler_name", "Euler"},
            {"cfg_scale", 4},
            {"seed", 7}};
}

TEST(ServerChroma, CapabilitiesNameTheFamilyAndItsDefaults) {
    if (!chroma::prerequisites_ok()) return;
    ServerProcess server(chroma::model_args(), /*wait_ready=*/true, "", /*with_model=*/false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    SCOPED_TRACE(caps.dump(1));
    EXPECT_EQ(caps["model"]["family"], "Chroma");
    EXPECT_EQ(caps["model"]["family_id"], "chroma");
    EXPECT_EQ(caps["model"]["stem"], "chroma_tiny_dit");
    EXPECT_EQ(caps["model"]["vae"], "flux_ae");
    // Requests start from "the model decides" (null) ...
    EXPECT_TRUE(caps["defaults"]["sample_params"]["sample_method"].is_null());
    EXPECT_TRUE(caps["defaults"]["sample_params"]["guidance"]["txt_cfg"].is_null());
    // ... which for Chroma is euler at real CFG 7; its flow shift follows the image size (the
    // FLUX schedule), so there is no fixed one.
    const json& model = caps["model"]["defaults"];
    EXPECT_EQ(model["sample_method"], "euler");
    EXPECT_EQ(model["cfg_scale"], 7.0);
    EXPECT_FALSE(model.contains("flow_shift"));
    EXPECT_EQ(caps["features"]["lora"], true);
    const json& families = caps["families"];
    EXPECT_NE(families.dump().find("\"chroma\""), std::string::npos) << families.dump();
}

// chroma_cfg through A1111 txt2img: the negative prompt is the unconditional pass of real CFG.
// The PNG's parameters name the model and carry the negative prompt and CFG scale.
TEST(ServerChroma, A1111Txt2ImgWithNegativePromptGivesTheGoldenImage) {
    if (!chroma::prerequisites_ok()) return;
    ServerProcess server(chroma::model_args(), true, "", false);
    auto c = server.client();
    const std::string parameters = expect_a1111_golden(c, "/sdapi/v1/txt2img", cfg_request(),
                                                       chroma::golden("chroma_cfg.png"), server);
    auto info = parse_infotext(parameters);
    ASSERT_TRUE(info.ok()) << parameters;
    EXPECT_EQ(info->negative_prompt, "blurry, low quality");
    EXPECT_FLOAT_EQ(info->cfg_scale, 4.0f);
    EXPECT_EQ(info->model, "chroma_tiny_dit") << parameters;
}

// Malformed requests are refused with a 400 before anything runs; the server then still
// answers and serves a (one-step) request.
TEST(ServerChroma, BadRequestsKeepTheServerServing) {
    if (!chroma::prerequisites_ok()) return;
    ServerProcess server(chroma::model_args(), true, "", false);
    auto c = server.client();
    const std::vector<std::pair<const char*, json>> bad = {
        {"width_not_a_number", {{"prompt", "a cube"}, {"width", "wide"}}},
        {"negative_steps", {{"prompt", "a cube"}, {"steps", -3}}},
        {"unknown_sampler", {{"prompt", "a cube"}, {"sampler_name", "No Such Sampler"}}},
    };
    for (const auto& [name, body] : bad) {
        SCOPED_TRACE(name);
        auto r = post_json(c, "/sdapi/v1/txt2img", body);
        ASSERT_TRUE(r) << "no answer: " << httplib::to_string(r.error()) << "\n" << server.log();
        EXPECT_EQ(r->status, 400) << r->body;
        auto health = c.Get("/health");
        ASSERT_TRUE(health) << "the server stopped answering\n" << server.log();
        EXPECT_EQ(health->status, 200);
    }
    auto broken = c.Post("/sdapi/v1/txt2img", "{\"prompt\": ", "application/json");
    ASSERT_TRUE(broken);
    EXPECT_EQ(broken->status, 400) << broken->body;
    json one_step = cfg_request();
    one_step["steps"] = 1;
    one_step["cfg_scale"] = 1;
    auto r = post_json(c, "/sdapi/v1/txt2img", one_step);
    ASSERT_TRUE(r) << httplib::to_string(r.error()) << "\n" << server.log();
    EXPECT_EQ(r->status, 200) << r->body.substr(0, 1000) << "\n" << server.log();
    EXPECT_TRUE(server.alive());
}

}  // namespace
}  // namespace ggdiff::server_test
