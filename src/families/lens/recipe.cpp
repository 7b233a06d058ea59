// The Lens recipe (Comfy-Org/Lens: Lens and Lens Turbo, one architecture): the Lens DiT
// (families/lens/dit.h) conditioned on GPT-OSS-20B's hidden states (families/lens/text.h,
// models/te/gpt_oss.h), the FLUX.2 VAE (32 channels, patchified 2x2 into the DiT's 128). As
// stable-diffusion.cpp (38a51f81) runs it:
// - the prompt in OpenAI's harmony chat format, the states after layers 6, 12, 18 and 24
//   stacked, the first 97 tokens dropped (see text.h);
// - FLUX's flow prediction (the model's time is sigma) with shift (mu) 1.83 on the discrete
//   schedule, euler, cfg 7 (the engine default; the reference's examples use 5 for Lens and 1
//   with 4 steps for Lens Turbo, which the weights cannot tell apart), 512x512 when no size
//   is given.
#include <string>
#include <vector>

#include "core/log.h"
#include "families/flux2/vae.h"
#include "families/lens/denoiser.h"
#include "families/lens/dit.h"
#include "families/lens/names.h"
#include "families/lens/text.h"
#include "models/te/gpt_oss.h"
#include "models/te/gpt_oss_tokenizer.h"
#include "models/vae/vae.h"
#include "pipeline/family.h"
#include "pipeline/parts/llm_encoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr const char* kVae = "first_stage_model.";
constexpr float kShift = 1.83f;

bool detect(const TensorIndex& index) {
    return models::is_lens(index, kDit);
}

// --llm-tokenizer, else a tokenizer.json beside the LLM, else the vocabulary inside the GGUF.
Result<std::shared_ptr<const Qwen2Tokenizer>> lens_tokenizer(const FamilyContext& ctx) {
    auto tok = load_llm_tokenizer(ctx);
    if (tok.ok() || !ctx.options.llm_tokenizer.empty()) return tok;
    const std::string& file = ctx.options.llm.empty() ? ctx.main_file : ctx.options.llm;
    auto vocab = models::read_gguf_vocab(file);
    if (vocab.ok()) {
        GGDIFF_LOG_INFO(
            "GPT-OSS tokenizer: the vocabulary in %s (%zu tokens, %zu merges; split with "
            "Qwen2's pattern as stable-diffusion.cpp splits it, the file names \"%s\")",
            file.c_str(), vocab->tokens, vocab->merges, vocab->pre.c_str());
        return std::make_shared<const Qwen2Tokenizer>(std::move(vocab->tokenizer));
    }
    return Status::Error(
        "Lens needs GPT-OSS's tokenizer (o200k_harmony): pass --llm-tokenizer with the "
        "tokenizer.json of openai/gpt-oss-20b, put it beside the --llm file, or use a GGUF that "
        "holds its vocabulary (" +
        tok.status().message() + "; " + vocab.status().message() + ")");
}

Result<Family> load(const FamilyContext& ctx) {
    // Everything is checked before any weight is read: configs, the VAE, the tokenizer.
    auto dit = models::detect_lens(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    const std::string& pred = ctx.options.prediction;
    if (!pred.empty() && pred != "flux_flow") {
        return Status::Error("--prediction " + pred +
                             " does not apply to Lens (it predicts flux_flow)");
    }
    if (!ctx.index.has_prefix(kLlm)) {
        return Status::Error(
            "Lens needs its text encoder: pass --llm with GPT-OSS-20B (e.g. "
            "gpt-oss-20b-Q8_0.gguf from unsloth/gpt-oss-20b-GGUF)");
    }
    if (!models::is_gpt_oss(ctx.index, kLlm)) {
        return Status::Error(
            "--llm: not GPT-OSS (no attention sinks or expert router in layer 0); Lens reads "
            "GPT-OSS-20B's hidden states");
    }
    auto llm = models::detect_gpt_oss(ctx.index, kLlm);
    if (!llm.ok()) return llm.status().with_context("--llm");
    const int64_t states = static_cast<int64_t>(lens_template().out_layers.size());
    if (llm->hidden != dit->text_width || dit->text_states != states) {
        return Status::Error(string_format(
            "--llm: a GPT-OSS %lld wide; the Lens DiT reads %lld states %lld wide (GPT-OSS-20B: "
            "2880, the states after layers 6, 12, 18 and 24)",
            (long long)llm->hidden, (long long)dit->text_states, (long long)dit->text_width));
    }
    if (!ctx.index.has_prefix(kVae)) {
        return Status::Error(
            "Lens needs the FLUX.2 VAE (32 latent channels): pass --vae flux2_ae.safetensors");
    }
    auto vae = models::detect_vae(ctx.index, kVae);
    if (!vae.ok()) return vae.status().with_context("--vae");
    if (vae->z_channels * 4 != dit->channels) {
        return Status::Error(string_format(
            "the VAE has %d latent channels but the Lens DiT takes %lld (= 4 x 32: it uses the "
            "FLUX.2 VAE, flux2_ae.safetensors)",
            vae->z_channels, (long long)dit->channels));
    }
    auto tokenizer = lens_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();
    for (const char* special : {"<|start|>", "<|message|>", "<|end|>", "<|channel|>"}) {
        if ((*tokenizer)->token_to_id(special) < 0) {
            return Status::Error(std::string("the LLM tokenizer has no ") + special +
                                 " token: not GPT-OSS's (o200k_harmony)");
        }
    }

    Family f;
    f.param = sampling::Parameterization::flux_flow(kShift);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.latent_channels = static_cast<int>(dit->channels);
    f.latent_rgb = LatentRgb::Flux2;
    f.uses_cfg = true;
    f.size_multiple = 16;
    GGDIFF_LOG_INFO(
        "Lens: DiT %lld wide, %lld blocks, %lld heads of %lld, MLP %lld; GPT-OSS %lld wide, %lld "
        "layers, %lld experts of %lld",
        (long long)dit->width, (long long)dit->layers, (long long)dit->heads,
        (long long)dit->head_dim, (long long)dit->mlp, (long long)llm->hidden,
        (long long)llm->layers, (long long)llm->experts, (long long)llm->intermediate);

    auto encoder = LensTextEncoder::create(ctx, ctx.placement.te, *llm, *tokenizer);
    if (!encoder.ok()) return encoder.status();
    f.text = std::move(*encoder);

    auto denoiser = LensDenoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(lens_lora_target((*denoiser)->runner(), kDit));
    f.denoiser = std::move(*denoiser);

    auto ae = Flux2Autoencoder::create(ctx, ctx.placement.vae, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

extern const FamilyRecipe kLensRecipe = {
    "lens",
    "Lens",
    "model.diffusion_model.transformer_blocks.0.img_mlp.w1.weight and "
    "transformer_blocks.0.attn.norm_added_q.weight (the Lens DiT)",
    detect,
    load,
    "diffusion-model,llm,vae",
    &kLensLayout,
    {"transformer_blocks"},
    /*circular=*/true};

}  // namespace ggdiff
