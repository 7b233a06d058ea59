// The Qwen Image recipes: the Qwen2.5-VL language model (text part) as text encoder with
// Qwen Image's chat template (its 34 leading tokens dropped), the Qwen Image DiT on the
// rectified-flow schedule with shift 3, and the Wan 2.1 VAE on single frames.
//
// Qwen Image Edit (2509, 2511) is a Qwen Image DiT: with -r reference images and a vision
// tower in the LLM file (or --llm_vision) the text encoder reads the images too
// (pipeline/parts/vision_chat_conditioner.h); the references' latents join the DiT's sequence. 2511
// modulates the reference tokens with timestep 0 (zero_cond_t: its marker tensor, or
// --qwen-image-zero-cond-t).
//
// Qwen Image Layered (time_text_embed.addition_t_embedding in the DiT) makes
// --qwen-image-layers + 1 RGBA layers per batch item: its latent carries them as frames,
// its 4-channel Wan VAE decodes each one, and init/reference images gain an opaque alpha.
#include <optional>
#include <string>
#include <vector>

#include "core/log.h"
#include "families/qwen_image/denoiser.h"
#include "families/qwen_image/names.h"
#include "io/name_util.h"
#include "models/te/qwen_llm.h"
#include "models/te/qwen_vision.h"
#include "pipeline/family.h"
#include "pipeline/latent_image.h"
#include "pipeline/parts/llm_encoder.h"
#include "pipeline/parts/vision_chat_conditioner.h"
#include "pipeline/parts/wan_autoencoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr const char* kVae = "first_stage_model.";

bool is_layered(const TensorIndex& index) {
    return index.has(std::string(kDit) + "time_text_embed.addition_t_embedding.weight");
}

bool detect_plain(const TensorIndex& index) {
    return models::is_qwen_image(index, kDit) && !is_layered(index);
}

bool detect_layered(const TensorIndex& index) {
    return models::is_qwen_image(index, kDit) && is_layered(index);
}

Status check_layered(const GenerateOptions& o) {
    if (o.qwen_image_layers < 0) {
        return Status::Error("--qwen-image-layers must be at least 0 (got " +
                             std::to_string(o.qwen_image_layers) + ")");
    }
    return Status::Ok();
}

int layered_frames(const GenerateOptions& o) {
    return o.qwen_image_layers + 1;
}

// RGBA in [-1, 1]; an image without alpha is opaque (grey becomes RGB first).
HostTensor rgba_input(const Image& img) {
    return image_to_tensor(img.channels == 4 ? img : convert_channels(img, 4), 4);
}

ChatTemplate qwen_image_template() {
    ChatTemplate t;
    t.prefix =
        "<|im_start|>system\nDescribe the image by detailing the color, shape, size, texture, "
        "quantity, text, spatial relationships of the objects and background:<|im_end|>\n"
        "<|im_start|>user\n";
    t.suffix = "<|im_end|>\n<|im_start|>assistant\n";
    t.drop_tokens = 34;
    return t;
}

// QwenImageEditPlusPipeline's chat: one "Picture i: <|vision_start|><|image_pad|>...
// <|vision_end|>" per reference; the states from token 64 on (after the system prompt) condition
// the DiT. The tower's rows go from token 70 on (+ "Picture 1: <|vision_start|>" with the real
// tokenizer), each next image 7 tokens after the previous one's rows ("<|vision_end|>" +
// "Picture i: <|vision_start|>").
ChatTemplate qwen_image_edit_template(const std::vector<int64_t>& image_tokens) {
    ChatTemplate t;
    t.prefix =
        "<|im_start|>system\nDescribe the key features of the input image (color, shape, size, "
        "texture, objects, background), then explain how the user's text instruction should "
        "alter or modify the image. Generate a new image that meets the user's requirements "
        "while maintaining consistency with the original input where appropriate.<|im_end|>\n"
        "<|im_start|>user\n";
    for (size_t i = 0; i < image_tokens.size(); ++i) {
        t.prefix += "Picture " + std::to_string(i + 1) + ": <|vision_start|>";
        for (int64_t k = 0; k < image_tokens[i]; ++k) t.prefix += "<|image_pad|>";
        t.prefix += "<|vision_end|>";
    }
    t.suffix = "<|im_end|>\n<|im_start|>assistant\n";
    t.drop_tokens = 64;
    return t;
}

constexpr VisionChat kQwenImageEditChat = {qwen_image_edit_template, 70, 7};

Result<Family> load(const FamilyContext& ctx) {
    const bool layered = is_layered(ctx.index);
    const std::string name = ctx.recipe->display;
    // Everything is checked before any weight is read: configs, the VAE's channels, the
    // tokenizer.
    auto dit = models::detect_qwen_image(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    // Qwen Image predicts flow with SD3's time map; no other prediction can drive its DiT.
    const std::string& pred = ctx.options.prediction;
    if (!pred.empty() && pred != "sd3_flow") {
        return Status::Error("--prediction " + pred + " does not apply to " + name +
                             " models (they predict sd3_flow)");
    }
    if (ctx.options.llm.empty() && !models::detect_qwen_llm(ctx.index, kLlm).ok()) {
        return Status::Error(name +
                             " needs its text encoder: pass --llm qwen_2.5_vl_7b.safetensors");
    }
    auto llm = models::detect_qwen_llm(ctx.index, kLlm);
    if (!llm.ok()) return llm.status().with_context("--llm");
    if (llm->hidden != dit->text_width) {
        return Status::Error(string_format(
            "the text encoder is %lld wide, the DiT's txt_in takes %lld: not Qwen Image's encoder",
            (long long)llm->hidden, (long long)dit->text_width));
    }
    if (!models::is_wan_vae(ctx.index, kVae)) {
        return Status::Error(name +
                             " needs its Wan 2.1 VAE: pass --vae qwen_image_vae.safetensors");
    }
    auto vae = models::detect_wan_vae(ctx.index, kVae);
    if (!vae.ok()) return vae.status().with_context("--vae");
    const int64_t want = layered ? 4 : 3;
    if (vae->image_channels != want) {
        return Status::Error(string_format(
            "%s needs a %lld-channel (%s) Wan VAE; this VAE decodes %lld channels%s", name.c_str(),
            (long long)want, layered ? "RGBA" : "RGB", (long long)vae->image_channels,
            layered ? " (use Qwen Image Layered's own VAE)" : " (it is Qwen Image Layered's)"));
    }
    if (vae->z_dim != dit->latent_channels) {
        return Status::Error(string_format("the VAE's latent has %lld channels, the DiT's %lld",
                                           (long long)vae->z_dim, (long long)dit->latent_channels));
    }
    // The vision tower of Qwen Image Edit (Layered reads no images through its LLM).
    std::optional<models::QwenVisionConfig> vision;
    if (!layered) {
        auto v = find_qwen_vision_tower(ctx, kLlm, llm->hidden);
        if (!v.ok()) return v.status();
        vision = *v;
    } else if (!ctx.options.llm_vision.empty()) {
        return Status::Error("--llm_vision " + ctx.options.llm_vision + ": " + name +
                             " reads no images through its text encoder");
    }
    dit->zero_cond_t = !layered && (dit->zero_cond_t || ctx.options.qwen_image_zero_cond_t);
    auto tokenizer = load_llm_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();

    Family f;
    f.param = sampling::Parameterization::flow(3.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 2.5f;
    f.defaults.width = f.defaults.height = layered ? 640 : 1024;
    f.latent_channels = static_cast<int>(dit->latent_channels);
    f.latent_rgb = LatentRgb::Wan21;
    f.ref_image_multiple = 32;
    if (layered) {
        f.check_request = check_layered;
        f.latent_frames = layered_frames;
        f.image_input = rgba_input;
    }
    GGDIFF_LOG_DEBUG("%s: DiT %lld wide, %lld blocks, %lld heads; LLM %lld wide, %lld layers",
                     name.c_str(), (long long)dit->width, (long long)dit->layers,
                     (long long)dit->heads, (long long)llm->hidden, (long long)llm->layers);
    if (vision) {
        GGDIFF_LOG_INFO(
            "%s: vision tower of %lld blocks (Qwen Image Edit: -r images are read "
            "by the text encoder too)%s",
            name.c_str(), (long long)vision->layers,
            dit->zero_cond_t ? "; reference tokens at timestep 0 (2511)" : "");
    }

    const ChatTemplate tmpl = qwen_image_template();
    auto encoder = LlmTextEncoder::create(ctx, ctx.placement.te, *llm, *tokenizer, "LLM", tmpl);
    if (!encoder.ok()) return encoder.status();
    if (layered) {
        f.text = std::make_unique<LlmConditioner>(std::move(*encoder), tmpl);
    } else {
        // The tower is small next to the LLM: it stays on the text encoder's first device.
        std::unique_ptr<QwenVisionEncoder> tower;
        if (vision) {
            auto v = QwenVisionEncoder::create(ctx, ctx.placement.te.first_device_only(), *vision);
            if (!v.ok()) return v.status();
            tower = std::move(*v);
        }
        f.text = std::make_unique<VisionChatConditioner>(std::move(*encoder), std::move(tower),
                                                         tmpl, kQwenImageEditChat);
    }

    auto denoiser = QwenImageDenoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(qwen_image_lora_target((*denoiser)->runner(), dit->prefix));
    f.denoiser = std::move(*denoiser);

    auto ae = WanAutoencoder::create(ctx, ctx.placement.vae, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

// A bare Qwen Image DiT: diffusers-style names are its own (transformer_blocks.N.attn...).
bool bare_qwen_image(const std::vector<std::string>& names) {
    bool blocks = false, img_in = false;
    for (const std::string& n : names) {
        blocks = blocks || starts_with(n, "transformer_blocks.");
        img_in = img_in || starts_with(n, "img_in.");
    }
    return blocks && img_in;
}

const ModelLayout kQwenImageLayout = {
    bare_qwen_image,
    nullptr,
    nullptr,
    nullptr,
    {"QwenImagePipeline", "QwenImageImg2ImgPipeline", "QwenImageEditPipeline",
     "QwenImageEditPlusPipeline", "QwenImageLayeredPipeline"},
    {{"transformer", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "text_encoders.llm."}},
};

}  // namespace

extern const FamilyRecipe kQwenImageLayeredRecipe = {
    "qwen_image_layered",
    "Qwen Image Layered",
    "model.diffusion_model.img_in, txt_in, txt_norm, transformer_blocks.0.attn.add_q_proj and "
    "time_text_embed.addition_t_embedding weights",
    detect_layered,
    load,
    "diffusion-model,llm,vae",
    &kQwenImageLayout,
    {"transformer_blocks"},
    /*circular=*/true};
extern const FamilyRecipe kQwenImageRecipe = {
    "qwen_image",
    "Qwen Image",
    "model.diffusion_model.img_in, txt_in, txt_norm and transformer_blocks.0.attn.add_q_proj "
    "weights",
    detect_plain,
    load,
    "diffusion-model,llm,llm_vision,vae",
    &kQwenImageLayout,
    {"transformer_blocks"},
    /*circular=*/true};

}  // namespace ggdiff
