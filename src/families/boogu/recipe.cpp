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
//   output's pixel count in multiples of 16). The reference also shows them to the text
//   encoder when the LLM file has Qwen3-VL's vision tower; ggdiff does not read that tower
//   yet, so with such a file -r is refused, and without one (a text-only LLM file) the prompt
//   is encoded alone, as the reference then does.
#include <string>

#include "core/log.h"
#include "families/boogu/denoiser.h"
#include "families/boogu/dit.h"
#include "families/boogu/names.h"
#include "models/te/qwen_llm.h"
#include "pipeline/family.h"
#include "pipeline/parts/kl_autoencoder.h"
#include "pipeline/parts/llm_encoder.h"

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

// The prompt through the chat above; -r refused when the LLM file has a vision tower (which
// the reference would read).
class BooguText : public TextConditioner {
  public:
    BooguText(std::unique_ptr<LlmTextEncoder> encoder, bool vision_tower)
        : encoder_(std::move(encoder)), vision_tower_(vision_tower) {}

    Status check(const TextRequest& r) const override {
        if (vision_tower_ && r.ref_images && !r.ref_images->empty()) {
            return Status::Error(
                "Boogu Image edit with a Qwen3-VL vision tower in the --llm file is not "
                "supported yet (the reference shows the -r images to the text encoder too); "
                "pass a text-only LLM file to edit with the reference latents alone");
        }
        return Status::Ok();
    }

    Result<Conditioning> encode(const TextRequest& r) override {
        auto h =
            encoder_->encode(r.prompt, boogu_template(blank(r.prompt) ? kEditSystem : kT2iSystem));
        if (!h.ok()) return h.status();
        Conditioning c;
        c.context = std::move(*h);
        return c;
    }
    void end_phase() override { encoder_->end_phase(); }

  private:
    std::unique_ptr<LlmTextEncoder> encoder_;
    bool vision_tower_;
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
    const bool vision_tower = ctx.index.has_prefix(std::string(kLlm) + "visual.") ||
                              ctx.index.has_prefix(std::string(kLlm) + "model.visual.");
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
        vision_tower ? " and a vision tower (not read: -r is not supported with it yet)" : "");

    const ChatTemplate tmpl = boogu_template(kT2iSystem);
    auto encoder = LlmTextEncoder::create(ctx, ctx.placement.te, *llm, *tokenizer, "LLM", tmpl);
    if (!encoder.ok()) return encoder.status();
    f.text = std::make_unique<BooguText>(std::move(*encoder), vision_tower);

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
