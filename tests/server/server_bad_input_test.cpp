// Bad requests: malformed JSON, wrong types, negative sizes, huge n, bad base64, bad
// multipart, unsupported features... each answered with a 4xx that names the problem, and
// the server keeps serving after every one of them.
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

struct BadCase {
    const char* name;
    const char* path;
    std::string content_type;
    std::string body;
    int status;
    const char* mentions;  // the field or problem the error must name
};

std::string multipart(const std::string& boundary,
                      const std::vector<std::pair<std::string, std::string>>& parts) {
    std::string s;
    for (const auto& [head, content] : parts) {
        s += "--" + boundary + "\r\n" + head + "\r\n\r\n" + content + "\r\n";
    }
    return s + "--" + boundary + "--\r\n";
}

std::vector<BadCase> bad_cases() {
    const std::string deep = std::string(100, '[') + std::string(100, ']');
    const std::string mp = "multipart/form-data; boundary=XyZ";
    const std::string prompt_part = "Content-Disposition: form-data; name=\"prompt\"";
    const std::string image_part =
        "Content-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\nContent-Type: "
        "image/png";
    return {
        {"malformed_json", "/sdapi/v1/txt2img", "application/json", "{\"prompt\": \"x\",", 400,
         "malformed JSON"},
        {"empty_body", "/sdcpp/v1/img_gen", "application/json", "", 400, "empty request body"},
        {"array_body", "/v1/images/generations", "application/json", "[1,2]", 400,
         "expected a JSON object"},
        {"deep_json", "/sdapi/v1/txt2img", "application/json", deep, 400, "nested deeper"},
        {"steps_string", "/sdapi/v1/txt2img", "application/json", R"({"prompt":"x","steps":"ten"})",
         400, "steps"},
        {"width_bool", "/sdapi/v1/txt2img", "application/json", R"({"prompt":"x","width":true})",
         400, "width"},
        {"prompt_number", "/v1/images/generations", "application/json", R"({"prompt":5})", 400,
         "prompt"},
        {"prompt_missing", "/v1/images/generations", "application/json", R"({"n":1})", 400,
         "prompt"},
        {"seed_string", "/sdcpp/v1/img_gen", "application/json", R"({"prompt":"x","seed":"abc"})",
         400, "seed"},
        {"cfg_string", "/sdcpp/v1/img_gen", "application/json",
         R"({"prompt":"x","sample_params":{"guidance":{"txt_cfg":"high"}}})", 400,
         "sample_params.guidance.txt_cfg"},
        {"sample_params_array", "/sdcpp/v1/img_gen", "application/json",
         R"({"prompt":"x","sample_params":[1]})", 400, "sample_params"},
        {"steps_fraction", "/sdcpp/v1/img_gen", "application/json",
         R"({"prompt":"x","sample_params":{"sample_steps":2.5}})", 400,
         "sample_params.sample_steps"},
        {"negative_width", "/sdapi/v1/txt2img", "application/json", R"({"prompt":"x","width":-64})",
         400, "width"},
        {"zero_height", "/sdcpp/v1/img_gen", "application/json", R"({"prompt":"x","height":0})",
         400, "height"},
        {"negative_size", "/v1/images/generations", "application/json",
         R"({"prompt":"x","size":"-64x64"})", 400, "size"},
        {"size_not_multiple_of_8", "/v1/images/generations", "application/json",
         R"({"prompt":"x","size":"65x64"})", 400, "multiple of 8"},
        {"huge_size", "/sdapi/v1/txt2img", "application/json",
         R"({"prompt":"x","width":100000000})", 400, "width"},
        {"huge_n", "/v1/images/generations", "application/json", R"({"prompt":"x","n":100000})",
         400, "n"},
        {"huge_batch_size", "/sdapi/v1/txt2img", "application/json",
         R"({"prompt":"x","batch_size":1000})", 400, "batch_size"},
        {"huge_batch_count", "/sdcpp/v1/img_gen", "application/json",
         R"({"prompt":"x","batch_count":999})", 400, "batch_count"},
        {"huge_integer", "/sdapi/v1/txt2img", "application/json", R"({"prompt":"x","steps":1e300})",
         400, "steps"},
        {"zero_steps", "/sdapi/v1/txt2img", "application/json", R"({"prompt":"x","steps":0})", 400,
         "steps"},
        {"bad_sampler", "/sdapi/v1/txt2img", "application/json",
         R"({"prompt":"x","sampler_name":"Warp Drive"})", 400, "sampler_name"},
        {"bad_scheduler", "/sdcpp/v1/img_gen", "application/json",
         R"({"prompt":"x","sample_params":{"scheduler":"nope"}})", 400, "sample_params.scheduler"},
        {"bad_base64", "/sdapi/v1/img2img", "application/json",
         R"({"prompt":"x","init_images":["%%%%"]})", 400, "init_images[0]"},
        {"truncated_base64", "/sdcpp/v1/img_gen", "application/json",
         R"({"prompt":"x","init_image":"iVBORw0KG"})", 400, "init_image"},
        {"base64_not_an_image", "/sdapi/v1/img2img", "application/json",
         R"({"prompt":"x","init_images":["aGVsbG8gd29ybGQ="]})", 400, "init_images[0]"},
        {"init_images_not_strings", "/sdapi/v1/img2img", "application/json",
         R"({"prompt":"x","init_images":[1]})", 400, "init_images[0]"},
        {"no_init_images", "/sdapi/v1/img2img", "application/json", R"({"prompt":"x"})", 400,
         "init_images"},
        {"strength_out_of_range", "/sdcpp/v1/img_gen", "application/json",
         R"({"prompt":"x","strength":2})", 400, "strength"},
        {"bad_output_format", "/v1/images/generations", "application/json",
         R"({"prompt":"x","output_format":"gif"})", 400, "output_format"},
        {"url_response_format", "/v1/images/generations", "application/json",
         R"({"prompt":"x","response_format":"url"})", 400, "response_format"},
        {"hires_own_sampler", "/sdapi/v1/txt2img", "application/json",
         R"({"prompt":"x","enable_hr":true,"sampler_name":"Euler","hr_sampler_name":"DPM++ 2M"})",
         400, "hr_sampler_name"},
        {"ip_adapter_unsupported", "/sdcpp/v1/img_gen", "application/json",
         R"({"prompt":"x","ip_adapter_image":"aGVsbG8="})", 400, "not supported yet"},
        {"mask_not_an_image", "/sdcpp/v1/img_gen", "application/json",
         R"({"prompt":"x","mask_image":"aGVsbG8="})", 400, "mask_image"},
        {"unknown_option", "/sdapi/v1/options", "application/json", R"({"show_progressbar":false})",
         400, "show_progressbar"},
        {"other_model", "/sdapi/v1/options", "application/json",
         R"({"sd_model_checkpoint":"other.safetensors"})", 400, "sd_model_checkpoint"},
        {"bad_override", "/sdapi/v1/txt2img", "application/json",
         R"({"prompt":"x","override_settings":{"CLIP_stop_at_last_layers":"two"}})", 400,
         "override_settings.CLIP_stop_at_last_layers"},
        {"engine_option_type", "/sdcpp/v1/img_gen", "application/json",
         R"({"prompt":"x","ggdiff":{"eta":"high"}})", 400, "ggdiff.eta"},
        {"engine_option_unknown", "/v1/images/generations", "application/json",
         R"({"prompt":"x","ggdiff":{"warp":1}})", 400, "ggdiff.warp"},
        {"engine_option_path", "/sdapi/v1/txt2img", "application/json",
         R"({"prompt":"x","ggdiff":{"init-img":"/etc/passwd"}})", 400, "file paths"},
        {"engine_option_model", "/sdapi/v1/txt2img", "application/json",
         R"({"prompt":"x","ggdiff":{"model":"x.safetensors"}})", 400, "not a per-request option"},
        {"engine_option_not_yet", "/sdcpp/v1/img_gen", "application/json",
         R"({"prompt":"x","sample_params":{"shifted_timestep":250}})", 400, "not supported yet"},
        {"engine_option_range", "/sdcpp/v1/img_gen", "application/json",
         R"({"prompt":"x","ggdiff":{"vae_tile_overlap":7}})", 400, "ggdiff.vae_tile_overlap"},
        {"vid_gen_webm", "/sdcpp/v1/vid_gen", "application/json",
         R"({"prompt":"x","output_format":"webm"})", 400, "no WebM encoder"},
        {"vid_gen_end_image", "/sdcpp/v1/vid_gen", "application/json",
         R"({"prompt":"x","end_image":"AAAA"})", 400, "end_image"},
        {"vid_gen_batch", "/sdcpp/v1/vid_gen", "application/json",
         R"({"prompt":"x","batch_count":2})", 400, "batch_count"},
        {"vid_gen_fps", "/sdcpp/v1/vid_gen", "application/json", R"({"prompt":"x","fps":0})", 400,
         "fps"},
        {"edits_not_multipart", "/v1/images/edits", "application/json", R"({"prompt":"x"})", 400,
         "multipart"},
        {"edits_broken_multipart", "/v1/images/edits", mp,
         "--XyZ\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nx\r\n--Q", 400,
         "multipart"},
        {"edits_missing_image", "/v1/images/edits", mp, multipart("XyZ", {{prompt_part, "x"}}), 400,
         "image"},
        {"edits_image_not_an_image", "/v1/images/edits", mp,
         multipart("XyZ", {{prompt_part, "x"}, {image_part, "GIF89a...."}}), 400, "image"},
        {"edits_bad_n", "/v1/images/edits", mp,
         multipart("XyZ",
                   {{prompt_part, "x"}, {"Content-Disposition: form-data; name=\"n\"", "two"}}),
         400, "n"},
    };
}

TEST(ServerBadInput, EachBadRequestIsA4xxNamingTheProblemAndTheServerKeepsServing) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();
    for (const BadCase& bc : bad_cases()) {
        SCOPED_TRACE(bc.name);
        auto r = c.Post(bc.path, bc.body, bc.content_type.c_str());
        ASSERT_TRUE(r) << "no answer: " << httplib::to_string(r.error()) << "\n" << server.log();
        EXPECT_EQ(r->status, bc.status) << r->body;
        EXPECT_NE(r->body.find(bc.mentions), std::string::npos)
            << "the error should mention '" << bc.mentions << "': " << r->body;
        json j = json::parse(r->body, nullptr, false);
        EXPECT_FALSE(j.is_discarded()) << "error bodies are JSON: " << r->body;
        if (std::string(bc.path).rfind("/v1/", 0) == 0 && !j.is_discarded()) {
            EXPECT_TRUE(j["error"].is_object() && j["error"].contains("message") &&
                        j["error"].contains("type") && j["error"].contains("param"))
                << "OpenAI error shape: " << r->body;
        }
        auto health = c.Get("/health");
        ASSERT_TRUE(health) << "the server stopped answering after " << bc.name << "\n"
                            << server.log();
        EXPECT_EQ(health->status, 200);
    }
    // Unknown routes and methods are JSON 404s too.
    auto nope = c.Get("/sdapi/v1/nothing");
    ASSERT_TRUE(nope);
    EXPECT_EQ(nope->status, 404);
    EXPECT_EQ(body_json(nope)["error"], "Not Found");
    // After all that, a valid request still works.
    auto ok =
        post_json(c, "/sdapi/v1/txt2img",
                  {{"prompt", "x"}, {"width", 64}, {"height", 64}, {"steps", 1}, {"seed", 1}});
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << ok->body.substr(0, 300);
    EXPECT_TRUE(server.alive());
}

}  // namespace
}  // namespace ggdiff::server_test
