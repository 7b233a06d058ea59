// diffusers ChromaTransformer2DModel -> Chroma's original single-file names. The blocks,
// embedders and proj_out are FLUX.1's diffusers names less the modulation linears, so
// FLUX.1's renamer takes them; the approximator is Chroma's alone: diffusers'
// PixArtAlphaTextProjection layers (linear_1, linear_2) are the original MLPEmbedders
// (in_layer, out_layer) and its RMSNorm ".weight" the original ".scale"; in_proj and out_proj
// keep their names.
#include "families/chroma/names.h"

#include "families/flux/names.h"
#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"

namespace ggdiff {

namespace {

using dit_lora::Member;

constexpr const char* kApproximator = "distilled_guidance_layer.";
constexpr const char* kLayers = "distilled_guidance_layer.layers.";
constexpr const char* kNorms = "distilled_guidance_layer.norms.";

// Members of the approximator's distilled_guidance_layer.layers.N.
const Member kLayerMembers[] = {
    {"linear_1", "in_layer"},
    {"linear_2", "out_layer"},
};

bool any_starts_with(const std::vector<std::string>& names, const char* prefix) {
    for (const std::string& n : names) {
        if (starts_with(n, prefix)) return true;
    }
    return false;
}

// Whether a name is one only the diffusers form has: its embedders and blocks, or its
// spelling of the approximator's layers and norms.
bool diffusers_only(const std::string& n) {
    for (const char* p : {"x_embedder.", "context_embedder.", "transformer_blocks.",
                          "single_transformer_blocks."}) {
        if (starts_with(n, p)) return true;
    }
    int i = 0;
    std::string rest;
    if (take_indexed(n, kLayers, &i, &rest))
        return starts_with(rest, "linear_1.") || starts_with(rest, "linear_2.");
    return take_indexed(n, kNorms, &i, &rest) && rest == "weight";
}

// The diffusers module path of an approximator module given by its original path (in_proj
// and out_proj read the same); false: not one of its linears.
bool approximator_diffusers(const std::string& original, std::string* out) {
    if (original == "distilled_guidance_layer.in_proj" ||
        original == "distilled_guidance_layer.out_proj") {
        *out = original;
        return true;
    }
    int i = 0;
    std::string rest;
    if (!take_indexed(original, kLayers, &i, &rest)) return false;
    const char* d = dit_lora::diffusers_member(rest, kLayerMembers);
    if (!d) return false;
    *out = kLayers + std::to_string(i) + "." + d;
    return true;
}

void add_unique(const std::vector<std::string>& more, std::vector<std::string>* keys) {
    for (const std::string& k : more) {
        bool seen = false;
        for (const std::string& have : *keys) seen = seen || have == k;
        if (!seen) keys->push_back(k);
    }
}

// FLUX.1's modulation linears in diffusers naming, none of which Chroma has.
bool flux_modulation(const std::string& n) {
    int i = 0;
    std::string rest;
    if (take_indexed(n, "transformer_blocks.", &i, &rest))
        return starts_with(rest, "norm1.linear.") || starts_with(rest, "norm1_context.linear.");
    if (take_indexed(n, "single_transformer_blocks.", &i, &rest))
        return starts_with(rest, "norm.linear.");
    return starts_with(n, "norm_out.linear.") || starts_with(n, "time_text_embed.");
}

// Block members of FLUX.1's diffusers form (Chroma's too) that the other diffusers DiTs lack:
// a single block's proj_mlp (FLUX.2 fuses it into to_qkv_mlp_proj; SD3 and Qwen Image have no
// single blocks) and a double block's ff_context.net.0.proj (FLUX.2: ff_context.linear_in,
// Qwen Image: txt_mlp; SD3 has it, but next to its per-block modulation).
bool flux_block_member(const std::string& n) {
    int i = 0;
    std::string rest;
    if (take_indexed(n, "single_transformer_blocks.", &i, &rest))
        return starts_with(rest, "proj_mlp.");
    return take_indexed(n, "transformer_blocks.", &i, &rest) &&
           starts_with(rest, "ff_context.net.0.proj.");
}

}  // namespace

bool DiffusersChromaMap::detect(const std::vector<std::string>& names) {
    bool approximator = false, diffusers = false, blocks = false, modulation = false;
    for (const std::string& n : names) {
        approximator = approximator || starts_with(n, kApproximator);
        diffusers = diffusers || diffusers_only(n);
        blocks = blocks || flux_block_member(n);
        modulation = modulation || flux_modulation(n);
    }
    // A later shard of a sharded transformer holds blocks only: FLUX.1's diffusers blocks
    // without their modulation are Chroma's (and rename as FLUX.1's would).
    return (approximator && diffusers) || (blocks && !modulation);
}

bool DiffusersChromaMap::map(const std::string& name, std::string* out) {
    int i = 0;
    std::string rest, mapped;
    if (take_indexed(name, kLayers, &i, &rest)) {
        if (!dit_lora::original_member(rest, kLayerMembers, &mapped)) return false;
        *out = kLayers + std::to_string(i) + "." + mapped;
        return true;
    }
    if (take_indexed(name, kNorms, &i, &rest)) {
        if (rest != "weight") return false;
        *out = kNorms + std::to_string(i) + ".scale";
        return true;
    }
    if (starts_with(name, kApproximator)) return false;  // in_proj, out_proj: the same
    return DiffusersFluxMap::map(name, out);
}

std::vector<std::string> chroma_lora_keys(const std::string& weight) {
    std::vector<std::string> keys = flux_lora_keys(weight);
    if (!ends_with(weight, ".weight") || !starts_with(weight, kApproximator)) return keys;
    const std::string path = weight.substr(0, weight.size() - 7);
    std::vector<std::string> more;
    dit_lora::diffusers_keys(path, &more);  // OneTrainer: the original name under "transformer."
    std::string d;
    if (approximator_diffusers(path, &d) && d != path) dit_lora::diffusers_keys(d, &more);
    add_unique(more, &keys);
    return keys;
}

std::vector<LoraRowKey> chroma_lora_row_keys(const std::string& weight,
                                             const std::vector<int64_t>& shape) {
    // Chroma has no final adaLN: FLUX.1's row keys are only those of the fused q/k/v and
    // linear1 (and of their split parts).
    return flux_lora_row_keys(weight, shape);
}

LoraTarget chroma_lora_target(ModuleRunner& runner, const std::string& prefix) {
    return dit_lora::dit_lora_target(runner, "Chroma DiT", prefix, chroma_lora_keys,
                                     chroma_lora_row_keys);
}

namespace {

bool bare_chroma(const std::vector<std::string>& names) {
    return any_starts_with(names, kApproximator) &&
           (any_starts_with(names, "double_blocks.") || any_starts_with(names, "img_in.") ||
            DiffusersChromaMap::detect(names));
}

}  // namespace

const ModelLayout kChromaLayout = {
    bare_chroma,
    DiffusersChromaMap::detect,
    DiffusersChromaMap::map,
    "diffusers Chroma transformer layout renamed to the original",
    {"ChromaPipeline", "ChromaImg2ImgPipeline"},
    {{"transformer", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "text_encoders.t5xxl."}},
};

}  // namespace ggdiff
