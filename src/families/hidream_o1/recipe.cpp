// The HiDream-O1-Image recipe (HiDream.ai; Comfy-Org's hidream_o1_image(_dev)_bf16.safetensors):
// one Qwen3-VL 8B language model is both the text encoder and the diffusion network, working on
// RGB pixels in 32x32 patches (families/hidream_o1/dit.h); there is no VAE. As
// stable-diffusion.cpp (38a51f81) runs it:
// - the prompt as the user turn of a chat, with no emphasis parsing: "<|im_start|>user\n" +
//   prompt + "<|im_end|>\n<|im_start|>assistant\n<|boi_token|><|tms_token|>"; its token
//   embeddings go to the network as they are (the timestep replaces the last one);
// - flow prediction with the SD3-style shift 3, the discrete schedule, euler, real CFG (7 by
//   default; the reference's docs run the dev model at 1);
// - the starting noise scaled by eta, which is 8 unless --eta says otherwise (the ancestral
//   samplers' eta is the same value, as in the reference);
// - sizes in multiples of 32 (one token per patch).
// The file's vision tower (model.visual.*) serves the edit mode (-r), not supported yet.
#include <string>
#include <vector>

#include "core/log.h"
#include "families/hidream_o1/dit.h"
#include "families/hidream_o1/names.h"
#include "models/te/qwen_llm.h"
#include "pipeline/family.h"
#include "pipeline/parts/dit_lora_names.h"
#include "pipeline/parts/llm_encoder.h"
#include "pipeline/parts/pixel_space.h"

namespace ggdiff {
namespace {

constexpr const char* kPrefix = "model.diffusion_model.";
// The reference tokenizer's ids for the image-generation markers (Qwen2's special tokens from
// 151643 on, in its order): used when the tokenizer files do not list them.
constexpr int kBoiToken = 151669, kTmsToken = 151673;

bool detect(const TensorIndex& index) {
    const std::string p = kPrefix;
    return index.has(p + "x_embedder.proj1.weight") &&
           index.has(p + "language_model.layers.0.self_attn.q_proj.weight");
}

// The prompt's token embeddings, read from the language model's table on the host (the
// network itself runs in the denoiser).
class HiDreamO1Text : public TextConditioner {
  public:
    HiDreamO1Text(const TensorIndex& index, models::QwenLlmConfig llm,
                  std::shared_ptr<const Qwen2Tokenizer> tokenizer)
        : index_(index), llm_(std::move(llm)), tokenizer_(std::move(tokenizer)) {}

    Result<Conditioning> encode(const TextRequest& r) override {
        std::vector<int> ids = tokenizer_->encode("<|im_start|>user\n" + r.prompt +
                                                  "<|im_end|>\n<|im_start|>assistant\n");
        for (const auto& [name, fallback] :
             {std::pair<const char*, int>{"<|boi_token|>", kBoiToken},
              {"<|tms_token|>", kTmsToken}}) {
            const int id = tokenizer_->token_to_id(name);
            ids.push_back(id >= 0 ? id : fallback);
        }
        GGDIFF_LOG_DEBUG("HiDream-O1 prompt: %zu tokens", ids.size());
        auto e = models::qwen_llm_embed(index_, llm_, ids);
        if (!e.ok()) return e.status();
        Conditioning c;
        c.context = std::move(*e);
        return c;
    }
    void end_phase() override {}

  private:
    const TensorIndex& index_;
    models::QwenLlmConfig llm_;
    std::shared_ptr<const Qwen2Tokenizer> tokenizer_;
};

// LoRA keys of a weight (named below model.diffusion_model.): kohya's
// lora_unet_language_model_layers_0_..., ComfyUI's diffusion_model.language_model..., PEFT's
// transformer. / base_model.model.model. forms and the file's own model.language_model... names.
std::vector<std::string> lora_keys(const std::string& weight) {
    std::vector<std::string> keys;
    const std::string module = weight.substr(0, weight.rfind('.'));
    dit_lora::original_keys(module, &keys);
    dit_lora::diffusers_keys("model." + module, &keys);
    dit_lora::original_keys("base_model.model.model." + module, &keys);
    return keys;
}

Result<Family> load(const FamilyContext& ctx) {
    auto dit = models::detect_hidream_o1(ctx.index);
    if (!dit.ok()) return dit.status();
    auto tokenizer = load_llm_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();

    Family f;
    f.param = sampling::Parameterization::flow(3.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.defaults.eta = 8.0f;
    f.eta_scales_noise = true;
    f.latent_channels = static_cast<int>(dit->channels);
    f.latent_rgb = LatentRgb::Pixels;
    f.size_multiple = dit->patch;
    f.uses_cfg = true;
    f.vae = std::make_unique<PixelSpace>();
    f.ref_images_not_yet =
        "--ref-image: HiDream-O1-Image's edit mode (reference images read by its vision tower "
        "and joined to the image's patches) is not supported yet";
    GGDIFF_LOG_INFO(
        "%s: Qwen3-VL language model, %lld layers, hidden %lld, %lld heads (%lld "
        "key/value), 32x32 pixel patches",
        ctx.recipe->display, (long long)dit->llm.layers, (long long)dit->llm.hidden,
        (long long)dit->llm.heads, (long long)dit->llm.kv_heads);
    f.text = std::make_unique<HiDreamO1Text>(ctx.index, dit->llm, *tokenizer);
    auto denoiser = HiDreamO1Denoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(dit_lora::dit_lora_target((*denoiser)->runner(), "HiDream-O1", kPrefix,
                                                       lora_keys, nullptr));
    f.denoiser = std::move(*denoiser);
    return f;
}

}  // namespace

extern const FamilyRecipe kHiDreamO1Recipe = {
    "hidream_o1",
    "HiDream-O1-Image",
    "model.diffusion_model.x_embedder.proj1.weight and "
    "language_model.layers.0.self_attn.q_proj.weight (in the file: model.x_embedder..., "
    "model.language_model...)",
    detect,
    load,
    nullptr,
    &kHiDreamO1Layout,
    {"layers"}};

}  // namespace ggdiff
