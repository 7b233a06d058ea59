// The LongCat-Image recipe (Meituan): FLUX.1's DiT (double and single blocks) without a pooled
// text vector or guidance embedding, its text input 3584 wide, read from Qwen2.5-VL's final
// normed hidden states; FLUX.1's 16-channel VAE. What differs from FLUX.1, as
// stable-diffusion.cpp runs it:
// - RoPE ids: text token i at (0, i, i), the image at index 1 and references from index 2, their
//   rows and columns past the text (FluxConfig::longcat_positions);
// - the prompt in a captioning chat template whose 36 leading tokens are dropped, right-padded
//   with <|endoftext|> to 548 tokens (512 rows reach the DiT at least), quoted text spelled one
//   character per token;
// - flow prediction with the shift 3 used as FLUX's mu (e^3 ~ 20 as an SD3 shift), the discrete
//   schedule, euler, real CFG (7 by default).
// LongCat-Image-Edit is the same DiT: with -r images and the LLM's vision tower the text encoder
// reads the images too (the edit chat below); the references' latents join the DiT's sequence
// as FLUX.1 Kontext's do.
#include <optional>
#include <string>
#include <vector>

#include "core/log.h"
#include "families/flux/denoiser.h"
#include "families/flux/names.h"
#include "families/longcat/names.h"
#include "models/te/qwen_llm.h"
#include "models/te/qwen_vision.h"
#include "pipeline/family.h"
#include "pipeline/parts/kl_autoencoder.h"
#include "pipeline/parts/llm_encoder.h"
#include "pipeline/parts/qwen_vision_encoder.h"
#include "pipeline/parts/vision_chat_conditioner.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr int64_t kTextWidth = 3584;  // Qwen2.5-VL-7B: what tells LongCat from FLUX.1

bool detect(const TensorIndex& index) {
    const std::string d = kDit;
    if (!index.has(d + "img_in.weight") || index.has(d + "vector_in.in_layer.weight") ||
        !(index.has(d + "double_blocks.0.img_attn.qkv.weight") ||
          index.has(d + "double_blocks.0.img_attn.q.weight"))) {
        return false;
    }
    const TensorInfo* txt_in = index.find(d + "txt_in.weight");
    return txt_in && txt_in->shape.size() == 2 && txt_in->shape[1] == kTextWidth;
}

ChatTemplate longcat_template() {
    ChatTemplate t;
    t.prefix =
        "<|im_start|>system\nAs an image captioning expert, generate a descriptive text prompt "
        "based on an image content, suitable for input to a text-to-image model.<|im_end|>\n"
        "<|im_start|>user\n";
    t.suffix = "<|im_end|>\n<|im_start|>assistant\n";
    t.drop_tokens = 36;
    t.pad_tokens = 512 + 36;
    t.spell_quotes = true;
    return t;
}

// LongCatEditPipeline's chat (with -r images and a vision tower): the editing system prompt,
// then <|vision_start|><|image_pad|>...<|vision_end|> per reference, the prompt and the suffix;
// 67 tokens dropped, padded to 579. The tower's rows replace token embeddings from token 42 on,
// each next image 7 tokens after the previous one's rows: the reference's constants, whatever
// the tokenizer made of the system prompt (with the real one the image pads start at 68).
ChatTemplate longcat_edit_template(const std::vector<int64_t>& image_tokens) {
    ChatTemplate t = longcat_template();
    t.prefix =
        "<|im_start|>system\nAs an image editing expert, first analyze the content and "
        "attributes of the input image(s). Then, based on the user's editing instructions, "
        "clearly and precisely determine how to modify the given image(s), ensuring that only "
        "the specified parts are altered and all other aspects remain consistent with the "
        "original(s).<|im_end|>\n<|im_start|>user\n";
    for (int64_t n : image_tokens) {
        t.prefix += "<|vision_start|>";
        for (int64_t k = 0; k < n; ++k) t.prefix += "<|image_pad|>";
        t.prefix += "<|vision_end|>";
    }
    t.drop_tokens = 67;
    t.pad_tokens = 512 + 67;
    return t;
}

constexpr VisionChat kLongCatEditChat = {longcat_edit_template, 42, 7};

Result<Family> load(const FamilyContext& ctx) {
    const std::string name = ctx.recipe->display;
    auto dit = models::detect_flux(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    dit->longcat_positions = true;
    if (!ctx.index.has_prefix(kLlm)) {
        return Status::Error(name +
                             " needs its text encoder (Qwen2.5-VL-7B): pass it with --llm "
                             "FILE");
    }
    auto llm = models::detect_qwen_llm(ctx.index, kLlm);
    if (!llm.ok()) return llm.status().with_context("--llm");
    if (llm->hidden != dit->context_dim) {
        return Status::Error(string_format(
            "the text encoder is %lld wide, the DiT's txt_in takes %lld: not LongCat's "
            "Qwen2.5-VL-7B",
            (long long)llm->hidden, (long long)dit->context_dim));
    }
    if (!ctx.index.has_prefix("first_stage_model.")) {
        return Status::Error(name +
                             " needs FLUX.1's 16-channel VAE (ae.safetensors): pass it "
                             "with --vae FILE");
    }
    auto vae = models::detect_vae(ctx.index);
    if (!vae.ok()) return vae.status();
    if (vae->z_channels != dit->latent_channels()) {
        return Status::Error(string_format(
            "the VAE has %d latent channels but the DiT takes %lld (LongCat needs FLUX.1's "
            "16-channel VAE, ae.safetensors)",
            vae->z_channels, (long long)dit->latent_channels()));
    }
    vae->scale_factor = 0.3611f;
    vae->shift_factor = 0.1159f;
    // LongCat-Image-Edit: the LLM's vision tower (in the LLM file, or --llm_vision).
    std::optional<models::QwenVisionConfig> vision;
    if (models::has_qwen_vision(ctx.index, kLlm)) {
        auto v = models::detect_qwen_vision(ctx.index, kLlm);
        if (!v.ok()) {
            return v.status().with_context(ctx.options.llm_vision.empty() ? "--llm"
                                                                          : "--llm_vision");
        }
        if (v->out_dim != llm->hidden) {
            return Status::Error(string_format(
                "the vision tower's merger gives rows of %lld, the LLM is %lld wide: not this "
                "LLM's vision tower",
                (long long)v->out_dim, (long long)llm->hidden));
        }
        vision = *v;
    } else if (!ctx.options.llm_vision.empty()) {
        return Status::Error("--llm_vision " + ctx.options.llm_vision +
                             ": no Qwen2.5-VL vision tower found in it");
    }
    auto tokenizer = load_llm_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();

    Family f;
    f.param = sampling::Parameterization::flux_flow(3.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.latent_channels = static_cast<int>(dit->latent_channels());
    f.latent_rgb = LatentRgb::Flux;
    f.uses_cfg = true;
    f.uses_guidance = false;
    f.ref_image_multiple = 16;
    f.skips_layers = true;
    f.skip_layer_count = dit->depth + dit->depth_single;
    GGDIFF_LOG_INFO(
        "%s: %d double and %d single blocks, hidden %lld, %lld heads; LLM %lld "
        "layers%s",
        name.c_str(), dit->depth, dit->depth_single, (long long)dit->hidden, (long long)dit->heads,
        (long long)llm->layers,
        vision ? " with a vision tower (LongCat-Image-Edit: -r images are read by the text encoder "
                 "too)"
               : "");

    auto encoder =
        LlmTextEncoder::create(ctx, ctx.placement.te, *llm, *tokenizer, "LLM", longcat_template());
    if (!encoder.ok()) return encoder.status();
    // The tower is small next to the LLM: it stays on the text encoder's first device.
    std::unique_ptr<QwenVisionEncoder> tower;
    if (vision) {
        auto v = QwenVisionEncoder::create(ctx, ctx.placement.te.first_device_only(), *vision);
        if (!v.ok()) return v.status();
        tower = std::move(*v);
    }
    f.text = std::make_unique<VisionChatConditioner>(std::move(*encoder), std::move(tower),
                                                     longcat_template(), kLongCatEditChat);

    auto denoiser = FluxDenoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(flux_lora_target((*denoiser)->runner(), dit->prefix));
    f.denoiser = std::move(*denoiser);

    auto ae = make_sd_autoencoder(ctx, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

extern const FamilyRecipe kLongCatRecipe = {
    "longcat",
    "LongCat-Image",
    "model.diffusion_model.img_in.weight, double_blocks.0.img_attn.qkv (or .q).weight and a "
    "txt_in.weight taking 3584 inputs (Qwen2.5-VL-7B)",
    detect,
    load,
    "diffusion-model,llm,llm_vision,vae",
    &kLongCatLayout,
    {"double_blocks", "single_blocks"},
    /*circular=*/true};

}  // namespace ggdiff
