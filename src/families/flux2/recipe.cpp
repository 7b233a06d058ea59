// The FLUX.2 recipe. dev conditions on Mistral Small 3.x (families/flux2/mistral_text.h);
// klein (4B / 9B, distilled, and their base models) on a Qwen3
// language model: the prompt in Qwen's chat template with an empty thinking block, right-
// padded with <|endoftext|> to 512 tokens (the padding hidden as keys), and the residual
// stream after layers 9, 18 and 27 concatenated on the feature axis. The FLUX.2 DiT (shared
// modulation, no guidance or pooled vector) predicts the flow velocity; the 32-channel FLUX.2
// VAE, patchified 2x2 and batch-normalized, decodes. Reference images (-r) join the DiT's
// sequence as extra tokens, each with its own index (10, 20, ...), resized to about the
// output's pixel count in multiples of 16. Defaults as stable-diffusion.cpp has them: euler
// on the flux2 schedule (Black Forest Labs' empirical shift from the size and step count;
// shift 1 for other schedules), cfg 7 (klein users pass --cfg-scale 1, base models ~4).
#include <string>

#include "core/log.h"
#include "families/flux2/denoiser.h"
#include "families/flux2/mistral_text.h"
#include "families/flux2/names.h"
#include "families/flux2/vae.h"
#include "models/te/qwen_llm.h"
#include "pipeline/family.h"
#include "pipeline/parts/llm_encoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr const char* kVae = "first_stage_model.";

bool detect(const TensorIndex& index) {
    const std::string d = kDit;
    return index.has(d + "double_stream_modulation_img.lin.weight") &&
           index.has(d + "img_in.weight");
}

// klein's prompt: the residual stream after layers 9, 18 and 27 of 512 padded tokens.
ChatTemplate klein_template() {
    ChatTemplate t;
    t.prefix = "<|im_start|>user\n";
    t.suffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
    t.out_layers = {8, 17, 26};
    t.pad_tokens = 512;
    return t;
}

Result<Family> load(const FamilyContext& ctx) {
    // Everything is checked before any weight is read: configs, the VAE, the tokenizer.
    auto dit = models::detect_flux2(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    // FLUX.2 predicts flow with FLUX's time map (the model's timestep is sigma).
    const std::string& pred = ctx.options.prediction;
    if (!pred.empty() && pred != "flux_flow" && pred != "flux2_flow") {
        return Status::Error("--prediction " + pred +
                             " does not apply to FLUX.2 models (they predict flux2_flow)");
    }
    if (!ctx.index.has_prefix(kLlm)) {
        return Status::Error(
            "FLUX.2 needs its text encoder: pass --llm qwen_3_4b.safetensors (klein 4B), "
            "qwen_3_8b (klein 9B) or the Mistral Small 3.x LLM (FLUX.2-dev)");
    }
    // The text model tells klein (Qwen3: q/k norms) from dev (Mistral Small 3.x).
    auto mistral = models::detect_mistral_llm(ctx.index, kLlm);
    const bool dev = mistral.ok();
    auto llm = dev ? mistral : models::detect_qwen_llm(ctx.index, kLlm);
    if (!llm.ok()) return llm.status().with_context("--llm");
    if (!ctx.index.has_prefix(kVae)) {
        return Status::Error("FLUX.2 needs its 32-channel VAE: pass --vae flux2-vae.safetensors");
    }
    auto vae = models::detect_vae(ctx.index, kVae);
    if (!vae.ok()) return vae.status().with_context("--vae");
    if (vae->z_channels * 4 != dit->in_channels) {
        return Status::Error(string_format(
            "the VAE has %d latent channels but the FLUX.2 DiT takes %lld (%lld = 4 x 32: FLUX.2 "
            "uses its own VAE, flux2-vae.safetensors)",
            vae->z_channels, (long long)dit->in_channels, (long long)dit->in_channels));
    }
    const ChatTemplate tmpl = dev ? flux2_dev_template() : klein_template();
    if (tmpl.width(llm->hidden) != dit->context_dim) {
        return Status::Error(string_format(
            "the text encoder is %lld wide (3 layers: %lld), the FLUX.2 DiT's txt_in takes %lld: "
            "not this model's encoder (klein 4B: Qwen3-4B, klein 9B: Qwen3-8B, dev: Mistral "
            "Small 3.x)",
            (long long)llm->hidden, (long long)tmpl.width(llm->hidden),
            (long long)dit->context_dim));
    }
    std::shared_ptr<const MistralTokenizer> mistral_tok;
    std::shared_ptr<const Qwen2Tokenizer> qwen_tok;
    if (dev) {
        auto t = load_mistral_tokenizer(ctx, kLlm);
        if (!t.ok()) return t.status();
        mistral_tok = std::move(*t);
    } else {
        auto t = load_llm_tokenizer(ctx);
        if (!t.ok()) return t.status();
        qwen_tok = std::move(*t);
    }

    Family f;
    f.variant = dev ? "dev" : "klein";
    f.param = sampling::Parameterization::flux_flow(dit->guidance_embed ? 1.15f : 1.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.defaults.width = f.defaults.height = 1024;
    f.defaults.schedule = sampling::ScheduleKind::Flux2;
    f.latent_channels = static_cast<int>(dit->in_channels);
    f.latent_rgb = LatentRgb::Flux2;
    f.uses_cfg = true;
    f.uses_guidance = dit->guidance_embed;  // FLUX.2-dev's guidance_in
    f.ref_image_multiple = 16;
    f.size_multiple = 16;
    // Skip-layer guidance numbers the double blocks first, then the single blocks.
    f.skips_layers = true;
    f.skip_layer_count = dit->depth + dit->depth_single;
    GGDIFF_LOG_INFO(
        "FLUX.2 %s: %d double and %d single blocks, hidden %lld, %lld heads; %s %lld wide, "
        "%lld layers",
        f.variant.c_str(), dit->depth, dit->depth_single, (long long)dit->hidden,
        (long long)dit->heads, dev ? "Mistral" : "Qwen3", (long long)llm->hidden,
        (long long)llm->layers);

    if (dev) {
        auto text = make_flux2_dev_conditioner(ctx, *llm, mistral_tok);
        if (!text.ok()) return text.status();
        f.text = std::move(*text);
    } else {
        auto encoder = LlmTextEncoder::create(ctx, ctx.placement.te, *llm, qwen_tok, "LLM", tmpl);
        if (!encoder.ok()) return encoder.status();
        f.text = std::make_unique<LlmConditioner>(std::move(*encoder), tmpl);
    }

    auto denoiser = Flux2Denoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(flux2_lora_target((*denoiser)->runner()));
    f.denoiser = std::move(*denoiser);

    auto ae = Flux2Autoencoder::create(ctx, ctx.placement.vae, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

extern const FamilyRecipe kFlux2Recipe = {
    "flux2",
    "FLUX.2",
    "model.diffusion_model.double_stream_modulation_img.lin.weight and img_in.weight",
    detect,
    load,
    "vae,llm",
    &kFlux2Layout,
    {"double_blocks", "single_blocks"},
    /*circular=*/true};

}  // namespace ggdiff
