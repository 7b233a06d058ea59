// ggdiff-server with the Boogu Image part files of the boogu_tiny golden set (tests/golden):
// /sdcpp/v1/capabilities names the family and what Boogu Image uses for the settings a request
// leaves out (euler, CFG 7, 512x512, flow shift 3.16; reference images taken); A1111 txt2img with
// the golden case boogu_dpmpp2m_neg's settings (a negative prompt at cfg 5, 96x64) gives the
// golden image, and the PNG's parameters name the DiT file as the model; a native job with
// `ref_images` (the golden case boogu_edit) gives the golden edit image and differs from the same
// job without them.
#include "../golden/e2e_support.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

std::vector<std::string> model_args() {
    return {"--diffusion-model",
            e2e::built_fixture("boogu_tiny_dit"),
            "--llm",
            e2e::built_fixture("zimage_tiny_llm"),
            "--vae",
            e2e::built_fixture("flux_ae"),
            "--llm-tokenizer",
            e2e::shared_dir() + "/data/qwen2_synthetic"};
}

bool prerequisites_ok() {
    return built_fixtures_present({"boogu_tiny_dit", "zimage_tiny_llm", "flux_ae"});
}

TEST(ServerBoogu, CapabilitiesNameTheFamilyAndItsDefaults) {
    if (!prerequisites_ok()) return;
    ServerProcess server(model_args(), /*wait_ready=*/true, "", /*with_model=*/false);
    const json caps =
        expect_family_capabilities(server, "Boogu Image", "boogu_image", "boogu_tiny_dit");
    SCOPED_TRACE(caps.dump(1));
    const json& model = caps["model"]["defaults"];
    ASSERT_TRUE(model.contains("flow_shift"));
    EXPECT_NEAR(model["flow_shift"].get<double>(), 3.16, 1e-5);
    EXPECT_EQ(caps["features"]["ref_images"], true);
}

TEST(ServerBoogu, A1111Txt2ImgGivesTheGoldenImage) {
    if (!prerequisites_ok()) return;
    const std::string suite = e2e::repo_suite_dir("boogu_tiny");
    ServerProcess server(model_args(), true, "", false);
    auto c = server.client();
    const json body = dpmpp2m_neg_request(96, 64);
    const std::string parameters =
        expect_a1111_golden(c, "/sdapi/v1/txt2img", body, suite + "/boogu_dpmpp2m_neg.png", server);
    auto info = parse_infotext(parameters);
    ASSERT_TRUE(info.ok()) << parameters;
    EXPECT_EQ(info->model, "boogu_tiny_dit") << parameters;
    EXPECT_FLOAT_EQ(info->cfg_scale, 5.0f);
}

// The golden case boogu_edit as a native job: "make the stripes red" with ref_stripes.png as
// the reference image (seed 9, 3 steps, cfg 4, 64x64); without ref_images another image.
TEST(ServerBoogu, NativeJobWithReferenceImagesGivesTheGoldenEdit) {
    if (!prerequisites_ok()) return;
    const std::string suite = e2e::repo_suite_dir("boogu_tiny");
    ServerProcess server(model_args(), true, "", false);
    auto c = server.client();
    auto image_of = [&](bool with_reference) -> Image {
        json body = {{"prompt", "make the stripes red"},
                     {"width", 64},
                     {"height", 64},
                     {"seed", 9},
                     {"sample_params", {{"sample_steps", 3}, {"guidance", {{"txt_cfg", 4}}}}}};
        if (with_reference) {
            body["ref_images"] = {base64_encode(read_bytes(suite + "/ref_stripes.png"))};
        }
        auto r = post_json(c, "/sdcpp/v1/img_gen", body);
        if (!r || r->status != 202) {
            ADD_FAILURE() << "submit failed: " << (r ? r->body : httplib::to_string(r.error()));
            return {};
        }
        const json job = wait_job(c, body_json(r)["id"]);
        if (job["status"] != "completed" || job["result"]["images"].size() != 1u) {
            ADD_FAILURE() << "the job did not complete: " << job.dump().substr(0, 1000);
            return {};
        }
        return decode_b64_image(job["result"]["images"][0]["b64_json"]);
    };
    const std::string dir = e2e::fresh_dir();
    const Image edited = image_of(true);
    ASSERT_FALSE(edited.empty()) << server.log();
    ASSERT_TRUE(write_image(dir + "/edit.png", edited).ok());
    e2e::expect_images_near(dir + "/edit.png", suite + "/boogu_edit.png",
                            e2e::suite_tolerance(suite),
                            "native job with ref_images vs boogu_edit");
    const Image plain = image_of(false);
    ASSERT_FALSE(plain.empty());
    ASSERT_TRUE(write_image(dir + "/plain.png", plain).ok());
    EXPECT_GT(e2e::compare_images(dir + "/edit.png", dir + "/plain.png").mean_abs, 3.0)
        << "the reference image had no effect";
}

}  // namespace
}  // namespace ggdiff::server_test
