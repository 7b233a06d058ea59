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
#include "families/flux/llm_flux.h"
#include "families/longcat/names.h"
#include "models/te/qwen_llm.h"
#include "models/te/qwen_vision.h"
#include "pipeline/family.h"
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
    auto parts = detect_llm_flux_parts(ctx, *dit, "Qwen2.5-VL-7B", "qwen_2.5_vl_7b.safetensors");
    if (!parts.ok()) return parts.status();
    // LongCat-Image-Edit: the LLM's vision tower (in the LLM file, or --llm_vision).
    auto vision = find_qwen_vision_tower(ctx, kLlm, parts->llm.hidden);
    if (!vision.ok()) return vision.status();

    Family f;
    f.param = sampling::Parameterization::flux_flow(3.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    GGDIFF_LOG_INFO(
        "%s: %d double and %d single blocks, hidden %lld, %lld heads; LLM %lld "
        "layers%s",
        name.c_str(), dit->depth, dit->depth_single, (long long)dit->hidden, (long long)dit->heads,
        (long long)parts->llm.layers,
        *vision ? " with a vision tower (LongCat-Image-Edit: -r images are read by "
                  "the text encoder too)"
                : "");

    auto encoder = LlmTextEncoder::create(ctx, ctx.placement.te, parts->llm, parts->tokenizer,
                                          "LLM", longcat_template());
    if (!encoder.ok()) return encoder.status();
    // The tower is small next to the LLM: it stays on the text encoder's first device.
    std::unique_ptr<QwenVisionEncoder> tower;
    if (*vision) {
        auto v = QwenVisionEncoder::create(ctx, ctx.placement.te.first_device_only(), **vision);
        if (!v.ok()) return v.status();
        tower = std::move(*v);
    }
    f.text = std::make_unique<VisionChatConditioner>(std::move(*encoder), std::move(tower),
                                                     longcat_template(), kLongCatEditChat);
    GGDIFF_TRY(add_llm_flux_parts(ctx, *dit, *parts, f));
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
