// ggdiff-server with the FLUX.2 klein part files of the flux2_tiny golden suite:
// /sdcpp/v1/capabilities names the family, what FLUX.2 uses for the settings a request leaves
// out (euler on the flux2 schedule, CFG 7, 1024x1024) and that it takes reference images; a
// native job with `ref_images` (base64 PNG) gives the golden edit image and differs from the
// same job without them; a bad reference image is a 400 naming the field, and the server keeps
// serving; OpenAI /v1/images/edits takes its input images as references.
#include "../golden/flux2_e2e.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

namespace flux2 = e2e::flux2;

std::string submit(httplib::Client& c, const json& body) {
    auto r = post_json(c, "/sdcpp/v1/img_gen", body);
    if (!r || r->status != 202) {
        ADD_FAILURE() << "submit failed: " << (r ? r->body : httplib::to_string(r.error()));
        return "";
    }
    return body_json(r)["id"];
}

// The job's only image (empty, and a failure, unless it completed with one image);
// `parameters` gets its A1111 infotext.
Image job_image(httplib::Client& c, const json& body, std::string* parameters = nullptr) {
    const std::string id = submit(c, body);
    if (id.empty()) return {};
    const json job = wait_job(c, id);
    if (job["status"] != "completed" || job["result"]["images"].size() != 1u) {
        ADD_FAILURE() << "the job did not complete with one image: " << job.dump().substr(0, 1000);
        return {};
    }
    if (parameters) *parameters = job["result"]["images"][0].value("parameters", "");
    return decode_b64_image(job["result"]["images"][0]["b64_json"]);
}

double mean_abs(const Image& a, const Image& b) {
    if (a.empty() || a.pixels.size() != b.pixels.size()) return 1e9;
    double s = 0;
    for (size_t i = 0; i < a.pixels.size(); ++i) s += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
    return s / static_cast<double>(a.pixels.size());
}

// The golden image `file` with the channels of `like` (a PNG may be read as RGB or RGBA).
Image golden_like(const std::string& file, const Image& like) {
    auto g = read_image(flux2::golden(file));
    if (!g.ok()) {
        ADD_FAILURE() << g.status().message();
        return {};
    }
    return like.empty() || g->channels == like.channels ? *g : convert_channels(*g, like.channels);
}

// A golden case's request in sd-server's native schema (64x64, CFG 1 as klein is distilled);
// the sampler and scheduler are left to the model.
json job(const std::string& prompt, int64_t seed) {
    return {{"prompt", prompt},
            {"width", 64},
            {"height", 64},
            {"seed", seed},
            {"sample_params", {{"sample_steps", 4}, {"guidance", {{"txt_cfg", 1}}}}}};
}

// flux2_edit: "turn the red disc blue" on flux2_ref.png, seed 3.
json edit_job(bool with_reference) {
    json body = job("turn the red disc blue", 3);
    if (with_reference) {
        body["ref_images"] = {base64_encode(read_bytes(flux2::ref_image()))};
    }
    return body;
}

TEST(ServerFlux2, CapabilitiesNameTheFamilyAndItsDefaults) {
    if (!flux2::prerequisites_ok()) return;
    ServerProcess server(flux2::model_args(), /*wait_ready=*/true, "", /*with_model=*/false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    SCOPED_TRACE(caps.dump(1));
    EXPECT_EQ(caps["model"]["family"], "FLUX.2 klein");  // the family with its variant
    EXPECT_EQ(caps["model"]["family_id"], "flux2");
    EXPECT_EQ(caps["model"]["stem"], "flux2_tiny_dit");
    EXPECT_EQ(caps["model"]["vae"], "flux2_vae");
    // Requests start from "the model decides" (null) ...
    EXPECT_TRUE(caps["defaults"]["sample_params"]["sample_method"].is_null());
    EXPECT_TRUE(caps["defaults"]["sample_params"]["scheduler"].is_null());
    EXPECT_TRUE(caps["defaults"]["sample_params"]["guidance"]["txt_cfg"].is_null());
    // ... which for FLUX.2 is euler at CFG 7 (klein users pass 1) and 1024x1024; its flow
    // shift follows the image size, so there is no fixed one.
    const json& model = caps["model"]["defaults"];
    EXPECT_EQ(model["sample_method"], "euler");
    EXPECT_EQ(model["cfg_scale"], 7.0);
    EXPECT_EQ(model["width"], 1024);
    EXPECT_EQ(model["height"], 1024);
    EXPECT_FALSE(model.contains("flow_shift"));
    EXPECT_EQ(caps["features"]["ref_images"], true);
    EXPECT_EQ(caps["features"]["lora"], true);
    const json& schedulers = caps["schedulers"];
    EXPECT_NE(std::find(schedulers.begin(), schedulers.end(), "flux2"), schedulers.end());
}

// A request that names neither sampler nor scheduler gets FLUX.2's own (euler on the flux2
// schedule): the golden image flux2_default, recorded with those defaults.
TEST(ServerFlux2, DefaultsGiveTheGoldenImage) {
    if (!flux2::prerequisites_ok()) return;
    ServerProcess server(flux2::model_args(), true, "", false);
    auto c = server.client();
    std::string params;
    const Image img = job_image(c, job("a photograph of an astronaut riding a horse", 42), &params);
    ASSERT_FALSE(img.empty());
    EXPECT_EQ(img.width, 64);
    EXPECT_EQ(img.height, 64);
    EXPECT_LE(mean_abs(img, golden_like("flux2_default.png", img)), flux2::tolerance());
    for (const char* want :
         {"Sampler: Euler,", "Schedule type: Flux2", "CFG scale: 1,", "Seed: 42,"})
        EXPECT_NE(params.find(want), std::string::npos) << want << " in " << params;
}

// ref_images (base64 PNG) reach the engine as -r does: the golden edit image; without them the
// same request gives another picture (about 22 of 255 apart on this fixture).
TEST(ServerFlux2, RefImagesGiveTheEditImage) {
    if (!flux2::prerequisites_ok()) return;
    ServerProcess server(flux2::model_args(), true, "", false);
    auto c = server.client();
    const Image edited = job_image(c, edit_job(true));
    ASSERT_FALSE(edited.empty());
    EXPECT_EQ(edited.width, 64);
    EXPECT_EQ(edited.height, 64);
    EXPECT_LE(mean_abs(edited, golden_like("flux2_edit.png", edited)), flux2::tolerance());
    const Image plain = job_image(c, edit_job(false));
    ASSERT_FALSE(plain.empty());
    EXPECT_GT(mean_abs(edited, plain), 5.0) << "the reference image had no effect";
}

// Bad reference images are refused when the request arrives, naming the item; the server then
// still serves a request with a good one.
TEST(ServerFlux2, BadReferenceImageIsA400AndTheServerKeepsServing) {
    if (!flux2::prerequisites_ok()) return;
    ServerProcess server(flux2::model_args(), true, "", false);
    auto c = server.client();
    const std::string good = base64_encode(read_bytes(flux2::ref_image()));
    struct Bad {
        const char* name;
        json refs;
        const char* mentions;
    };
    const std::vector<Bad> bad = {
        {"not_an_image", json::array({"aGVsbG8gd29ybGQ="}), "ref_images[0]"},
        {"truncated_png", json::array({good.substr(0, 40)}), "ref_images[0]"},
        {"not_base64", json::array({"%%%%"}), "ref_images[0]"},
        {"second_bad", json::array({good, "aGVsbG8gd29ybGQ="}), "ref_images[1]"},
        {"not_a_string", json::array({7}), "expected a base64 string"},
        {"not_an_array", json(good), "ref_images"},
    };
    for (const Bad& b : bad) {
        SCOPED_TRACE(b.name);
        json body = edit_job(false);
        body["ref_images"] = b.refs;
        auto r = post_json(c, "/sdcpp/v1/img_gen", body);
        ASSERT_TRUE(r) << "no answer: " << httplib::to_string(r.error()) << "\n" << server.log();
        EXPECT_EQ(r->status, 400) << r->body;
        EXPECT_NE(r->body.find(b.mentions), std::string::npos)
            << "the error should mention '" << b.mentions << "': " << r->body;
        EXPECT_FALSE(json::parse(r->body, nullptr, false).is_discarded())
            << "error bodies are JSON: " << r->body;
        auto health = c.Get("/health");
        ASSERT_TRUE(health) << "the server stopped answering\n" << server.log();
        EXPECT_EQ(health->status, 200);
    }
    json one_step = edit_job(true);
    one_step["sample_params"]["sample_steps"] = 1;
    EXPECT_FALSE(job_image(c, one_step).empty());
    EXPECT_TRUE(server.alive());
}

// OpenAI /v1/images/edits with a model that takes reference images: the input image is the
// reference (and the init image, as stable-diffusion.cpp's server does), so strength 1 gives the
// golden edit image; two input images are accepted (each a reference) and give another image.
TEST(ServerFlux2, OpenAiEditsUseTheImagesAsReferences) {
    if (!flux2::prerequisites_ok()) return;
    ServerProcess server(flux2::model_args(), true, "", false);
    auto c = server.client();
    const std::vector<unsigned char> bytes = read_bytes(flux2::ref_image());
    const std::string png(bytes.begin(), bytes.end());
    auto edit = [&](int images) {
        httplib::MultipartFormDataItems items = {{"prompt", "turn the red disc blue", "", ""},
                                                 {"size", "64x64", "", ""},
                                                 {"seed", "3", "", ""},
                                                 {"steps", "4", "", ""},
                                                 {"cfg_scale", "1", "", ""},
                                                 {"strength", "1", "", ""}};
        for (int i = 0; i < images; ++i) items.push_back({"image[]", png, "in.png", "image/png"});
        auto r = c.Post("/v1/images/edits", items);
        if (!r || r->status != 200) {
            ADD_FAILURE() << (r ? r->body : httplib::to_string(r.error())) << "\n" << server.log();
            return Image{};
        }
        return decode_b64_image(body_json(r)["data"][0]["b64_json"]);
    };
    const Image one = edit(1);
    ASSERT_FALSE(one.empty());
    EXPECT_LE(mean_abs(one, golden_like("flux2_edit.png", one)), flux2::tolerance());
    const Image two = edit(2);
    ASSERT_FALSE(two.empty());
    EXPECT_GT(mean_abs(one, two), 1.0) << "the second reference image had no effect";
    EXPECT_TRUE(server.alive());
}

}  // namespace
}  // namespace ggdiff::server_test
