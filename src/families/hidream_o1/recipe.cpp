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
// - edit (-r): the references are read by the file's Qwen3-VL vision tower (model.visual.*)
//   into the prompt and their pixels join the image's patches (families/hidream_o1/edit.h).
#include <string>
#include <vector>

#include "core/log.h"
#include "families/hidream_o1/dit.h"
#include "families/hidream_o1/edit.h"
#include "families/hidream_o1/names.h"
#include "models/te/qwen_llm.h"
#include "pipeline/family.h"
#include "pipeline/parts/dit_lora_names.h"
#include "pipeline/parts/llm_encoder.h"
#include "pipeline/parts/pixel_space.h"
#include "pipeline/parts/qwen3_vision_encoder.h"

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
// network itself runs in the denoiser); in the edit mode with the vision tower's rows of each
// reference in place of its <|image_pad|> tokens, the reference pixels and the sequence's
// positions.
class HiDreamO1Text : public TextConditioner {
  public:
    HiDreamO1Text(const TensorIndex& index, models::QwenLlmConfig llm,
                  std::shared_ptr<const Qwen2Tokenizer> tokenizer,
                  std::unique_ptr<Qwen3VisionEncoder> vision)
        : index_(index),
          llm_(std::move(llm)),
          tokenizer_(std::move(tokenizer)),
          vision_(std::move(vision)) {}

    Result<Conditioning> encode(const TextRequest& r) override {
        const bool edit = r.ref_images && !r.ref_images->empty();
        std::string prompt = "<|im_start|>user\n";
        Conditioning c;
        std::vector<models::HiDreamO1Grid> grids;
        std::vector<std::pair<int64_t, HostTensor>> rows;
        if (edit) {
            const int count = static_cast<int>(r.ref_images->size());
            for (int i = 0; i < count; ++i) {
                const Image& image = (*r.ref_images)[static_cast<size_t>(i)];
                GGDIFF_TRY(validate_image(image));
                models::HiDreamO1EditImage e =
                    models::hidream_o1_edit_image(image, count, r.width, r.height);
                auto v = vision_->encode(e.vision);
                if (!v.ok()) {
                    return v.status().with_context("vision tower, reference image " +
                                                   std::to_string(i + 1));
                }
                const int64_t gw = e.vision.dim(0) / 32, gh = e.vision.dim(1) / 32;
                GGDIFF_LOG_DEBUG(
                    "reference image %d: %lldx%lld in the sequence, %lldx%lld for the "
                    "vision tower (%lld tokens)",
                    i + 1, (long long)e.pixels.dim(0), (long long)e.pixels.dim(1),
                    (long long)e.vision.dim(0), (long long)e.vision.dim(1), (long long)v->dim(1));
                const int64_t at =
                    static_cast<int64_t>(tokenizer_->encode(prompt + "<|vision_start|>").size());
                prompt += "<|vision_start|>";
                for (int64_t j = 0; j < gw * gh; ++j) prompt += "<|image_pad|>";
                prompt += "<|vision_end|>";
                rows.emplace_back(at, std::move(*v));
                grids.push_back({1, static_cast<int32_t>(gh), static_cast<int32_t>(gw), false});
                c.images.push_back(std::move(e.pixels));
            }
        }
        std::vector<int> ids =
            tokenizer_->encode(prompt + r.prompt + "<|im_end|>\n<|im_start|>assistant\n");
        for (const auto& [name, fallback] :
             {std::pair<const char*, int>{"<|boi_token|>", kBoiToken},
              {"<|tms_token|>", kTmsToken}}) {
            const int id = tokenizer_->token_to_id(name);
            ids.push_back(id >= 0 ? id : fallback);
        }
        GGDIFF_LOG_DEBUG("HiDream-O1 prompt: %zu tokens", ids.size());
        auto e = models::qwen_llm_embed(index_, llm_, ids);
        if (!e.ok()) return e.status();
        c.context = std::move(*e);
        if (!edit) return c;

        // The tower's rows over their <|image_pad|> tokens.
        const int64_t hidden = c.context.dim(0), tokens = c.context.dim(1);
        for (const auto& [at, v] : rows) {
            if (at + v.dim(1) > tokens || v.dim(0) != hidden) {
                return Status::Error(string_format(
                    "HiDream-O1: %lld vision rows at token %lld of a %lld-token prompt: the "
                    "tokenizer does not read <|vision_start|> / <|image_pad|> as single tokens",
                    (long long)v.dim(1), (long long)at, (long long)tokens));
            }
            std::copy(v.data.begin(), v.data.end(), c.context.data.begin() + at * hidden);
        }
        // The sequence's positions: the prompt, then the image and each reference as
        // <|vision_start|> and <|image_pad|> tokens.
        std::vector<int32_t> seq(ids.begin(), ids.end());
        auto add_grid = [&](int64_t w, int64_t h) {
            seq.push_back(models::kHiDreamO1VisionStartToken);
            seq.insert(seq.end(), static_cast<size_t>(w * h - 1), models::kHiDreamO1ImageToken);
            grids.push_back({1, static_cast<int32_t>(h), static_cast<int32_t>(w), true});
        };
        add_grid(r.width / 32, r.height / 32);
        for (const HostTensor& p : c.images) add_grid(p.dim(0) / 32, p.dim(1) / 32);
        c.positions = models::hidream_o1_sequence_positions(seq, grids);
        return c;
    }
    void end_phase() override {
        if (vision_) vision_->end_phase();
    }

  private:
    const TensorIndex& index_;
    models::QwenLlmConfig llm_;
    std::shared_ptr<const Qwen2Tokenizer> tokenizer_;
    std::unique_ptr<Qwen3VisionEncoder> vision_;
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
    // -r: the conditioner prepares the references (resized its own way); the pipeline's
    // copies (ref_image_multiple) are not read, and there is no image guidance.
    f.ref_image_guidance = false;
    auto vision = find_qwen3_vision_tower(ctx.index, kPrefix, dit->llm.hidden, "the model file");
    if (!vision.ok()) return vision.status();
    std::unique_ptr<Qwen3VisionEncoder> tower;
    if (*vision) {
        if ((*vision)->factor() != dit->patch) {
            return Status::Error(string_format(
                "the model file's vision tower reads %dx%d pixels a token, HiDream-O1's patches "
                "are %dx%d",
                (*vision)->factor(), (*vision)->factor(), dit->patch, dit->patch));
        }
        auto v = Qwen3VisionEncoder::create(ctx, ctx.placement.te.first_device_only(), **vision);
        if (!v.ok()) return v.status();
        tower = std::move(*v);
        f.ref_image_multiple = dit->patch;
    } else {
        f.ref_images_not_yet =
            "--ref-image: HiDream-O1-Image's edit mode reads the references with the vision "
            "tower of the model file (model.visual.*), and this file has none";
    }
    GGDIFF_LOG_INFO(
        "%s: Qwen3-VL language model, %lld layers, hidden %lld, %lld heads (%lld "
        "key/value), 32x32 pixel patches",
        ctx.recipe->display, (long long)dit->llm.layers, (long long)dit->llm.hidden,
        (long long)dit->llm.heads, (long long)dit->llm.kv_heads);
    f.text = std::make_unique<HiDreamO1Text>(ctx.index, dit->llm, *tokenizer, std::move(tower));
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
