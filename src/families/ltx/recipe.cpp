// LTX-2.3 (Lightricks' audio-video model) as stable-diffusion.cpp (38a51f81) runs it: Gemma 3
// 12B text (--llm) through the text projections of --embeddings-connectors
// (families/ltx/text.h), the audio-video DiT with its embeddings connectors
// (families/ltx/dit.h, families/ltx/denoiser.h), the LTX video VAE (--vae) and the audio VAE
// with its vocoder (--audio-vae). One latent per item: the video's 128 channels per latent frame
// with the audio's values packed after them as extra channels (families/ltx/latents.h), so the
// channel count depends on the size, the frames and --fps. Defaults as the reference: the ltx2
// schedule (shifted by the video's token count), euler, cfg 7, 1 + 8 n frames.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "core/log.h"
#include "families/ltx/audio_vae.h"
#include "families/ltx/denoiser.h"
#include "families/ltx/hires.h"
#include "families/ltx/latents.h"
#include "families/ltx/lora.h"
#include "families/ltx/text.h"
#include "families/ltx/video_vae.h"
#include "image/input_fit.h"
#include "image/wav.h"
#include "models/te/gemma_vocab.h"
#include "models/vae/tiling.h"
#include "pipeline/family.h"
#include "pipeline/latent_image.h"
#include "pipeline/parts/module_setup.h"
#include "pipeline/phase_decode.h"
#include "tokenizers/gemma_tokenizer.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr int64_t kVideoChannels = 128;  // the LTX-2 VAE's latent (the DiT and the VAE must agree)

bool detect(const TensorIndex& index) {
    const std::string p = kDit;
    return index.has(p + "adaln_single.emb.timestep_embedder.linear_1.bias") &&
           index.has(p + "audio_patchify_proj.weight") && index.has(p + "patchify_proj.weight");
}

// A DiT file given with -m alone in its stored names (unsloth's GGUF, a bare safetensors):
// filed under model.diffusion_model. like --diffusion-model.
bool bare_ltx(const std::vector<std::string>& names) {
    bool patch = false, audio = false, adaln = false;
    for (const std::string& n : names) {
        patch = patch || n == "patchify_proj.weight";
        audio = audio || n == "audio_patchify_proj.weight";
        adaln = adaln || n == "adaln_single.emb.timestep_embedder.linear_1.bias";
    }
    return patch && audio && adaln;
}

const ModelLayout kLtxLayout = [] {
    ModelLayout l;
    l.bare_diffusion = bare_ltx;
    return l;
}();

// The latent frames the video decodes from.
int target_frames(const GenerateOptions& o) {
    return static_cast<int>(models::ltx_latent_frames(o.video_frames));
}

int output_frames(const GenerateOptions& o) {
    return models::ltx_output_frames(o.video_frames);
}

// --end-img on a video of more than one frame: its latent frame is appended to the sampled
// latent as a keyframe (a one-frame video replaces its only latent frame instead), as the
// reference does.
models::LtxKeyframes keyframes(const GenerateOptions& o) {
    models::LtxKeyframes k;
    if (o.end_image && output_frames(o) > 1) {
        k.count = 1;
        k.pixel = output_frames(o) - 1;
    }
    return k;
}

// The sampled latent's frames: the video's and the keyframes.
int latent_frames(const GenerateOptions& o) {
    return target_frames(o) + static_cast<int>(keyframes(o).count);
}

int64_t audio_steps(const GenerateOptions& o) {
    return models::ltx_request_audio_steps(o.video_frames, o.fps);
}

int request_channels(const GenerateOptions& o, int width, int height) {
    return static_cast<int>(models::ltx_packed_channels(width / 32, height / 32, latent_frames(o),
                                                        kVideoChannels, audio_steps(o)));
}

Status check_request(const GenerateOptions& o) {
    if (output_frames(o) != o.video_frames) {
        GGDIFF_LOG_WARN("--video-frames %d: LTX-2 makes 8n+1 frames; making %d", o.video_frames,
                        output_frames(o));
    }
    return Status::Ok();
}

// The prompt as the reference tokenizes it (gemma3_prompt_tokens: <bos>, the prompt as typed,
// A1111 emphasis weights per token).
class LtxText : public TextConditioner {
  public:
    LtxText(const TensorIndex& index, const models::LtxTextConfig& cfg,
            std::shared_ptr<const GemmaTokenizer> tok, std::unique_ptr<ModuleRunner> llm,
            std::unique_ptr<ModuleRunner> proj)
        : index_(index),
          cfg_(cfg),
          tok_(std::move(tok)),
          llm_(std::move(llm)),
          proj_(std::move(proj)) {}

    Result<Conditioning> encode(const TextRequest& r) override {
        const GemmaPromptTokens t = gemma3_prompt_tokens(*tok_, r.prompt);
        const std::vector<int>& ids = t.ids;
        const std::vector<float>& weights = t.weights;
        auto context = models::ltx_encode_tokens(*llm_, *proj_, index_, cfg_, ids, weights);
        if (!context.ok()) return context.status().with_context("LTX-2 text");
        Conditioning c;
        c.context = std::move(*context);
        return c;
    }
    void end_phase() override {
        llm_->end_phase();
        proj_->end_phase();
    }

  private:
    const TensorIndex& index_;
    models::LtxTextConfig cfg_;
    std::shared_ptr<const GemmaTokenizer> tok_;
    std::unique_ptr<ModuleRunner> llm_, proj_;
};

models::WanGraphRun graph_run(ModuleRunner& runner) {
    return [&runner](const models::WanGraphBuild& build) {
        return runner.run([&build](GraphBuilder& gb) {
            return build(gb.nn(), [&gb](const HostTensor& t) { return gb.input(t); });
        });
    };
}

// The packed latent -> the video's frames; the audio's values -> the sound track (take_audio).
class LtxAutoencoder : public Autoencoder {
  public:
    // `audio` unset (no --audio-vae): no sound track.
    // `encoder_runner` null: the VAE file has no encoder (no image-to-video).
    LtxAutoencoder(const ltx::LtxVideoVaeConfig& video,
                   const std::optional<ltx::LtxAudioVaeConfig>& audio,
                   std::unique_ptr<ModuleRunner> video_runner,
                   std::unique_ptr<ModuleRunner> audio_runner,
                   std::unique_ptr<ModuleRunner> encoder_runner)
        : video_(video),
          audio_(audio),
          video_runner_(std::move(video_runner)),
          audio_runner_(std::move(audio_runner)),
          encoder_runner_(std::move(encoder_runner)) {}

    void set_layout(const LtxLatentLayout& layout) { layout_ = layout; }
    // The request's --vae-tiling (regions of the frame) and --temporal-tiling (windows of
    // latent frames); the sound track is decoded whole.
    void set_tiling(const TilingOptions& tiling) { tiling_ = tiling; }
    bool tiles_itself() const override { return true; }
    int downscale() const override { return video_.space_scale(); }
    bool can_encode() const override { return encoder_runner_ != nullptr; }
    // One image [W, H, 3, 1] -> its latent frame [W/32, H/32, 128, 1] (the posterior mean,
    // normalized: the reference's encode_first_stage of a one-frame video).
    Result<HostTensor> encode(const HostTensor& image, sampling::Rng&) override {
        if (!encoder_runner_) {
            return Status::Error("this LTX VAE has no encoder weights: -i needs a full VAE");
        }
        return ltx::ltx_encode_video(video_, image, graph_run(*encoder_runner_));
    }
    void end_phase() override {
        video_runner_->end_phase();
        if (audio_runner_) audio_runner_->end_phase();
        if (encoder_runner_) encoder_runner_->end_phase();
    }
    std::shared_ptr<const AudioTrack> take_audio() override { return std::move(track_); }

    Result<HostTensor> decode(const HostTensor& latent) override { return decode(latent, true); }
    // Previews decode the frames only.
    Result<HostTensor> decode_preview(const HostTensor& latent) override {
        return decode(latent, false);
    }

  private:
    Result<HostTensor> decode(const HostTensor& latent, bool sound) {
        const int64_t w = latent.dim(0), h = latent.dim(1), t = layout_.frames;
        const int64_t c = video_.latent_channels, steps = layout_.audio_steps;
        const int64_t packed = steps > 0 ? models::ltx_packed_channels(w, h, t, c, steps) : c;
        if (latent.dim(2) != packed * t) {
            return Status::Error(string_format(
                "LTX-2 VAE: a latent of %lld planes is not %lld frames of %lld channels",
                (long long)latent.dim(2), (long long)t, (long long)packed));
        }
        auto [video, audio] = models::ltx_unpack(latent, c, t, steps);
        // [w, h, C * T] with channel c of frame t at plane c * T + t -> [w, h, C, T'], the
        // keyframes (the last frames) left out.
        const int64_t plane = w * h, kept = t - layout_.keyframes.count;
        HostTensor z({w, h, c, kept});
        for (int64_t ch = 0; ch < c; ++ch) {
            for (int64_t f = 0; f < kept; ++f) {
                std::copy_n(video.data.begin() + (ch * t + f) * plane, plane,
                            z.data.begin() + (f * c + ch) * plane);
            }
        }
        auto frames = decode_video(z);
        if (!frames.ok()) return frames.status().with_context("LTX-2 video VAE");
        if (sound && steps > 0 && audio_) {
            auto wave = ltx::ltx_decode_audio(*audio_, audio, graph_run(*audio_runner_));
            if (!wave.ok()) return wave.status().with_context("LTX-2 audio VAE");
            const int64_t n = wave->dim(0), channels = wave->dim(1);
            auto track = std::make_shared<AudioTrack>();
            track->sample_rate = audio_->sample_rate;
            track->channels = static_cast<int>(channels);
            track->samples.resize(static_cast<size_t>(n * channels));
            for (int64_t i = 0; i < n; ++i) {
                for (int64_t ch = 0; ch < channels; ++ch) {
                    track->samples[static_cast<size_t>(i * channels + ch)] =
                        wave->data[static_cast<size_t>(ch * n + i)];
                }
            }
            track_ = std::move(track);
        }
        return frames;
    }

    // z [w, h, C, T] -> frames, tiled as the request says (regions, each decoded in windows
    // of latent frames with --temporal-tiling, as the reference does both).
    Result<HostTensor> decode_video(const HostTensor& z) {
        ltx::LtxTemporalTiling windows;
        windows.enabled = tiling_.temporal;
        windows.frames = tiling_.temporal_frames;
        windows.overlap = tiling_.temporal_overlap;
        auto whole = [&](const HostTensor& zz) {
            return ltx::ltx_decode_video(video_, zz, graph_run(*video_runner_), windows);
        };
        if (!tiling_.enabled) return whole(z);
        HostTensor frames;
        GGDIFF_TRY(models::run_tiled_video(z, frames, static_cast<float>(video_.space_scale()),
                                           tile_options(tiling_),
                                           [&](const HostTensor& in, HostTensor& out) -> Status {
                                               auto r = whole(in);
                                               if (!r.ok()) return r.status();
                                               out = std::move(*r);
                                               return Status::Ok();
                                           }));
        return frames;
    }

    ltx::LtxVideoVaeConfig video_;
    std::optional<ltx::LtxAudioVaeConfig> audio_;
    TilingOptions tiling_;
    std::unique_ptr<ModuleRunner> video_runner_, audio_runner_, encoder_runner_;
    LtxLatentLayout layout_;
    std::shared_ptr<const AudioTrack> track_;
};

Result<std::unique_ptr<LtxAutoencoder>> make_autoencoder(
    const FamilyContext& ctx, const ltx::LtxVideoVaeConfig& video,
    const std::optional<ltx::LtxAudioVaeConfig>& audio) {
    auto vr = make_module(ctx, ctx.placement.vae, "video VAE", [&video](GraphBuilder& gb) {
        ggml_tensor* ts = video.timestep_conditioning
                              ? gb.input(HostTensor({1}, video.decode_timestep))
                              : nullptr;
        ggml_tensor* z = gb.input(HostTensor({2, 2, video.latent_channels, 1}));
        return std::vector<ggml_tensor*>{ltx::build_ltx_decode(gb.nn(), video, z, ts, 0)};
    });
    if (!vr.ok()) return vr.status();
    std::unique_ptr<ModuleRunner> ar;
    if (audio) {
        const ltx::LtxAudioVaeConfig& a = *audio;
        // The whole decode, the bandwidth extension's weights included when the file has it.
        const HostTensor filter = ltx::ltx_bwe_filter(a);
        auto r = make_module(ctx, ctx.placement.vae, "audio VAE", [&a, &filter](GraphBuilder& gb) {
            ggml_tensor* z = gb.input(HostTensor({a.latent_bins, 2, a.latent_channels, 1}));
            return std::vector<ggml_tensor*>{
                ltx::build_ltx_audio_decode(gb.nn(), a, z, a.has_bwe ? gb.input(filter) : nullptr)};
        });
        if (!r.ok()) return r.status();
        ar = std::move(*r);
    }
    std::unique_ptr<ModuleRunner> er;
    if (video.has_encoder) {
        const int s = video.space_scale();
        auto r =
            make_module(ctx, ctx.placement.vae, "video VAE encoder", [&video, s](GraphBuilder& gb) {
                return std::vector<ggml_tensor*>{
                    ltx::build_ltx_encode(gb.nn(), video, gb.input(HostTensor({s, s, 3, 1})))};
            });
        if (!r.ok()) return r.status();
        er = std::move(*r);
    }
    return std::make_unique<LtxAutoencoder>(video, audio, std::move(*vr), std::move(ar),
                                            std::move(er));
}

// -i and --end-img: each image's latent is held at its latent frame (-i: frame 0; --end-img:
// the keyframe appended after the video's, or frame 0 of a one-frame video), sampled with the
// mask 1 - --strength (its tokens at that fraction of each step's timestep, the prediction
// blended back towards it), as the reference's image-to-video and FLF2V do; the sound and the
// other frames are sampled as usual.
Result<VideoConditions> frame_conditions(LtxAutoencoder& vae, const GenerateOptions& o, int width,
                                         int height, sampling::Rng& rng) {
    VideoConditions vc;
    if (!o.init_image && !o.end_image) return vc;
    const int64_t w = width / 32, h = height / 32, t = latent_frames(o), plane = w * h;
    const int64_t planes = static_cast<int64_t>(request_channels(o, width, height)) * t;
    vc.held_channels = static_cast<int>(kVideoChannels);
    vc.frame_keep.assign(static_cast<size_t>(t), 1.0f);
    vc.latent.assign(static_cast<size_t>(plane * planes), 0.0f);
    const float keep = 1.0f - std::clamp(o.strength, 0.0f, 1.0f);
    auto hold = [&](const Image& image, int64_t frame, const char* what) -> Status {
        auto enc = vae.encode(image_to_tensor(fit_input_image(image, width, height)), rng);
        if (!enc.ok()) return enc.status().with_context(std::string("LTX-2: encoding ") + what);
        if (enc->dim(0) != w || enc->dim(1) != h || enc->dim(2) != kVideoChannels) {
            return Status::Error(std::string("LTX-2: the VAE encoded ") + what +
                                 " to a latent of another shape");
        }
        vc.frame_keep[static_cast<size_t>(frame)] = keep;
        for (int64_t c = 0; c < kVideoChannels; ++c) {
            std::copy_n(enc->data.begin() + c * plane, plane,
                        vc.latent.begin() + (c * t + frame) * plane);
        }
        return Status::Ok();
    };
    if (o.init_image) {
        GGDIFF_TRY(hold(*o.init_image, 0, "the first frame (-i)"));
        vc.used_init_image = true;
    }
    if (o.end_image) {
        GGDIFF_TRY(hold(*o.end_image, t - 1, "the last frame (--end-img)"));
    }
    return vc;
}

Result<std::unique_ptr<LtxText>> make_text(const FamilyContext& ctx,
                                           const models::LtxTextConfig& cfg,
                                           std::shared_ptr<const GemmaTokenizer> tok) {
    // Both runners declare their weights in ltx_prepare_text; make_module's declaration is a
    // one-token run of each.
    auto llm = make_module(ctx, ctx.placement.te, "Gemma 3", [&cfg](GraphBuilder& gb) {
        std::vector<ggml_tensor*> states;
        models::build_gemma(gb.nn(), cfg.llm, gb.input(HostTensor({cfg.llm.hidden, 1, 1})),
                            gb.input_i32({0}, {1}), 0, models::GemmaMasks{}, &states);
        return states;
    });
    if (!llm.ok()) return llm.status();
    auto proj = make_module(ctx, ctx.placement.te, "LTX text projection", [&cfg](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{models::build_ltx_text_projection(
            gb.nn(), cfg, gb.input(HostTensor({cfg.features(), 1, 1})))};
    });
    if (!proj.ok()) return proj.status();
    return std::make_unique<LtxText>(ctx.index, cfg, std::move(tok), std::move(*llm),
                                     std::move(*proj));
}

Result<Family> load(const FamilyContext& ctx) {
    const std::string name = ctx.recipe->display;
    const std::string& pred = ctx.options.prediction;
    if (!pred.empty() && pred != "flux_flow" && pred != "sd3_flow") {
        return Status::Error("--prediction " + pred + " does not apply to " + name +
                             " models (they predict flow)");
    }
    const std::string proj = "text_embedding_projection.";
    if (!ctx.index.has_prefix(proj) ||
        !ctx.index.has_prefix(std::string(kDit) + "video_embeddings_connector.")) {
        return Status::Error(name +
                             " needs its text projections and embeddings connectors: pass "
                             "--embeddings-connectors ltx-2.3-22b-dev_embeddings_connectors."
                             "safetensors (no " +
                             (ctx.index.has_prefix(proj)
                                  ? std::string(kDit) + "video_embeddings_connector.*"
                                  : proj + "*") +
                             " tensors in the files given)");
    }
    auto dit = models::detect_ltx_dit(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    if (!ctx.index.has_prefix(kLlm)) {
        return Status::Error(name +
                             " needs its Gemma 3 12B text encoder: pass --llm "
                             "gemma-3-12b-it-qat-UD-Q4_K_XL.gguf");
    }
    auto text = models::detect_ltx_text(ctx.index, kLlm);
    if (!text.ok()) return text.status().with_context("--llm / --embeddings-connectors");
    if (text->out_width() != dit->context + dit->audio_context) {
        return Status::Error(string_format(
            "the text projections give %lld features per token; the DiT takes %lld (video %lld + "
            "audio %lld)",
            (long long)text->out_width(), (long long)(dit->context + dit->audio_context),
            (long long)dit->context, (long long)dit->audio_context));
    }
    std::string vae_prefix;
    if (!ltx::find_ltx_video_vae(ctx.index, &vae_prefix)) {
        return Status::Error(name +
                             " needs its video VAE: pass --vae "
                             "ltx-2.3-22b-dev_video_vae.safetensors");
    }
    auto vae = ltx::detect_ltx_video_vae(ctx.index, vae_prefix);
    if (!vae.ok()) return vae.status().with_context("--vae");
    if (vae->latent_channels != kVideoChannels || dit->in_channels != kVideoChannels ||
        vae->space_scale() != 32 || vae->time_scale() != 8) {
        return Status::Error(string_format(
            "--vae: an LTX VAE of %lld latent channels, x%d in space and x%d in time; the DiT "
            "takes %lld channels (LTX-2: 128, x32, x8)",
            (long long)vae->latent_channels, vae->space_scale(), vae->time_scale(),
            (long long)dit->in_channels));
    }
    // Without --audio-vae the audio latent is still sampled (it shares the DiT's blocks with
    // the video) but not decoded: the reference makes the same video without a sound track.
    std::optional<ltx::LtxAudioVaeConfig> audio;
    std::string audio_prefix;
    if (ltx::find_ltx_audio_vae(ctx.index, &audio_prefix)) {
        auto acfg = ltx::detect_ltx_audio_vae(ctx.index, audio_prefix);
        if (!acfg.ok()) return acfg.status().with_context("--audio-vae");
        if (acfg->latent_channels != dit->audio_channels || acfg->latent_bins != dit->audio_bins) {
            return Status::Error(string_format(
                "--audio-vae: a latent of %lld channels x %lld bins; the DiT's audio stream "
                "takes %lld x %lld",
                (long long)acfg->latent_channels, (long long)acfg->latent_bins,
                (long long)dit->audio_channels, (long long)dit->audio_bins));
        }
        audio = std::move(*acfg);
    } else {
        GGDIFF_LOG_WARN(
            "%s: no audio VAE (--audio-vae ltx-2.3-22b-dev_audio_vae.safetensors): the video is "
            "made without its sound track",
            name.c_str());
    }
    std::string source;
    auto tok = models::load_gemma3_tokenizer({ctx.options.llm, ctx.main_file},
                                             ctx.options.llm_tokenizer, ctx.options.llm, &source);
    if (!tok.ok()) return tok.status().with_context("--llm tokenizer");
    GGDIFF_LOG_INFO("Gemma tokenizer: %s (%zu tokens)", source.c_str(), tok->vocab_size());

    Family f;
    f.param = sampling::Parameterization::flux_flow(2.37f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.defaults.width = 768;
    f.defaults.height = 512;
    f.latent_channels = static_cast<int>(kVideoChannels);
    f.size_multiple = 32;
    f.latent_frames = latent_frames;
    f.output_frames = output_frames;
    f.request_latent_channels = request_channels;
    f.check_request = check_request;
    f.default_sigmas = [](const GenerateOptions& o, int width, int height, int steps) {
        // The video's tokens (the keyframes not counted), as the reference counts them.
        const int64_t tokens = static_cast<int64_t>(width / 32) * (height / 32) * target_frames(o);
        return models::ltx2_sigmas(steps, tokens);
    };
    f.default_sigmas_name = "ltx2";
    GGDIFF_LOG_INFO(
        "%s: DiT %lld wide (%lld heads), audio %lld wide, %lld blocks; Gemma 3 %lld wide, %lld "
        "layers; text %s",
        name.c_str(), (long long)dit->hidden, (long long)dit->heads, (long long)dit->audio_hidden,
        (long long)dit->layers, (long long)text->llm.hidden, (long long)text->llm.layers,
        text->dual ? "video + audio projections (2.3)" : "one projection (2.0)");

    auto te = make_text(ctx, *text, std::make_shared<const GemmaTokenizer>(std::move(*tok)));
    if (!te.ok()) return te.status();
    f.text = std::move(*te);
    auto denoiser = LtxDenoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    auto ae = make_autoencoder(ctx, *vae, audio);
    if (!ae.ok()) return ae.status();
    // The request's layout (latent frames, audio steps, fps) reaches the denoiser and the
    // VAE before sampling.
    LtxDenoiser* d = denoiser->get();
    LtxAutoencoder* a = ae->get();
    f.video_conditions = [d, a](const GenerateOptions& o, int width, int height, int,
                                sampling::Rng& rng) -> Result<VideoConditions> {
        LtxLatentLayout layout;
        layout.frames = latent_frames(o);
        layout.audio_steps = audio_steps(o);
        layout.fps = static_cast<float>(std::max(1, o.fps));
        layout.keyframes = keyframes(o);
        d->set_layout(layout);
        a->set_layout(layout);
        a->set_tiling(o.vae_tiling);
        return frame_conditions(*a, o, width, height, rng);
    };
    f.takes_end_image = true;
    // --hires: the latent upscaler models (families/ltx/hires.h).
    auto upscalers = ltx::ltx_latent_upscalers(ctx, vae_prefix);
    if (!upscalers.ok()) return upscalers.status().with_context("--vae");
    f.latent_upscaler = std::move(*upscalers);
    f.lora_targets.push_back(ltx_lora_target((*denoiser)->runner(), kDit));
    f.denoiser = std::move(*denoiser);
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

extern const FamilyRecipe kLtx2Recipe = {
    "ltx2",
    "LTX-2",
    "model.diffusion_model.adaln_single.emb.timestep_embedder.linear_1.bias and "
    "audio_patchify_proj.weight",
    detect,
    load,
    "diffusion-model,llm,vae,audio-vae,embeddings-connectors",
    &kLtxLayout,
    {"transformer_blocks"}};

}  // namespace ggdiff
