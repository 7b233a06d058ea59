// ggdiff-server with LTX-2.3's part files (the tiny ltx_recipe_* fixtures of
// tests/cli/ltx_e2e_test.cpp: DiT, embeddings connectors, Gemma 3, video VAE, audio VAE):
// /sdcpp/v1/capabilities names the family and its defaults (euler, CFG 7, 768x512, 1 + 8n
// frames, sound with an audio VAE); a vid_gen job gives its 9 frames and its sound track (a
// WAV in result.audio beside a WebP, the PCM stream of an AVI: the same samples); without
// --audio-vae there is no sound and no audio field; what LTX-2.3 refuses (a control video, bad
// tiling arguments; a first or last frame with this decoder-only VAE) is refused naming it, and
// the server goes on serving.
#include <cmath>

#include "../support/ltx_parts.h"
#include "image/image_io.h"
#include "image/video_io.h"
#include "image/wav.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

using ltx_parts::expected_samples;

// Every part (without the audio VAE when `sound` is false).
std::vector<std::string> model_args(bool sound = true) {
    return ltx_parts::part_args(sound ? "" : "--audio-vae");
}

bool prerequisites_ok() {
    return built_fixtures_present({"ltx_recipe_dit", "ltx_recipe_connectors", "ltx_recipe_llm",
                                   "ltx_recipe_vae", "ltx_recipe_audio_vae"});
}

// A 64x64 request of 9 frames at 16 fps, 2 steps.
json ltx_job(const std::string& format, int64_t seed = 42) {
    return {{"prompt", "a red cat"},
            {"width", 64},
            {"height", 64},
            {"seed", seed},
            {"video_frames", 9},
            {"fps", 16},
            {"output_format", format},
            {"sample_params", {{"sample_steps", 2}}}};
}

Result<DecodedVideo> decode_result(const json& result) {
    auto bytes = base64_decode(result.value("b64_json", ""));
    if (!bytes.ok()) return bytes.status();
    return decode_video(bytes->data(), bytes->size());
}

// Submits `body` to vid_gen and waits for the job's end.
json run_video(httplib::Client& c, const json& body, const ServerProcess& server) {
    auto sub = post_json(c, "/sdcpp/v1/vid_gen", body);
    if (!sub || sub->status != 202) {
        ADD_FAILURE() << (sub ? sub->body : httplib::to_string(sub.error())) << "\n"
                      << server.log();
        return nullptr;
    }
    return wait_job(c, body_json(sub)["id"], 600);
}

std::string png_base64(int width, int height) {
    Image img;
    img.width = width;
    img.height = height;
    img.channels = 3;
    img.pixels.assign(img.byte_size(), 128);
    auto png = encode_image(img, ImageFormat::Png);
    if (!png.ok()) ADD_FAILURE() << png.status().message();
    return png.ok() ? base64_encode(*png) : "";
}

TEST(ServerLtx, CapabilitiesNameTheLtxDefaults) {
    if (!prerequisites_ok()) return;
    ServerProcess server(model_args(), /*wait_ready=*/true, "", /*with_model=*/false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    SCOPED_TRACE(caps.dump(1));
    EXPECT_EQ(caps["model"]["family_id"], "ltx2");
    EXPECT_EQ(caps["model"]["family"].get<std::string>().rfind("LTX-2", 0), 0u);
    EXPECT_EQ(caps["model"]["stem"], "ltx_recipe_dit");
    const json& model = caps["model"]["defaults"];
    EXPECT_EQ(model["sample_method"], "euler");
    EXPECT_EQ(model["cfg_scale"], 7.0);
    EXPECT_EQ(model["width"], 768);
    EXPECT_EQ(model["height"], 512);
    EXPECT_EQ(model["scheduler"], "ltx2");
    EXPECT_EQ(caps["model"]["video"]["frames_step"], 8);
    EXPECT_EQ(caps["model"]["video"]["audio"], true);
    EXPECT_EQ(caps["features_by_mode"]["vid_gen"]["audio"], true);
    EXPECT_EQ(caps["features_by_mode"]["vid_gen"]["end_image"], true);
    EXPECT_EQ(caps["features_by_mode"]["vid_gen"]["control_frames"], false);
    const json& vid = caps["defaults_by_mode"]["vid_gen"];
    EXPECT_EQ(vid["fps"], 16);
    EXPECT_EQ(vid["output_format"], "webp");
    // The schedule is the model's (LTX-2.3's ltx2) unless a request names one.
    EXPECT_TRUE(vid["sample_params"]["scheduler"].is_null());
    EXPECT_TRUE(vid["sample_params"]["sample_method"].is_null());
    EXPECT_NE(caps["families"].dump().find("\"ltx2\""), std::string::npos);
}

// The WebP's sound comes as a WAV in result.audio; the AVI carries the same samples as its
// PCM stream.
TEST(ServerLtx, VideoJobsCarryTheSoundTrack) {
    if (!prerequisites_ok()) return;
    ServerProcess server(model_args(), true, "", false);
    auto c = server.client();

    const json webp = run_video(c, ltx_job("webp"), server);
    ASSERT_EQ(webp["status"], "completed") << webp.dump().substr(0, 1500) << server.log();
    const json& wr = webp["result"];
    EXPECT_EQ(wr["output_format"], "webp");
    EXPECT_EQ(wr["frame_count"], 9);
    EXPECT_EQ(wr["fps"], 16);
    auto wv = decode_result(wr);
    ASSERT_TRUE(wv.ok()) << wv.status().message();
    EXPECT_EQ(wv->frames.size(), 9u);
    EXPECT_EQ(wv->width, 64);
    EXPECT_EQ(wv->height, 64);
    ASSERT_TRUE(wr.contains("audio")) << wr.dump().substr(0, 500);
    const json& wa = wr["audio"];
    EXPECT_EQ(wa["in_container"], false);
    EXPECT_EQ(wa["format"], "wav");
    EXPECT_EQ(wa["mime_type"], "audio/wav");
    EXPECT_EQ(wa["sample_rate"], 16000);
    EXPECT_EQ(wa["channels"], 2);
    EXPECT_EQ(wa["sample_count"], expected_samples(9, 16));
    EXPECT_DOUBLE_EQ(wa["duration_seconds"].get<double>(), expected_samples(9, 16) / 16000.0);
    auto wav_bytes = base64_decode(wa.value("b64_json", ""));
    ASSERT_TRUE(wav_bytes.ok()) << wav_bytes.status().message();
    auto wav = decode_wav(wav_bytes->data(), wav_bytes->size());
    ASSERT_TRUE(wav.ok()) << wav.status().message();
    EXPECT_EQ(wav->sample_rate, 16000);
    EXPECT_EQ(wav->channels, 2);
    EXPECT_EQ(static_cast<int64_t>(wav->sample_count()), expected_samples(9, 16));
    float peak = 0.0f;
    for (float s : wav->samples) peak = std::max(peak, std::fabs(s));
    EXPECT_GT(peak, 0.0f) << "a silent track";

    // The same request as an AVI: the same frames count and the same sound, in the file.
    const json avi = run_video(c, ltx_job("avi"), server);
    ASSERT_EQ(avi["status"], "completed") << avi.dump().substr(0, 1500) << server.log();
    const json& ar = avi["result"];
    EXPECT_EQ(ar["output_format"], "avi");
    EXPECT_EQ(ar["mime_type"], "video/x-msvideo");
    ASSERT_TRUE(ar.contains("audio"));
    EXPECT_EQ(ar["audio"]["in_container"], true);
    EXPECT_FALSE(ar["audio"].contains("b64_json"));
    EXPECT_EQ(ar["audio"]["sample_count"], expected_samples(9, 16));
    auto av = decode_result(ar);
    ASSERT_TRUE(av.ok()) << av.status().message();
    EXPECT_EQ(av->frames.size(), 9u);
    EXPECT_EQ(av->fps, 16);
    EXPECT_NE(av->parameters.find("a red cat"), std::string::npos) << av->parameters;
    EXPECT_EQ(av->audio.sample_rate, 16000);
    EXPECT_EQ(av->audio.channels, 2);
    EXPECT_EQ(av->audio.samples, wav->samples) << "the AVI's PCM stream is not the WAV's track";

    // Another seed makes another sound track.
    const json other = run_video(c, ltx_job("webp", 43), server);
    ASSERT_EQ(other["status"], "completed") << other.dump().substr(0, 1500);
    EXPECT_NE(other["result"]["audio"]["b64_json"], wa["b64_json"]);
}

// vid_gen's `hires` runs LTX-2's latent upscaler named in the server's --hires-upscalers-dir:
// twice the size, the same frames and sound; one the folder lacks is refused naming it.
TEST(ServerLtx, HiresRunsTheLatentUpscaler) {
    if (!prerequisites_ok() || !built_fixtures_present({"ltx_upscaler_x2"})) return;
    const std::string ups = e2e::fresh_dir("server_ltx_upscalers");
    std::filesystem::copy_file(e2e::built_fixture("ltx_upscaler_x2"),
                               ups + "/ltx_up_x2.safetensors");
    std::vector<std::string> args = model_args();
    args.insert(args.end(), {"--hires-upscalers-dir", ups});
    ServerProcess server(args, true, "", false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    EXPECT_EQ(caps["features_by_mode"]["vid_gen"]["hires"], true) << caps.dump().substr(0, 800);
    EXPECT_TRUE(caps["defaults_by_mode"]["vid_gen"].contains("hires"));

    json job = ltx_job("webp");
    job["hires"] = {
        {"enabled", true}, {"upscaler", "ltx_up_x2"}, {"steps", 2}, {"denoising_strength", 0.5}};
    const json done = run_video(c, job, server);
    ASSERT_EQ(done["status"], "completed") << done.dump().substr(0, 1500) << server.log();
    EXPECT_EQ(done["result"]["frame_count"], 9);
    auto v = decode_result(done["result"]);
    ASSERT_TRUE(v.ok()) << v.status().message();
    EXPECT_EQ(v->width, 128);
    EXPECT_EQ(v->height, 128);
    EXPECT_EQ(done["result"]["audio"]["sample_count"], expected_samples(9, 16));
    EXPECT_NE(v->parameters.find("Hires upscaler: ltx_up_x2"), std::string::npos) << v->parameters;

    job["hires"]["upscaler"] = "ltx_up_x3";
    const json missing = run_video(c, job, server);
    ASSERT_EQ(missing["status"], "failed") << missing.dump().substr(0, 800);
    EXPECT_NE(missing["error"]["message"].get<std::string>().find("ltx_up_x3"), std::string::npos)
        << missing["error"].dump();
    auto health = c.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
}

TEST(ServerLtx, WithoutAnAudioVaeThereIsNoSound) {
    if (!prerequisites_ok()) return;
    ServerProcess server(model_args(/*sound=*/false), true, "", false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    EXPECT_EQ(caps["model"]["video"]["frames_step"], 8) << caps["model"].dump();
    EXPECT_EQ(caps["model"]["video"]["audio"], false);
    EXPECT_EQ(caps["features_by_mode"]["vid_gen"]["audio"], false);
    for (const char* format : {"webp", "avi"}) {
        SCOPED_TRACE(format);
        const json done = run_video(c, ltx_job(format), server);
        ASSERT_EQ(done["status"], "completed") << done.dump().substr(0, 1500) << server.log();
        EXPECT_EQ(done["result"]["frame_count"], 9);
        EXPECT_FALSE(done["result"].contains("audio")) << done["result"].dump().substr(0, 300);
        auto v = decode_result(done["result"]);
        ASSERT_TRUE(v.ok()) << v.status().message();
        EXPECT_TRUE(v->audio.empty());
    }
}

// LTX-2.3's embeddings connectors and audio VAE on the command line are files of its model:
// another model of --models-dir loads without them (SD1 refuses an audio VAE).
TEST(ServerLtx, ItsPartsStayWithItsModel) {
    if (!prerequisites_ok() || !e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir() + "/models";
    std::filesystem::create_directories(dir);
    std::filesystem::create_symlink(e2e::fixture_path(), dir + "/sd1.safetensors");
    std::vector<std::string> args = model_args();
    args.insert(args.end(), {"--models-dir", dir});
    ServerProcess server(args, true, "", false);
    auto c = server.client();
    const json models = body_json(c.Get("/sdcpp/v1/models"));
    ASSERT_EQ(models["models"].size(), 2u) << models.dump(1);
    EXPECT_EQ(models["current"], "ltx_recipe_dit");
    json body = small_job(1);
    body["model"] = "sd1";
    auto sub = post_json(c, "/sdcpp/v1/img_gen", body);
    ASSERT_TRUE(sub && sub->status == 202) << (sub ? sub->body : "") << server.log();
    const json done = wait_job(c, body_json(sub)["id"]);
    EXPECT_EQ(done["status"], "completed") << done.dump().substr(0, 800) << server.log();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities?model=sd1"));
    EXPECT_EQ(caps["model"]["family_id"], "sd1");
    EXPECT_TRUE(caps["model"]["video"].is_null()) << caps["model"].dump();
    EXPECT_EQ(caps["features_by_mode"]["vid_gen"]["audio"], false);
}

// What LTX-2.3 does not take is refused naming it: a 400 where the server knows it from the
// model (a control video) or the request (bad tiling arguments), a failed job (invalid_input)
// where only the engine does (a first or last frame for a VAE without its encoder); the server
// then still serves.
TEST(ServerLtx, RefusalsKeepTheServerServing) {
    if (!prerequisites_ok()) return;
    ServerProcess server(model_args(), true, "", false);
    auto c = server.client();
    const std::string image = png_base64(64, 64);

    const std::vector<std::pair<json, std::string>> bad = {
        {{{"prompt", "x"}, {"control_frames", json::array({image})}}, "takes no control video"},
        {{{"prompt", "x"}, {"output_format", "webm"}}, "no WebM encoder"},
        {{{"prompt", "x"}, {"video_frames", 5000}}, "video_frames"},
        {{{"prompt", "x"},
          {"vae_tiling_params",
           {{"temporal_tiling", true}, {"extra_tiling_args", "temporal_tile_frames=two"}}}},
         "temporal_tile_frames"}};
    for (const auto& [body, word] : bad) {
        SCOPED_TRACE(body.dump().substr(0, 200));
        auto r = post_json(c, "/sdcpp/v1/vid_gen", body);
        ASSERT_TRUE(r) << server.log();
        EXPECT_EQ(r->status, 400) << r->body;
        EXPECT_NE(r->body.find(word), std::string::npos) << r->body;
    }

    json init = ltx_job("webp");
    init["init_image"] = image;
    json last = ltx_job("webp");
    last["end_image"] = image;
    // The fixture's VAE is a decoder only: a first or last frame needs its encoder, and the job
    // says so.
    for (const auto& [body, words] : std::vector<std::pair<json, std::vector<std::string>>>{
             {init, {"-i needs a full VAE", "img2img needs a full VAE"}},
             {last, {"--end-img needs a full VAE"}}}) {
        const json done = run_video(c, body, server);
        ASSERT_EQ(done["status"], "failed") << done.dump().substr(0, 800);
        EXPECT_EQ(done["error"]["code"], "invalid_input") << done["error"].dump();
        const std::string message = done["error"]["message"];
        bool named = false;
        for (const std::string& w : words) named = named || message.find(w) != std::string::npos;
        EXPECT_TRUE(named) << message;
        EXPECT_TRUE(done["result"].is_null());
    }

    const json good = run_video(c, ltx_job("webp"), server);
    ASSERT_EQ(good["status"], "completed") << good.dump().substr(0, 1500) << server.log();
    EXPECT_EQ(good["result"]["frame_count"], 9);
    EXPECT_TRUE(good["result"].contains("audio"));
    auto health = c.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
}

}  // namespace
}  // namespace ggdiff::server_test
