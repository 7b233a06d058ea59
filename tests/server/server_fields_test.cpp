// Every field of the A1111 and OpenAI request schemas acts, has no effect here (listed in
// docs/server.md; the image is the same as without it), or is refused with "not supported
// yet" naming it. Fields that act are checked by the route tests; this file checks the other
// two kinds.
#include <fstream>
#include <sstream>

#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

std::string docs_text() {
    std::ifstream in(std::string(GGDIFF_SOURCE_DIR) + "/docs/server.md");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The first image of an A1111 or OpenAI answer, decoded.
Image first_image(const httplib::Result& r, const char* api) {
    if (!r) {
        ADD_FAILURE() << "no answer";
        return {};
    }
    if (r->status != 200) {
        ADD_FAILURE() << r->status << ": " << r->body.substr(0, 300);
        return {};
    }
    json j = body_json(r);
    if (std::string(api) == "a1111") return decode_b64_image(j["images"][0]);
    return decode_b64_image(j["data"][0]["b64_json"]);
}

void expect_same(const Image& a, const Image& b, const std::string& what) {
    ASSERT_FALSE(a.empty()) << what;
    EXPECT_EQ(a.width, b.width) << what;
    EXPECT_EQ(a.height, b.height) << what;
    EXPECT_TRUE(a.pixels == b.pixels) << what << ": the image changed";
}

json merged(json base, const json& extra) {
    for (const auto& [k, v] : extra.items()) base[k] = v;
    return base;
}

// Fields accepted with no effect here, with values other than their defaults.
const json kA1111NoEffect = {{"subseed", 123},
                             {"do_not_save_samples", true},
                             {"do_not_save_grid", true},
                             {"save_images", true},
                             {"s_tmin", 0.5},
                             {"s_tmax", 10.0},
                             {"override_settings_restore_afterwards", false},
                             {"refiner_switch_at", 0.5},
                             {"comments", {{"note", "x"}}},
                             {"force_task_id", "task(abc)"},
                             {"script_args", {1, 2}}};
const json kTxt2imgNoEffect = {{"denoising_strength", 0.3},
                               {"firstphase_width", 64},
                               {"firstphase_height", 64},
                               {"hr_scale", 3},
                               {"hr_upscaler", "Latent"},
                               {"hr_second_pass_steps", 5},
                               {"hr_resize_x", 128},
                               {"hr_resize_y", 128},
                               {"hr_checkpoint_name", "other"},
                               {"hr_sampler_name", "Heun"},
                               {"hr_scheduler", "Karras"},
                               {"hr_prompt", "y"},
                               {"hr_negative_prompt", "z"}};
const json kImg2imgNoEffect = {{"mask_blur", 8},
                               {"mask_blur_x", 8},
                               {"mask_blur_y", 8},
                               {"mask_round", false},
                               {"inpainting_fill", 2},
                               {"inpaint_full_res", true},
                               {"inpaint_full_res_padding", 64},
                               {"inpainting_mask_invert", 1}};
const json kOpenAiNoEffect = {{"model", "dall-e-3"}, {"quality", "hd"},
                              {"style", "vivid"},    {"user", "someone"},
                              {"moderation", "low"}, {"background", "opaque"}};

struct Refusal {
    const char* path;
    json fields;
    const char* field;
};

TEST(ServerFields, NoEffectFieldsLeaveTheImageAndNotYetFieldsAreRefusedByName) {
    if (!e2e::prerequisites_ok()) return;
    const std::string docs = docs_text();
    for (const json* list :
         {&kA1111NoEffect, &kTxt2imgNoEffect, &kImg2imgNoEffect, &kOpenAiNoEffect}) {
        for (const auto& [k, v] : list->items()) {
            EXPECT_NE(docs.find("`" + k + "`"), std::string::npos)
                << k << " is not documented in docs/server.md";
        }
    }
    ServerProcess server({});
    auto c = server.client();
    const json base = {
        {"prompt", "a red cube"}, {"width", 64}, {"height", 64}, {"steps", 1}, {"seed", 5},
        {"sampler_name", "Euler"}};

    // A1111 txt2img.
    auto base_r = post_json(c, "/sdapi/v1/txt2img", base);
    const Image txt = first_image(base_r, "a1111");
    ASSERT_FALSE(txt.empty());
    const std::string init_b64 = body_json(base_r)["images"][0];
    expect_same(first_image(post_json(c, "/sdapi/v1/txt2img",
                                      merged(merged(base, kA1111NoEffect), kTxt2imgNoEffect)),
                            "a1111"),
                txt, "txt2img with no-effect fields");
    // disable_extra_networks: <lora:...> tags are removed, not applied (nor checked).
    expect_same(first_image(post_json(c, "/sdapi/v1/txt2img",
                                      merged(base, {{"prompt", "<lora:missing:0.5>a red cube"},
                                                    {"disable_extra_networks", true}})),
                            "a1111"),
                txt, "disable_extra_networks");
    auto with_tag =
        post_json(c, "/sdapi/v1/txt2img", merged(base, {{"prompt", "<lora:missing:1>a red cube"}}));
    ASSERT_TRUE(with_tag);
    EXPECT_EQ(with_tag->status, 400) << "without it the tag is checked: " << with_tag->body;

    // A1111 img2img.
    const json img_base = merged(base, {{"init_images", {init_b64}}, {"denoising_strength", 0.5}});
    const Image img = first_image(post_json(c, "/sdapi/v1/img2img", img_base), "a1111");
    ASSERT_FALSE(img.empty());
    expect_same(first_image(post_json(c, "/sdapi/v1/img2img",
                                      merged(merged(img_base, kA1111NoEffect), kImg2imgNoEffect)),
                            "a1111"),
                img, "img2img with no-effect fields");

    // OpenAI generations.
    const json oai_base = {{"prompt", "a red cube"}, {"size", "64x64"}, {"seed", 5}, {"steps", 1}};
    const Image oai = first_image(post_json(c, "/v1/images/generations", oai_base), "openai");
    ASSERT_FALSE(oai.empty());
    expect_same(
        first_image(post_json(c, "/v1/images/generations", merged(oai_base, kOpenAiNoEffect)),
                    "openai"),
        oai, "OpenAI generations with no-effect fields");

    // Refused by name.
    const std::vector<Refusal> refusals = {
        {"/sdapi/v1/txt2img", merged(base, {{"s_churn", 1.0}}), "s_churn"},
        {"/sdapi/v1/txt2img", merged(base, {{"s_noise", 0.9}}), "s_noise"},
        {"/sdapi/v1/txt2img", merged(base, {{"s_min_uncond", 0.5}}), "s_min_uncond"},
        {"/sdapi/v1/txt2img", merged(base, {{"infotext", "a cat\nSteps: 3"}}), "infotext"},
        {"/sdapi/v1/txt2img", merged(base, {{"firstpass_image", init_b64}}), "firstpass_image"},
        {"/sdapi/v1/img2img", merged(img_base, {{"initial_noise_multiplier", 0.9}}),
         "initial_noise_multiplier"},
        {"/sdapi/v1/img2img", merged(img_base, {{"latent_mask", init_b64}}), "latent_mask"},
        {"/v1/images/generations", merged(oai_base, {{"stream", true}}), "stream"},
        {"/v1/images/generations", merged(oai_base, {{"partial_images", 2}}), "partial_images"},
        {"/v1/images/generations", merged(oai_base, {{"background", "transparent"}}), "background"},
    };
    for (const Refusal& rf : refusals) {
        SCOPED_TRACE(rf.field);
        auto r = post_json(c, rf.path, rf.fields);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 400) << r->body;
        EXPECT_NE(r->body.find("not supported yet"), std::string::npos) << r->body;
        EXPECT_NE(r->body.find(rf.field), std::string::npos) << r->body;
        EXPECT_NE(docs.find("`" + std::string(rf.field) + "`"), std::string::npos)
            << rf.field << " is not documented in docs/server.md";
    }
    // The multipart edits route refuses streaming too.
    std::string png;
    {
        const std::string b64 = init_b64;
        auto bytes = base64_decode(b64);
        ASSERT_TRUE(bytes.ok());
        png.assign(bytes->begin(), bytes->end());
    }
    httplib::MultipartFormDataItems items = {{"image", png, "in.png", "image/png"},
                                             {"prompt", "a red cube", "", ""},
                                             {"stream", "true", "", ""}};
    auto edit = c.Post("/v1/images/edits", items);
    ASSERT_TRUE(edit);
    EXPECT_EQ(edit->status, 400) << edit->body;
    EXPECT_NE(edit->body.find("stream"), std::string::npos) << edit->body;
    EXPECT_TRUE(server.alive());
}

}  // namespace
}  // namespace ggdiff::server_test
