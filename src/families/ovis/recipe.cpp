// The Ovis-Image recipe (AIDC-AI's Ovis-Image-7B): FLUX.1's DiT with SwiGLU MLPs (double blocks'
// img_mlp / txt_mlp as gate_proj, up_proj, down_proj; single blocks' linear1 carrying twice the
// MLP width), an RMSNorm on the text before txt_in, no pooled vector and no guidance
// embedding; the text from the final normed hidden states of Ovis 2.5's language model (a
// Qwen3), FLUX.1's 16-channel VAE. As stable-diffusion.cpp runs it:
// - RoPE ids: text token i at (0, i, i), the image where FLUX.1 puts it (FluxConfig);
// - the prompt after a describe-the-image instruction in the user turn (joined by a space),
//   then an empty thinking block; 28 leading tokens dropped, right-padded with <|endoftext|>
//   to 284 tokens (256 rows reach the DiT at least);
// - FLUX.1 schnell's sampling: flow prediction with mu 1 (the flux schedule by default, which
//   sets mu from the image size), euler, and real CFG (7 by default, the reference's docs use
//   5). The Ovis LLM file's vision parts (vision_model, visual_tokenizer, vte) are not read.
#include <string>

#include "core/log.h"
#include "families/flux/llm_flux.h"
#include "pipeline/family.h"
#include "pipeline/parts/llm_encoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";

bool detect(const TensorIndex& index) {
    const std::string d = kDit;
    return index.has(d + "img_in.weight") &&
           index.has(d + "double_blocks.0.img_mlp.gate_proj.weight");
}

ChatTemplate ovis_template() {
    ChatTemplate t;
    t.prefix =
        "<|im_start|>user\nDescribe the image by detailing the color, quantity, text, shape, "
        "size, texture, spatial relationships of the objects and background:";
    t.prompt_lead = " ";
    t.suffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
    t.drop_tokens = 28;
    t.pad_tokens = 256 + 28;
    return t;
}

Result<Family> load(const FamilyContext& ctx) {
    const std::string name = ctx.recipe->display;
    auto dit = models::detect_flux(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    dit->diagonal_text_ids = true;
    if (dit->vec_in_dim != 0 || dit->guidance_embed) {
        return Status::Error(name +
                             ": the DiT has vector_in or guidance_in, which Ovis-Image's "
                             "does not");
    }
    auto parts = detect_llm_flux_parts(ctx, *dit, "Ovis 2.5", "ovis_2.5.safetensors");
    if (!parts.ok()) return parts.status();

    Family f;
    f.param = sampling::Parameterization::flux_flow(1.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.defaults.schedule = sampling::ScheduleKind::Flux;
    GGDIFF_LOG_INFO(
        "%s: %d double and %d single blocks, hidden %lld, %lld heads; LLM %lld "
        "wide, %lld layers",
        name.c_str(), dit->depth, dit->depth_single, (long long)dit->hidden, (long long)dit->heads,
        (long long)parts->llm.hidden, (long long)parts->llm.layers);

    const ChatTemplate tmpl = ovis_template();
    auto encoder =
        LlmTextEncoder::create(ctx, ctx.placement.te, parts->llm, parts->tokenizer, "LLM", tmpl);
    if (!encoder.ok()) return encoder.status();
    f.text = std::make_unique<LlmConditioner>(std::move(*encoder), tmpl);
    GGDIFF_TRY(add_llm_flux_parts(ctx, *dit, *parts, f));
    return f;
}

}  // namespace

extern const FamilyRecipe kOvisImageRecipe = {
    "ovis_image",
    "Ovis-Image",
    "model.diffusion_model.img_in.weight and double_blocks.0.img_mlp.gate_proj.weight (FLUX.1's "
    "layout with SwiGLU MLPs)",
    detect,
    load,
    "diffusion-model,llm,vae",
    // FLUX.1's names: FLUX.1's own recipe, further down the registry, brings its layout (listing
    // it here would put it before Chroma's, whose diffusers names it would then claim).
    nullptr,
    {"double_blocks", "single_blocks"},
    /*circular=*/true};

}  // namespace ggdiff
