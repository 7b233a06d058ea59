// The Anima recipe (CircleStone Labs' anime model on NVIDIA Cosmos-Predict2's MiniTrainDIT):
// Qwen3-0.6B-Base as text encoder plus T5's tokenizer for the DiT's LLM adapter
// (families/anima/text.h), the Anima DiT on the rectified-flow schedule with shift 3
// (families/anima/dit.h), and the Wan 2.1 VAE (Qwen Image's) on single frames. As the
// reference engine (stable-diffusion.cpp) runs it: euler on the discrete schedule, cfg 7,
// 512 x 512 when no size is given (Anima is trained near one megapixel: pass -W 1024 -H 1024).
#include <string>

#include "core/log.h"
#include "families/anima/denoiser.h"
#include "families/anima/dit.h"
#include "families/anima/names.h"
#include "families/anima/text.h"
#include "models/te/qwen_llm.h"
#include "models/vae/wan_vae.h"
#include "pipeline/family.h"
#include "pipeline/parts/llm_encoder.h"
#include "pipeline/parts/t5_encoder.h"
#include "pipeline/parts/wan_autoencoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDiffusion = "model.diffusion_model.";
constexpr const char* kDit = "model.diffusion_model.net.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr const char* kVae = "first_stage_model.";

bool detect(const TensorIndex& index) {
    return models::is_anima(index, kDit);
}

Result<Family> load(const FamilyContext& ctx) {
    // Everything is checked before any weight is read: configs, the VAE, both tokenizers.
    auto dit = models::detect_anima(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    // Anima predicts flow with SD3's time map; no other prediction can drive its DiT.
    const std::string& pred = ctx.options.prediction;
    if (!pred.empty() && pred != "sd3_flow") {
        return Status::Error("--prediction " + pred +
                             " does not apply to Anima models (they predict sd3_flow)");
    }
    if (!ctx.index.has_prefix(kLlm)) {
        return Status::Error(
            "Anima needs its Qwen3 text encoder: pass --llm qwen_3_06b_base.safetensors");
    }
    auto llm = models::detect_qwen_llm(ctx.index, kLlm);
    if (!llm.ok()) return llm.status().with_context("--llm");
    if (!llm->qk_norm || llm->hidden != dit->adapter_source) {
        return Status::Error(string_format(
            "--llm: a %s %lld wide; Anima's LLM adapter reads Qwen3-0.6B's %lld-wide states "
            "(qwen_3_06b_base.safetensors)",
            llm->qk_norm ? "Qwen3" : "Qwen2-type LLM", (long long)llm->hidden,
            (long long)dit->adapter_source));
    }
    auto vae = detect_wan21_image_vae(ctx, kVae, "Anima", dit->latent_channels);
    if (!vae.ok()) return vae.status();
    auto qwen_tok = load_llm_tokenizer(ctx);
    if (!qwen_tok.ok()) return qwen_tok.status();
    auto t5_tok = load_t5_tokenizer(ctx);
    if (!t5_tok.ok()) return t5_tok.status().with_context("Anima's LLM adapter");

    Family f;
    f.param = sampling::Parameterization::flow(3.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;  // the reference's; its docs run Anima at 6
    f.latent_channels = static_cast<int>(dit->latent_channels);
    f.latent_rgb = LatentRgb::Wan21;
    GGDIFF_LOG_INFO(
        "Anima: DiT %lld wide, %lld blocks, %lld heads; LLM adapter %lld blocks; Qwen3 %lld "
        "wide, %lld layers",
        (long long)dit->width, (long long)dit->layers, (long long)dit->heads,
        (long long)dit->adapter_layers, (long long)llm->hidden, (long long)llm->layers);

    // The adapter is small next to the DiT: it runs on the DiT's first device.
    auto text =
        AnimaConditioner::create(ctx, ctx.placement.te, ctx.placement.diffusion.first_device_only(),
                                 *llm, *dit, *qwen_tok, *t5_tok);
    if (!text.ok()) return text.status();
    f.lora_targets.push_back(
        anima_lora_target((*text)->adapter_runner(), "Anima LLM adapter", kDiffusion));

    auto denoiser = AnimaDenoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(anima_lora_target((*denoiser)->runner(), "Anima DiT", kDiffusion));
    f.text = std::move(*text);
    f.denoiser = std::move(*denoiser);

    auto ae = WanAutoencoder::create(ctx, ctx.placement.vae, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

extern const FamilyRecipe kAnimaRecipe = {
    "anima",
    "Anima",
    "model.diffusion_model.net.llm_adapter.blocks.0.cross_attn.q_proj.weight (Cosmos-Predict2 "
    "DiT with an LLM adapter)",
    detect,
    load,
    "diffusion-model,llm,vae",
    &kAnimaLayout,
    {"blocks"}};

}  // namespace ggdiff
