// The Ideogram 4 recipe: its DiT (families/ideogram4/dit.h), optionally a second, unconditional
// DiT (--uncond-diffusion-model), conditioned by the language model of Qwen3-VL-8B (--llm; its
// vision tower is not used), and the FLUX.2 VAE. As stable-diffusion.cpp (38a51f81) runs it:
// - the prompt (Ideogram's JSON prompts, or any text) as it is, without emphasis parsing, in
//   "<|im_start|>user\n...<|im_end|>\n<|im_start|>assistant\n"; the hidden states after layers
//   1, 4, 7, ..., 34 and 36 stacked per token (no template tokens dropped, no padding);
//   Qwen3-VL's text RoPE (theta 5e6);
// - the unconditional side has no text at all: the negative prompt has no effect and is never
//   encoded; the unconditional DiT runs that pass when given, else the DiT without text;
// - flow prediction with shift 1 (the model's time is 1000 - 1000 sigma), the logit-normal
//   schedule (mean 0 moved by log(latent pixels / 1024) / 2, deviation 1.75, log-SNR in
//   [-15, 18]), euler, cfg 7, 512x512 when no size is given.
#include <optional>
#include <string>
#include <vector>

#include "core/log.h"
#include "families/flux2/vae.h"
#include "families/ideogram4/dit.h"
#include "families/ideogram4/names.h"
#include "models/te/qwen_llm.h"
#include "models/vae/vae.h"
#include "pipeline/family.h"
#include "pipeline/parts/llm_encoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kUncond = "model.diffusion_model.uncond.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr const char* kVae = "first_stage_model.";
constexpr float kQwen3VlRopeTheta = 5000000.0f;

bool detect(const TensorIndex& index) {
    return models::is_ideogram4(index, kDit);
}

ChatTemplate ideogram4_template() {
    ChatTemplate t;
    t.prefix = "<|im_start|>user\n";
    t.suffix = "<|im_end|>\n<|im_start|>assistant\n";
    t.out_layers = models::ideogram4_llm_layers();
    t.plain_prompt = true;
    return t;
}

class Ideogram4Text : public TextConditioner {
  public:
    Ideogram4Text(std::unique_ptr<LlmTextEncoder> encoder, int64_t width)
        : encoder_(std::move(encoder)), width_(width) {}

    Result<Conditioning> encode(const TextRequest& r) override {
        Conditioning c;
        if (r.negative) {
            if (!r.prompt.empty()) {
                GGDIFF_LOG_WARN(
                    "Ideogram 4: the negative prompt has no effect (the unconditional pass runs "
                    "without text, as stable-diffusion.cpp runs it)");
            }
            c.context = HostTensor({width_, 0, 1});
            return c;
        }
        auto h = encoder_->encode(r.prompt, template_);
        if (!h.ok()) return h.status();
        c.context = std::move(*h);
        return c;
    }
    void end_phase() override { encoder_->end_phase(); }

  private:
    std::unique_ptr<LlmTextEncoder> encoder_;
    int64_t width_;
    ChatTemplate template_ = ideogram4_template();
};

Result<Family> load(const FamilyContext& ctx) {
    // Everything is checked before any weight is read: configs, the VAE, the tokenizer.
    auto dit = models::detect_ideogram4(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    std::optional<models::Ideogram4Config> uncond;
    if (ctx.index.has_prefix(kUncond)) {
        auto u = models::detect_ideogram4(ctx.index, kUncond);
        if (!u.ok()) return u.status().with_context("--uncond-diffusion-model");
        if (u->width != dit->width || u->heads != dit->heads || u->channels != dit->channels) {
            return Status::Error(string_format(
                "--uncond-diffusion-model: a DiT %lld wide with %lld heads; the DiT is %lld wide "
                "with %lld heads (not the same model's unconditional DiT)",
                (long long)u->width, (long long)u->heads, (long long)dit->width,
                (long long)dit->heads));
        }
        uncond = *u;
    }
    const std::string& pred = ctx.options.prediction;
    if (!pred.empty() && pred != "sd3_flow") {
        return Status::Error("--prediction " + pred +
                             " does not apply to Ideogram 4 models (they predict sd3_flow)");
    }
    if (!ctx.index.has_prefix(kLlm)) {
        return Status::Error(
            "Ideogram 4 needs its text encoder, Qwen3-VL-8B-Instruct's language model: pass it "
            "with --llm FILE");
    }
    auto llm = models::detect_qwen_llm(ctx.index, kLlm);
    if (!llm.ok()) return llm.status().with_context("--llm");
    llm->rope_theta = kQwen3VlRopeTheta;
    const ChatTemplate tmpl = ideogram4_template();
    if (!llm->qk_norm || llm->hidden != dit->text_width || llm->layers < 36) {
        return Status::Error(string_format(
            "--llm: a %s %lld wide with %lld layers; the Ideogram 4 DiT reads the states after "
            "layers 1, 4, ..., 34 and 36 of a Qwen3 %lld wide (Qwen3-VL-8B's language model: 36 "
            "layers, 4096 wide)",
            llm->qk_norm ? "Qwen3" : "Qwen2-type LLM", (long long)llm->hidden,
            (long long)llm->layers, (long long)dit->text_width));
    }
    if (!ctx.index.has_prefix(kVae)) {
        return Status::Error(
            "Ideogram 4 needs the FLUX.2 VAE: pass --vae flux2_ae.safetensors (FLUX.2-dev's)");
    }
    auto vae = models::detect_vae(ctx.index, kVae);
    if (!vae.ok()) return vae.status().with_context("--vae");
    if (vae->z_channels * 4 != dit->channels) {
        return Status::Error(string_format(
            "the VAE has %d latent channels; Ideogram 4 decodes with FLUX.2's 32-channel VAE "
            "(flux2_ae.safetensors)",
            vae->z_channels));
    }
    auto tokenizer = load_llm_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();

    Family f;
    f.param = sampling::Parameterization::flow(1.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.defaults.schedule = sampling::ScheduleKind::LogitNormal;
    f.latent_channels = static_cast<int>(dit->channels);
    f.latent_rgb = LatentRgb::Flux2;
    f.size_multiple = 16;
    f.uses_cfg = true;
    GGDIFF_LOG_INFO(
        "Ideogram 4: DiT %lld wide, %lld layers, %lld heads of %lld, MLP %lld%s; Qwen3 %lld "
        "wide, %lld layers",
        (long long)dit->width, (long long)dit->layers, (long long)dit->heads,
        (long long)dit->head_dim, (long long)dit->mlp,
        uncond
            ? string_format(" (unconditional DiT: %lld layers)", (long long)uncond->layers).c_str()
            : "",
        (long long)llm->hidden, (long long)llm->layers);

    auto encoder = LlmTextEncoder::create(ctx, ctx.placement.te, *llm, *tokenizer, "LLM", tmpl);
    if (!encoder.ok()) return encoder.status();
    f.text = std::make_unique<Ideogram4Text>(std::move(*encoder), tmpl.width(llm->hidden));

    auto denoiser =
        Ideogram4Denoiser::create(ctx, ctx.placement.diffusion, *dit, uncond ? &*uncond : nullptr);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(ideogram4_lora_target((*denoiser)->runner()));
    if (ModuleRunner* u = (*denoiser)->uncond_runner())
        f.lora_targets.push_back(ideogram4_lora_target(*u, "Ideogram 4 uncond DiT"));
    f.denoiser = std::move(*denoiser);

    auto ae = Flux2Autoencoder::create(ctx, ctx.placement.vae, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

extern const FamilyRecipe kIdeogram4Recipe = {"ideogram4",
                                              "Ideogram 4",
                                              "model.diffusion_model.embed_image_indicator.weight",
                                              detect,
                                              load,
                                              "diffusion-model,uncond-diffusion-model,llm,vae",
                                              &kIdeogram4Layout,
                                              {"layers"},
                                              /*circular=*/false,
                                              /*text_embeddings=*/false,
                                              /*high_noise_expert=*/false,
                                              /*uncond_model=*/true};

}  // namespace ggdiff
