// ggdiff-server with the Qwen Image Edit part files of the qwen_edit_tiny golden suite (the
// vision tower in the --llm file): /sdcpp/v1/capabilities says it takes reference images; a
// native job with `ref_images` and the settings of the golden case qedit_ref1 gives its image;
// OpenAI /v1/images/edits returns an image of the asked size.
#include "../golden/qwen_edit_e2e.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

namespace qe = e2e::qwen_edit;

double mean_abs(const Image& a, const Image& b) {
    if (a.empty() || a.pixels.size() != b.pixels.size()) return 1e9;
    double s = 0;
    for (size_t i = 0; i < a.pixels.size(); ++i) s += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
    return s / static_cast<double>(a.pixels.size());
}

TEST(ServerQwenEdit, CapabilitiesSayReferenceImages) {
    if (!qe::prerequisites_ok()) return;
    ServerProcess server(qe::model_args(), /*wait_ready=*/true, "", /*with_model=*/false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    SCOPED_TRACE(caps.dump(1));
    EXPECT_EQ(caps["model"]["family_id"], "qwen_image");
    EXPECT_EQ(caps["model"]["stem"], "qwen_edit_tiny_dit");
    EXPECT_EQ(caps["features"]["ref_images"], true);
}

// qedit_ref1: "make the red circle green" on ref_shapes.png, 64x64, 4 steps at CFG 4, seed 42,
// the sampler and schedule left to the model (euler, discrete flow shift 3).
TEST(ServerQwenEdit, NativeJobWithRefImagesGivesTheGoldenImage) {
    if (!qe::prerequisites_ok()) return;
    ServerProcess server(qe::model_args(), true, "", false);
    auto c = server.client();
    const json body = {{"prompt", "make the red circle green"},
                       {"width", 64},
                       {"height", 64},
                       {"seed", 42},
                       {"ref_images", {base64_encode(read_bytes(qe::ref_shapes()))}},
                       {"sample_params", {{"sample_steps", 4}, {"guidance", {{"txt_cfg", 4}}}}}};
    auto r = post_json(c, "/sdcpp/v1/img_gen", body);
    ASSERT_TRUE(r && r->status == 202) << (r ? r->body : httplib::to_string(r.error()));
    const json job = wait_job(c, body_json(r)["id"], 600);
    ASSERT_EQ(job["status"], "completed") << job.dump().substr(0, 1000) << "\n" << server.log();
    ASSERT_EQ(job["result"]["images"].size(), 1u);
    const Image img = decode_b64_image(job["result"]["images"][0]["b64_json"]);
    ASSERT_FALSE(img.empty());
    auto g = read_image(qe::ref1_golden());
    ASSERT_TRUE(g.ok()) << g.status().message();
    const Image golden = g->channels == img.channels ? *g : convert_channels(*g, img.channels);
    const double d = mean_abs(img, golden);
    std::printf("native ref_images job vs qedit_ref1.png: mean_abs_diff %.3f\n", d);
    EXPECT_LE(d, qe::tolerance());
}

// OpenAI /v1/images/edits: the input image is the reference; an image of the asked size comes
// back and the server stays up.
TEST(ServerQwenEdit, OpenAiEditsReturnAnImage) {
    if (!qe::prerequisites_ok()) return;
    ServerProcess server(qe::model_args(), true, "", false);
    auto c = server.client();
    const std::vector<unsigned char> bytes = read_bytes(qe::ref_shapes());
    const std::string png(bytes.begin(), bytes.end());
    httplib::MultipartFormDataItems items = {{"prompt", "make the red circle green", "", ""},
                                             {"size", "64x64", "", ""},
                                             {"seed", "42", "", ""},
                                             {"steps", "2", "", ""},
                                             {"cfg_scale", "4", "", ""},
                                             {"image[]", png, "in.png", "image/png"}};
    auto r = c.Post("/v1/images/edits", items);
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : httplib::to_string(r.error())) << "\n"
                                       << server.log();
    const Image img = decode_b64_image(body_json(r)["data"][0]["b64_json"]);
    ASSERT_FALSE(img.empty());
    EXPECT_EQ(img.width, 64);
    EXPECT_EQ(img.height, 64);
    EXPECT_TRUE(server.alive());
}

}  // namespace
}  // namespace ggdiff::server_test
