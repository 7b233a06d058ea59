// The ERNIE-Image recipe (Baidu's ERNIE-Image): the ERNIE-Image DiT (families/ernie/dit.h)
// conditioned on Ministral 3 3B's language model, the FLUX.2 VAE (32 channels, patchified 2x2
// into the DiT's 128). As stable-diffusion.cpp runs it:
// - the text: the raw prompt (no chat template) after one <s>, no padding, the prompt's A1111
//   emphasis weighting its tokens' states; the condition is the residual stream after 25 of
//   the 26 layers (Hugging Face's hidden_states[-2], no final norm). The LLM is Mistral-type
//   (32 query and 8 key/value heads of 128, no biases, RMSNorm eps 1e-5) with RoPE theta 1e6
//   on the two halves of each head (not FLUX.2 dev's 1e9); its vision tower and projector are
//   not read;
// - flow prediction with shift 4 on the discrete schedule, euler, cfg 7 (the engine default),
//   512x512 when no size is given (the reference's; the model is made for about 1024x1024).
#include <string>
#include <vector>

#include "core/log.h"
#include "families/ernie/denoiser.h"
#include "families/ernie/dit.h"
#include "families/ernie/names.h"
#include "families/flux2/mistral_text.h"
#include "families/flux2/vae.h"
#include "io/name_util.h"
#include "models/te/qwen_llm.h"
#include "pipeline/family.h"
#include "pipeline/parts/dit_lora_names.h"
#include "pipeline/parts/llm_encoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr const char* kVae = "first_stage_model.";

// The layer whose output is the condition (0-based: the 25th of Ministral 3 3B's 26).
constexpr int kTextLayer = 24;

bool detect(const TensorIndex& index) {
    return models::is_ernie_image(index, kDit);
}

ChatTemplate ernie_template() {
    ChatTemplate t;
    t.prefix = "<s>";
    t.out_layers = {kTextLayer};
    return t;
}

// The DiT's names are diffusers' ErnieImageTransformer2DModel names: one table serves the
// original forms (kohya "lora_unet_", ComfyUI "diffusion_model.") and diffusers / PEFT
// ("transformer.").
std::vector<std::string> ernie_lora_keys(const std::string& weight) {
    std::vector<std::string> keys;
    if (!ends_with(weight, ".weight")) return keys;
    const std::string path = weight.substr(0, weight.size() - std::string(".weight").size());
    dit_lora::original_keys(path, &keys);
    dit_lora::diffusers_keys(path, &keys);
    return keys;
}

std::vector<LoraRowKey> no_row_keys(const std::string&, const std::vector<int64_t>&) {
    return {};
}

Result<std::shared_ptr<const MistralTokenizer>> ernie_tokenizer(const FamilyContext& ctx) {
    auto tok = load_mistral_tokenizer(ctx, kLlm);
    if (tok.ok() || !ctx.options.llm_tokenizer.empty()) return tok;
    return Status::Error(
        "ERNIE-Image needs the Ministral 3 tokenizer: pass --llm-tokenizer with its tekken.json "
        "or tokenizer.json (the tokenizer/ folder of baidu/ERNIE-Image), or put one beside the "
        "--llm file (" +
        tok.status().message() + ")");
}

Result<Family> load(const FamilyContext& ctx) {
    // Everything is checked before any weight is read: configs, the VAE, the tokenizer.
    auto dit = models::detect_ernie_image(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    if (dit->out_channels != dit->in_channels) {
        return Status::Error(
            string_format("ERNIE-Image: the DiT takes %lld latent channels and predicts %lld",
                          (long long)dit->in_channels, (long long)dit->out_channels));
    }
    const std::string& pred = ctx.options.prediction;
    if (!pred.empty() && pred != "sd3_flow") {
        return Status::Error("--prediction " + pred +
                             " does not apply to ERNIE-Image (it predicts sd3_flow)");
    }
    if (!ctx.index.has_prefix(kLlm)) {
        return Status::Error(
            "ERNIE-Image needs its text encoder: pass --llm with Ministral 3 3B's language model "
            "(e.g. ministral-3-3b.safetensors)");
    }
    auto llm = models::detect_mistral_llm(ctx.index, kLlm);
    if (!llm.ok()) return llm.status().with_context("--llm");
    llm->rope_theta = 1e6f;  // Ministral 3's; detect_mistral_llm sets Mistral Small's 1e9
    if (llm->layers <= kTextLayer) {
        return Status::Error(string_format(
            "the text encoder has %lld layers; ERNIE-Image reads the output of layer %d "
            "(Ministral 3 3B has 26)",
            (long long)llm->layers, kTextLayer + 1));
    }
    if (llm->hidden != dit->text_width) {
        return Status::Error(string_format(
            "the text encoder is %lld wide, the ERNIE-Image DiT takes text %lld wide: not its "
            "encoder (Ministral 3 3B)",
            (long long)llm->hidden, (long long)dit->text_width));
    }
    if (!ctx.index.has_prefix(kVae)) {
        return Status::Error(
            "ERNIE-Image needs the FLUX.2 VAE (32 latent channels): pass --vae "
            "flux2-vae.safetensors");
    }
    auto vae = models::detect_vae(ctx.index, kVae);
    if (!vae.ok()) return vae.status().with_context("--vae");
    if (vae->z_channels * 4 != dit->in_channels) {
        return Status::Error(string_format(
            "the VAE has %d latent channels but the ERNIE-Image DiT takes %lld (= 4 x 32: it "
            "uses the FLUX.2 VAE, flux2-vae.safetensors)",
            vae->z_channels, (long long)dit->in_channels));
    }
    auto tokenizer = ernie_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();
    if ((*tokenizer)->token_to_id("<s>") < 0) {
        return Status::Error("the Mistral tokenizer has no <s> token: not Ministral 3's");
    }

    Family f;
    f.param = sampling::Parameterization::flow(4.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.latent_channels = static_cast<int>(dit->in_channels);
    f.latent_rgb = LatentRgb::Flux2;
    f.uses_cfg = true;
    f.size_multiple = 16 * dit->patch;
    GGDIFF_LOG_INFO(
        "ERNIE-Image: DiT %lld wide, %lld layers, %lld heads, MLP %lld; Ministral %lld wide, "
        "%lld layers",
        (long long)dit->hidden, (long long)dit->layers, (long long)dit->heads, (long long)dit->ffn,
        (long long)llm->hidden, (long long)llm->layers);

    const ChatTemplate tmpl = ernie_template();
    auto encoder = LlmTextEncoder::create(ctx, ctx.placement.te, *llm, *tokenizer, "LLM", tmpl);
    if (!encoder.ok()) return encoder.status();
    f.text = std::make_unique<LlmConditioner>(std::move(*encoder), tmpl);

    auto denoiser = ErnieImageDenoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(dit_lora::dit_lora_target((*denoiser)->runner(), "ERNIE-Image DiT",
                                                       kDit, ernie_lora_keys, no_row_keys));
    f.denoiser = std::move(*denoiser);

    auto ae = Flux2Autoencoder::create(ctx, ctx.placement.vae, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

extern const FamilyRecipe kErnieImageRecipe = {
    "ernie_image",
    "ERNIE-Image",
    "model.diffusion_model.layers.0.adaLN_sa_ln.weight (the shared-adaLN DiT)",
    detect,
    load,
    "llm,vae",
    &kErnieImageLayout,
    {"layers"},
    /*circular=*/true};

}  // namespace ggdiff
