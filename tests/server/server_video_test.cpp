// sd-server's POST /sdcpp/v1/vid_gen on the SD1 fixture (one frame per video): the async job
// (202, poll_url, progress), the result as one container (b64_json, mime_type, output_format,
// fps, frame_count) in webp (the default) and avi, the capabilities' vid_gen entries, and
// the refusals (webm, fields the engine does not take yet), after which the server still
// serves.
#include "image/video_io.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

json video_job(const std::string& format, int fps) {
    json j = {{"prompt", "a red cube"},
              {"width", 64},
              {"height", 64},
              {"seed", 3},
              {"fps", fps},
              {"moe_boundary", 0.875},  // sd-server's defaults, sent by its clients
              {"vace_strength", 1.0},
              {"end_image", nullptr},
              {"control_frames", json::array()},
              {"high_noise_sample_params", {{"sample_steps", -1}}},
              {"sample_params", {{"sample_method", "euler"}, {"sample_steps", 1}}}};
    if (!format.empty()) j["output_format"] = format;
    return j;
}

Result<DecodedVideo> decode_result(const json& result) {
    auto bytes = base64_decode(result.value("b64_json", ""));
    if (!bytes.ok()) return bytes.status();
    return decode_video(bytes->data(), bytes->size());
}

TEST(ServerVideo, VidGenJobsGiveOneContainer) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();

    json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    EXPECT_EQ(caps["supported_modes"], json::array({"img_gen", "vid_gen"}));
    EXPECT_EQ(caps["output_formats_by_mode"]["vid_gen"], json::array({"webp", "avi"}));
    EXPECT_EQ(caps["defaults_by_mode"]["vid_gen"]["output_format"], "webp");
    EXPECT_EQ(caps["defaults_by_mode"]["vid_gen"]["fps"], 16);
    EXPECT_FALSE(caps["defaults_by_mode"]["vid_gen"].contains("batch_count"));
    EXPECT_EQ(caps["features_by_mode"]["vid_gen"]["end_image"], false);
    EXPECT_EQ(caps["features_by_mode"]["vid_gen"]["hires"], false);  // LTX-2's latent upscalers
    EXPECT_EQ(caps["features_by_mode"]["vid_gen"]["high_noise_sample_params"], true);
    EXPECT_EQ(caps["defaults_by_mode"]["vid_gen"]["video_frames"], 1);
    EXPECT_EQ(caps["features_by_mode"]["vid_gen"]["cancel_generating"], true);
    EXPECT_EQ(caps["output_formats_by_mode"]["img_gen"], json::array({"png", "jpeg", "webp"}));

    struct Case {
        std::string format;  // "" = the default
        int fps;
        std::string expect_format, mime;
    };
    for (const Case& k :
         {Case{"", 12, "webp", "image/webp"}, Case{"avi", 24, "avi", "video/x-msvideo"}}) {
        SCOPED_TRACE(k.expect_format);
        auto sub = post_json(c, "/sdcpp/v1/vid_gen", video_job(k.format, k.fps));
        ASSERT_TRUE(sub) << server.log();
        ASSERT_EQ(sub->status, 202) << sub->body;
        json s = body_json(sub);
        EXPECT_EQ(s["kind"], "vid_gen");
        ASSERT_TRUE(s["poll_url"].is_string());
        json done = wait_job(c, s["id"]);
        ASSERT_EQ(done["status"], "completed") << done.dump().substr(0, 800);
        EXPECT_EQ(done["progress"]["images_done"], 1);
        const json& result = done["result"];
        EXPECT_EQ(result["output_format"], k.expect_format);
        EXPECT_EQ(result["mime_type"], k.mime);
        EXPECT_EQ(result["fps"], k.fps);
        EXPECT_EQ(result["frame_count"], 1);
        auto video = decode_result(result);
        ASSERT_TRUE(video.ok()) << video.status().message();
        EXPECT_EQ(video->format, k.expect_format == "avi" ? VideoFormat::Avi : VideoFormat::WebP);
        ASSERT_EQ(video->frames.size(), 1u);
        EXPECT_EQ(video->width, 64);
        // libwebp stores a one-frame animation as a still image when that is smaller: no
        // frame duration then.
        if (k.expect_format == "avi") {
            EXPECT_EQ(video->fps, k.fps);
        }
        EXPECT_NE(video->parameters.find("a red cube"), std::string::npos) << video->parameters;
        EXPECT_NE(video->parameters.find("Seed: 3"), std::string::npos) << video->parameters;
    }

    // Refusals name the field; the server goes on serving.
    const std::vector<std::pair<json, std::string>> bad = {
        {{{"prompt", "x"}, {"output_format", "webm"}}, "no WebM encoder"},
        {{{"prompt", "x"}, {"output_format", "gif"}}, "output_format"},
        {{{"prompt", "x"}, {"end_image", "AAAA"}}, "end_image"},
        {{{"prompt", "x"}, {"moe_boundary", 1.5}}, "moe_boundary"},
        {{{"prompt", "x"}, {"vace_strength", 0.5}}, "vace_strength"},
        {{{"prompt", "x"}, {"control_frames", json::array({"AAAA"})}}, "control_frames"},
        {{{"prompt", "x"}, {"fps", 500}}, "fps"},
        {{{"prompt", "x"}, {"batch_count", 2}}, "batch_count"},
        {{{"prompt", "x"}, {"hires", {{"enabled", true}}}}, "no hires fix for video"}};
    for (const auto& [body, word] : bad) {
        SCOPED_TRACE(body.dump());
        auto r = post_json(c, "/sdcpp/v1/vid_gen", body);
        ASSERT_TRUE(r) << server.log();
        EXPECT_EQ(r->status, 400) << r->body;
        EXPECT_NE(r->body.find(word), std::string::npos) << r->body;
    }
    auto end = post_json(c, "/sdcpp/v1/vid_gen", {{"prompt", "x"}, {"end_image", "AAAA"}});
    ASSERT_TRUE(end);
    EXPECT_EQ(end->status, 400) << end->body;
    EXPECT_NE(end->body.find("takes no last frame"), std::string::npos) << end->body;
    auto health = c.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
}

}  // namespace
}  // namespace ggdiff::server_test
