// The Boogu Image recipe (text-to-image and edit), as stable-diffusion.cpp (38a51f81) runs it:
// - the text encoder is Qwen3-VL's language model (8B: 4096 wide) read to its final normed
//   hidden states, every token kept, no padding; its text RoPE is plain RoPE with theta 5e6.
//   The prompt is the user turn after a system prompt: "<|im_start|>system\n" + SYSTEM +
//   "<|im_end|>\n<|im_start|>user\n" + prompt + "<|im_end|>\n" (no assistant turn), SYSTEM the
//   text-to-image instruction, or the edit instruction when the prompt is empty (blank);
// - the DiT (families/boogu/dit.h) on the rectified-flow schedule with shift 3.16, euler on the
//   discrete schedule, real CFG (7 by default), 512 x 512 when no size is given;
// - the 16-channel FLUX VAE (latent scale 0.3611, shift 0.1159);
// - edit (-r): the reference images' VAE latents join the DiT's sequence (resized to about the
//   output's pixel count in multiples of 16). When the LLM file has Qwen3-VL's vision tower the
//   text encoder sees them too: each image resized to about 384 x 384 pixels (multiples of the
//   tower's patch x 2) and read by the tower, the chat then the edit system prompt followed by
//   "<|vision_start|>" + one <|image_pad|> per tower row + "<|vision_end|>" for each image and
//   the prompt, the rows replacing the pads' embeddings. Without a tower (a text-only LLM
//   file) the prompt is encoded alone, as the reference then does.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/log.h"
#include "families/boogu/denoiser.h"
#include "families/boogu/dit.h"
#include "families/boogu/names.h"
#include "models/te/qwen3_vision.h"
#include "models/te/qwen_llm.h"
#include "pipeline/family.h"
#include "pipeline/parts/kl_autoencoder.h"
#include "pipeline/parts/llm_encoder.h"
#include "pipeline/parts/qwen3_vision_encoder.h"
#include "pipeline/parts/qwen_vision_encoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr const char* kVae = "first_stage_model.";

constexpr const char* kT2iSystem =
    "You are a helpful assistant that generates high-quality images based on user "
    "instructions. The instructions are as follows.";
constexpr const char* kEditSystem =
    "Describe the key features of the input image (color, shape, size, texture, objects, "
    "background), then explain how the user's text instruction should alter or modify the "
    "image. Generate a new image that meets the user's requirements while maintaining "
    "consistency with the original input where appropriate.";

bool detect(const TensorIndex& index) {
    return models::is_boogu(index, kDit);
}

ChatTemplate boogu_template(const char* system) {
    ChatTemplate t;
    t.prefix = std::string("<|im_start|>system\n") + system + "<|im_end|>\n<|im_start|>user\n";
    t.suffix = "<|im_end|>\n";
    return t;
}

bool blank(const std::string& s) {
    return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

// The size an image is resized to for the vision tower, as the reference computes it: the
// area brought to about 384 x 384, each side rounded to a multiple of patch x merge.
std::pair<int, int> tower_size(int width, int height, const models::Qwen3VisionConfig& cfg) {
    const double factor = cfg.factor();
    const double beta = std::sqrt((384.0 * 384.0) / (static_cast<double>(height) * width));
    const int h =
        std::max(cfg.factor(), static_cast<int>(std::round(height * beta / factor)) * cfg.factor());
    const int w =
        std::max(cfg.factor(), static_cast<int>(std::round(width * beta / factor)) * cfg.factor());
    return {w, h};
}

// The prompt through the chat above; with -r images and a vision tower, the edit chat that
// shows them to the LLM.
class BooguText : public TextConditioner {
  public:
    BooguText(std::unique_ptr<LlmTextEncoder> encoder,
              std::shared_ptr<const Qwen2Tokenizer> tokenizer,
              std::unique_ptr<Qwen3VisionEncoder> vision, std::string odd_tower)
        : encoder_(std::move(encoder)),
          tokenizer_(std::move(tokenizer)),
          vision_(std::move(vision)),
          odd_tower_(std::move(odd_tower)) {}

    Status check(const TextRequest& r) const override {
        if (!odd_tower_.empty() && r.ref_images && !r.ref_images->empty()) {
            return Status::Error(odd_tower_);
        }
        return Status::Ok();
    }

    Result<Conditioning> encode(const TextRequest& r) override {
        const bool refs = vision_ && r.ref_images && !r.ref_images->empty();
        auto h = refs ? encode_edit(r)
                      : encoder_->encode(
                            r.prompt, boogu_template(blank(r.prompt) ? kEditSystem : kT2iSystem));
        if (!h.ok()) return h.status();
        Conditioning c;
        c.context = std::move(*h);
        return c;
    }
    void end_phase() override {
        encoded_for_ = nullptr;
        rows_.clear();
        encoder_->end_phase();
        if (vision_) vision_->end_phase();
    }

  private:
    // The edit chat: each image's tower rows replace its <|image_pad|> tokens, found where the
    // reference finds them (the token count of the chat up to that image's <|vision_start|>).
    Result<HostTensor> encode_edit(const TextRequest& r) {
        if (encoded_for_ != r.ref_images) {
            rows_.clear();
            for (size_t i = 0; i < r.ref_images->size(); ++i) {
                const Image& image = (*r.ref_images)[i];
                GGDIFF_TRY(validate_image(image));
                const auto [w, h] = tower_size(image.width, image.height, vision_->config());
                auto rows = vision_->encode(clip_preprocess(image, w, h));
                if (!rows.ok()) {
                    return rows.status().with_context("vision tower, reference image " +
                                                      std::to_string(i + 1));
                }
                GGDIFF_LOG_DEBUG("reference image %zu: %dx%d for the vision tower, %lld tokens",
                                 i + 1, w, h, (long long)rows->dim(1));
                rows_.push_back(std::move(*rows));
            }
            encoded_for_ = r.ref_images;
        }
        ChatTemplate t = boogu_template(kEditSystem);
        std::vector<EmbeddingSplice> splices;
        for (const HostTensor& rows : rows_) {
            t.prefix += "<|vision_start|>";
            splices.push_back({static_cast<int64_t>(tokenizer_->encode(t.prefix).size()), &rows});
            for (int64_t j = 0; j < rows.dim(1); ++j) t.prefix += "<|image_pad|>";
            t.prefix += "<|vision_end|>";
        }
        return encoder_->encode(r.prompt, t, splices);
    }

    std::unique_ptr<LlmTextEncoder> encoder_;
    std::shared_ptr<const Qwen2Tokenizer> tokenizer_;
    std::unique_ptr<Qwen3VisionEncoder> vision_;
    std::string odd_tower_;  // why -r is refused (a vision tower that is not Qwen3-VL's)
    // The tower's rows of this text phase's images (the prompt and the negative prompt read
    // the same images).
    const std::vector<Image>* encoded_for_ = nullptr;
    std::vector<HostTensor> rows_;
};

Result<Family> load(const FamilyContext& ctx) {
    // Everything is checked before any weight is read: configs, the VAE, the tokenizer.
    auto dit = models::detect_boogu(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    // Boogu predicts flow with SD3's time map; no other prediction can drive its DiT.
    const std::string& pred = ctx.options.prediction;
    if (!pred.empty() && pred != "sd3_flow") {
        return Status::Error("--prediction " + pred +
                             " does not apply to Boogu Image models (they predict sd3_flow)");
    }
    if (!ctx.index.has_prefix(kLlm)) {
        return Status::Error(
            "Boogu Image needs its Qwen3-VL text encoder: pass --llm qwen_3_vl_8b.safetensors");
    }
    auto llm = models::detect_qwen_llm(ctx.index, kLlm);
    if (!llm.ok()) return llm.status().with_context("--llm");
    llm->rope_theta = 5000000.0f;  // Qwen3-VL's
    if (!llm->qk_norm || llm->hidden != dit->cap_width) {
        return Status::Error(string_format(
            "--llm: a %s %lld wide; the Boogu DiT's caption embedder reads Qwen3-VL %lld-wide "
            "states",
            llm->qk_norm ? "Qwen3" : "Qwen2-type LLM", (long long)llm->hidden,
            (long long)dit->cap_width));
    }
    auto vision = find_qwen3_vision_tower(ctx.index, kLlm, llm->hidden, "--llm");
    if (!vision.ok()) return vision.status();
    // Another tower (no position table) cannot read the images: -r is refused then, as the
    // reference, which would fail to load it, cannot edit with it either.
    std::string odd_tower;
    if (!*vision && (ctx.index.has_prefix(std::string(kLlm) + "visual.") ||
                     ctx.index.has_prefix(std::string(kLlm) + "model.visual."))) {
        odd_tower =
            "--llm: the file has a vision tower (visual.*) but not Qwen3-VL's (no "
            "visual.pos_embed.weight): Boogu Image reads -r images with Qwen3-VL's tower";
        GGDIFF_LOG_WARN("%s", odd_tower.c_str());
    }
    auto vae = detect_flux1_image_vae(ctx, kVae, "Boogu Image", dit->latent_channels);
    if (!vae.ok()) return vae.status();
    auto tokenizer = load_llm_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();

    Family f;
    f.param = sampling::Parameterization::flow(3.16f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.latent_channels = static_cast<int>(dit->latent_channels);
    f.latent_rgb = LatentRgb::Flux;
    f.uses_cfg = true;
    if (dit->ref_refiners > 0) f.ref_image_multiple = 16;
    GGDIFF_LOG_INFO(
        "Boogu Image: DiT %lld wide, %lld double + %lld single layers (%lld noise / %lld "
        "context / %lld reference refiners), %lld heads (%lld key/value); Qwen3-VL %lld wide, "
        "%lld layers%s",
        (long long)dit->width, (long long)dit->double_layers, (long long)dit->single_layers,
        (long long)dit->noise_refiners, (long long)dit->context_refiners,
        (long long)dit->ref_refiners, (long long)dit->heads, (long long)dit->kv_heads,
        (long long)llm->hidden, (long long)llm->layers,
        *vision ? " and a vision tower (-r images are read by the text encoder too)" : "");

    const ChatTemplate tmpl = boogu_template(kT2iSystem);
    auto encoder = LlmTextEncoder::create(ctx, ctx.placement.te, *llm, *tokenizer, "LLM", tmpl);
    if (!encoder.ok()) return encoder.status();
    // The tower is small next to the LLM: it stays on the text encoder's first device.
    std::unique_ptr<Qwen3VisionEncoder> tower;
    if (*vision) {
        auto v = Qwen3VisionEncoder::create(ctx, ctx.placement.te.first_device_only(), **vision);
        if (!v.ok()) return v.status();
        tower = std::move(*v);
    }
    f.text =
        std::make_unique<BooguText>(std::move(*encoder), *tokenizer, std::move(tower), odd_tower);

    auto denoiser = BooguDenoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(boogu_lora_target((*denoiser)->runner()));
    f.denoiser = std::move(*denoiser);

    auto ae = make_sd_autoencoder(ctx, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

extern const FamilyRecipe kBooguRecipe = {
    "boogu_image",
    "Boogu Image",
    "model.diffusion_model.double_stream_layers.0.img_instruct_attn.processor.img_to_q.weight",
    detect,
    load,
    "diffusion-model,llm,vae",
    &kBooguLayout,
    {"context_refiner", "noise_refiner", "ref_image_refiner", "double_stream_layers",
     "single_stream_layers"}};

}  // namespace ggdiff
