// LTX-2.3 (Lightricks' audio-video model) as stable-diffusion.cpp (38a51f81) runs it: Gemma 3
// 12B text through the embeddings connectors (families/ltx/text.h), the audio-video DiT
// (families/ltx/dit.h), the LTX video and audio VAEs. Recognised by its DiT; not runnable yet:
// the recipe that ties the parts together (audio latents packed after the video's, the ltx2
// scheduler, the Gemma 3 tokenizer, video + audio output) is still to come (docs/ltx2.md).
#include "pipeline/family.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";

bool detect(const TensorIndex& index) {
    const std::string p = kDit;
    return index.has(p + "adaln_single.emb.timestep_embedder.linear_1.bias") &&
           index.has(p + "audio_patchify_proj.weight") && index.has(p + "patchify_proj.weight");
}

}  // namespace

extern const FamilyRecipe kLtx2Recipe = {
    "ltx2",
    "LTX-2",
    "model.diffusion_model.adaln_single.emb.timestep_embedder.linear_1.bias and "
    "audio_patchify_proj.weight",
    detect,
    nullptr,  // detect only until the recipe lands (docs/ltx2.md)
    "diffusion-model,llm,vae,audio-vae,embeddings-connectors"};

}  // namespace ggdiff
