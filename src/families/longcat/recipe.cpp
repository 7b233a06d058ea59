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
// LongCat-Image-Edit (the same DiT with the LLM's vision tower reading the -r images) runs its
// references through the DiT only: reading them through the text encoder is not supported yet.
#include <string>

#include "core/log.h"
#include "families/flux/denoiser.h"
#include "families/flux/names.h"
#include "families/longcat/names.h"
#include "models/te/qwen_llm.h"
#include "models/te/qwen_vision.h"
#include "pipeline/family.h"
#include "pipeline/parts/kl_autoencoder.h"
#include "pipeline/parts/llm_encoder.h"

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

// The LLM under LongCat's template; an Edit model's vision tower is not run (yet).
class LongCatConditioner : public TextConditioner {
  public:
    LongCatConditioner(std::unique_ptr<LlmTextEncoder> encoder, bool vision)
        : encoder_(std::move(encoder)), template_(longcat_template()), vision_(vision) {}

    Result<Conditioning> encode(const TextRequest& request) override {
        GGDIFF_TRY(check(request));
        auto h = encoder_->encode(request.prompt, template_);
        if (!h.ok()) return h.status();
        Conditioning c;
        c.context = std::move(*h);
        return c;
    }
    Status check(const TextRequest& request) const override {
        if (vision_ && request.ref_images && !request.ref_images->empty()) {
            return Status::Error(
                "LongCat-Image-Edit: reading the -r images through the text encoder's vision "
                "tower is not supported yet (an LLM file without the vision tower runs them "
                "through the DiT only, as stable-diffusion.cpp does)");
        }
        return Status::Ok();
    }
    void end_phase() override { encoder_->end_phase(); }

  private:
    std::unique_ptr<LlmTextEncoder> encoder_;
    ChatTemplate template_;
    bool vision_;
};

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
    const bool vision = models::has_qwen_vision(ctx.index, kLlm);
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
        (long long)llm->layers, vision ? " with a vision tower (LongCat-Image-Edit)" : "");

    auto encoder =
        LlmTextEncoder::create(ctx, ctx.placement.te, *llm, *tokenizer, "LLM", longcat_template());
    if (!encoder.ok()) return encoder.status();
    f.text = std::make_unique<LongCatConditioner>(std::move(*encoder), vision);

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
