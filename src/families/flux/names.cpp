// diffusers FluxTransformer2DModel -> FLUX.1 original names (as in the single-file
// checkpoints). diffusers keeps q, k and v (and a single block's MLP input) as separate
// linears where the original fuses them; those stay separate under names of their own
// ("img_attn.q", "single_blocks.N.mlp_in", ...), which the FLUX graph reads as such. The
// final adaLN projection is stored (scale, shift) by diffusers and (shift, scale) by the
// original, so it keeps a name of its own too ("final_layer.adaLN_scale_shift"). One table
// per block kind, read one way to rename a diffusers transformer and the other way to find
// the LoRA keys of a loaded weight.
#include "families/flux/names.h"

#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"
#include "runtime/module_runner.h"

namespace ggdiff {

namespace {

using dit_lora::Member;

// Members of transformer_blocks.N (diffusers) / double_blocks.N (original).
const Member kDoubleMembers[] = {
    {"norm1.linear", "img_mod.lin"},
    {"norm1_context.linear", "txt_mod.lin"},
    {"attn.to_q", "img_attn.q"},
    {"attn.to_k", "img_attn.k"},
    {"attn.to_v", "img_attn.v"},
    {"attn.add_q_proj", "txt_attn.q"},
    {"attn.add_k_proj", "txt_attn.k"},
    {"attn.add_v_proj", "txt_attn.v"},
    {"attn.norm_q", "img_attn.norm.query_norm", true},
    {"attn.norm_k", "img_attn.norm.key_norm", true},
    {"attn.norm_added_q", "txt_attn.norm.query_norm", true},
    {"attn.norm_added_k", "txt_attn.norm.key_norm", true},
    {"attn.to_out.0", "img_attn.proj"},
    {"attn.to_add_out", "txt_attn.proj"},
    {"ff.net.0.proj", "img_mlp.0"},
    {"ff.net.2", "img_mlp.2"},
    {"ff_context.net.0.proj", "txt_mlp.0"},
    {"ff_context.net.2", "txt_mlp.2"},
};

// Members of single_transformer_blocks.N (diffusers) / single_blocks.N (original); the
// original fuses q, k, v and mlp_in into linear1.
const Member kSingleMembers[] = {
    {"norm.linear", "modulation.lin"},
    {"attn.to_q", "q"},
    {"attn.to_k", "k"},
    {"attn.to_v", "v"},
    {"proj_mlp", "mlp_in"},
    {"proj_out", "linear2"},
    {"attn.norm_q", "norm.query_norm", true},
    {"attn.norm_k", "norm.key_norm", true},
};

const Member kTopMembers[] = {
    {"x_embedder", "img_in"},
    {"context_embedder", "txt_in"},
    {"time_text_embed.timestep_embedder.linear_1", "time_in.in_layer"},
    {"time_text_embed.timestep_embedder.linear_2", "time_in.out_layer"},
    {"time_text_embed.guidance_embedder.linear_1", "guidance_in.in_layer"},
    {"time_text_embed.guidance_embedder.linear_2", "guidance_in.out_layer"},
    {"time_text_embed.text_embedder.linear_1", "vector_in.in_layer"},
    {"time_text_embed.text_embedder.linear_2", "vector_in.out_layer"},
    // diffusers' AdaLayerNormContinuous stores (scale, shift): a name of its own.
    {"norm_out.linear", "final_layer.adaLN_scale_shift"},
    {"proj_out", "final_layer.linear"},
};

const dit_lora::BlockNames kNames{kDoubleMembers, kSingleMembers, kTopMembers};

constexpr const char* kFinalShiftScale = "final_layer.adaLN_modulation.1";
constexpr const char* kFinalScaleShift = "final_layer.adaLN_scale_shift";

// The fused q/k/v of a double block's stream in the original naming and its split parts.
const std::vector<dit_lora::FusedQkv> kFused = {
    {"img_attn.qkv", {"img_attn.q", "img_attn.k", "img_attn.v"}},
    {"txt_attn.qkv", {"txt_attn.q", "txt_attn.k", "txt_attn.v"}},
};

// A single block's linear1 rows in order: q, k, v (hidden rows each), then the MLP input.
const char* const kLinear1Parts[] = {"q", "k", "v", "mlp_in"};

// Row keys of a single block's linear1 (fused form) or of one of its split parts.
void single_row_keys(int i, const std::string& rest, int64_t rows, int64_t hidden,
                     std::vector<LoraRowKey>* out) {
    const std::string block = "single_blocks." + std::to_string(i) + ".";
    const std::string dblock = "single_transformer_blocks." + std::to_string(i) + ".";
    if (rest == "linear1") {  // diffusers' q, k, v, proj_mlp each patch their rows
        for (int j = 0; j < 4; ++j) {
            const int64_t count = j < 3 ? hidden : rows - 3 * hidden;
            std::vector<std::string> keys;
            dit_lora::diffusers_keys(
                dblock + dit_lora::diffusers_member(kLinear1Parts[j], kSingleMembers), &keys);
            dit_lora::add_row_keys(keys, {{0, j * hidden, count}}, out);
        }
        return;
    }
    for (int j = 0; j < 4; ++j) {
        if (rest != kLinear1Parts[j]) continue;  // its rows of a fused-form linear1 LoRA
        std::vector<std::string> keys;
        dit_lora::original_keys(block + "linear1", &keys);
        dit_lora::add_row_keys(keys, {{j * hidden, 0, rows}}, out);
        return;
    }
}

}  // namespace

bool DiffusersFluxMap::detect(const std::vector<std::string>& names) {
    bool blocks = false, embed = false;
    for (const std::string& n : names) {
        blocks |= starts_with(n, "single_transformer_blocks.");
        embed |= starts_with(n, "x_embedder.");
    }
    return blocks && embed;
}

bool DiffusersFluxMap::map(const std::string& name, std::string* out) {
    return dit_lora::diffusers_to_original(name, kNames, out);
}

std::vector<std::string> flux_lora_keys(const std::string& weight) {
    // The fused qkv, linear1 and the final (shift, scale) modulation are row keys.
    return dit_lora::block_lora_keys(weight, kNames);
}

std::vector<LoraRowKey> flux_lora_row_keys(const std::string& weight,
                                           const std::vector<int64_t>& shape) {
    std::vector<LoraRowKey> out;
    if (!ends_with(weight, ".weight") || shape.size() < 2) return out;
    const std::string path = weight.substr(0, weight.size() - 7);
    const int64_t rows = shape[0];
    if (dit_lora::swapped_modulation_row_keys(path, rows, kFinalShiftScale, kFinalScaleShift,
                                              "norm_out.linear", &out)) {
        return out;
    }
    int i = 0;
    std::string rest;
    if (take_indexed(path, "single_blocks.", &i, &rest)) {
        // linear1 and its split parts all read the hidden state: shape[1] is the width.
        single_row_keys(i, rest, rows, shape[1], &out);
        return out;
    }
    if (!take_indexed(path, "double_blocks.", &i, &rest)) return out;
    const std::string block = "double_blocks." + std::to_string(i) + ".";
    const std::string dblock = "transformer_blocks." + std::to_string(i) + ".";
    dit_lora::fused_qkv_row_keys(
        rest, rows, block, dblock, kFused,
        [](const char* split) { return dit_lora::diffusers_member(split, kDoubleMembers); }, &out);
    return out;
}

LoraTarget flux_lora_target(ModuleRunner& runner, const std::string& prefix) {
    return dit_lora::dit_lora_target(runner, "FLUX.1 DiT", prefix, flux_lora_keys,
                                     flux_lora_row_keys);
}

namespace {

bool bare_flux(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "double_blocks.")) return true;
    }
    return DiffusersFluxMap::detect(names);
}

}  // namespace
const ModelLayout kFluxLayout = {
    bare_flux,
    DiffusersFluxMap::detect,
    DiffusersFluxMap::map,
    "diffusers FLUX transformer layout renamed to the original",
    {"FluxPipeline", "FluxImg2ImgPipeline", "FluxKontextPipeline"},
    {{"transformer", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "text_encoders.clip_l."},
     {"text_encoder_2", "text_encoders.t5xxl."}},
};

}  // namespace ggdiff
