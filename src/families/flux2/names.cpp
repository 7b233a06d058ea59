// FLUX.2 names. diffusers' Flux2Transformer2DModel and BFL's single-file DiT name the same
// linears: one table below, read one way to rename a diffusers transformer and the other way
// to find the LoRA keys of a loaded weight.
#include "families/flux2/names.h"

#include <algorithm>

#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"
#include "runtime/module_runner.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";

using dit_lora::Member;

// Members of transformer_blocks.N (diffusers) / double_blocks.N (original).
const Member kDoubleMembers[] = {
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
    {"ff.linear_in", "img_mlp.0"},
    {"ff.linear_out", "img_mlp.2"},
    {"ff_context.linear_in", "txt_mlp.0"},
    {"ff_context.linear_out", "txt_mlp.2"},
};

// Members of single_transformer_blocks.N (diffusers) / single_blocks.N (original): the
// attention and MLP projections are fused the same way in both.
const Member kSingleMembers[] = {
    {"attn.to_qkv_mlp_proj", "linear1"},
    {"attn.to_out", "linear2"},
    {"attn.norm_q", "norm.query_norm", true},
    {"attn.norm_k", "norm.key_norm", true},
};

const Member kTopMembers[] = {
    {"x_embedder", "img_in"},
    {"context_embedder", "txt_in"},
    {"time_guidance_embed.timestep_embedder.linear_1", "time_in.in_layer"},
    {"time_guidance_embed.timestep_embedder.linear_2", "time_in.out_layer"},
    {"time_guidance_embed.guidance_embedder.linear_1", "guidance_in.in_layer"},
    {"time_guidance_embed.guidance_embedder.linear_2", "guidance_in.out_layer"},
    {"double_stream_modulation_img.linear", "double_stream_modulation_img.lin"},
    {"double_stream_modulation_txt.linear", "double_stream_modulation_txt.lin"},
    {"single_stream_modulation.linear", "single_stream_modulation.lin"},
    {"proj_out", "final_layer.linear"},
    // diffusers' AdaLayerNormContinuous stores (scale, shift): a name of its own.
    {"norm_out.linear", "final_layer.adaLN_scale_shift"},
    // SeFi-Image's dual timestep embedding (families/sefi): one name in both forms.
    {"dual_time_embed.semantic_embedder.linear_1", "dual_time_embed.semantic_embedder.linear_1"},
    {"dual_time_embed.semantic_embedder.linear_2", "dual_time_embed.semantic_embedder.linear_2"},
    {"dual_time_embed.texture_embedder.linear_1", "dual_time_embed.texture_embedder.linear_1"},
    {"dual_time_embed.texture_embedder.linear_2", "dual_time_embed.texture_embedder.linear_2"},
};

const dit_lora::BlockNames kNames{kDoubleMembers, kSingleMembers, kTopMembers};

constexpr const char* kFinalShiftScale = "final_layer.adaLN_modulation.1";
constexpr const char* kFinalScaleShift = "final_layer.adaLN_scale_shift";

// The fused q/k/v of a double block's stream in the original naming and its split parts.
const std::vector<dit_lora::FusedQkv> kFused = {
    {"img_attn.qkv", {"img_attn.q", "img_attn.k", "img_attn.v"}},
    {"txt_attn.qkv", {"txt_attn.q", "txt_attn.k", "txt_attn.v"}},
};

}  // namespace

bool DiffusersFlux2Map::detect(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        int i = 0;
        std::string rest;
        if (starts_with(n, "double_stream_modulation_img.linear.")) return true;
        if (take_indexed(n, "single_transformer_blocks.", &i, &rest) &&
            starts_with(rest, "attn.to_qkv_mlp_proj."))
            return true;
    }
    return false;
}

bool DiffusersFlux2Map::map(const std::string& name, std::string* out) {
    return dit_lora::diffusers_to_original(name, kNames, out);
}

std::vector<std::string> flux2_lora_keys(const std::string& weight) {
    // The fused qkv and the final (shift, scale) modulation are row keys.
    return dit_lora::block_lora_keys(weight, kNames);
}

std::vector<LoraRowKey> flux2_lora_row_keys(const std::string& weight,
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
    if (!take_indexed(path, "double_blocks.", &i, &rest)) return out;
    const std::string block = "double_blocks." + std::to_string(i) + ".";
    const std::string dblock = "transformer_blocks." + std::to_string(i) + ".";
    dit_lora::fused_qkv_row_keys(
        rest, rows, block, dblock, kFused,
        [](const char* split) { return dit_lora::diffusers_member(split, kDoubleMembers); }, &out);
    return out;
}

LoraTarget flux2_lora_target(ModuleRunner& runner) {
    return dit_lora::dit_lora_target(runner, "FLUX.2 DiT", kDit, flux2_lora_keys,
                                     flux2_lora_row_keys);
}

namespace {

bool bare_flux2(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "double_stream_modulation_img.")) return true;
    }
    return DiffusersFlux2Map::detect(names);
}

}  // namespace

const ModelLayout kFlux2Layout = {
    bare_flux2,
    DiffusersFlux2Map::detect,
    DiffusersFlux2Map::map,
    "diffusers FLUX.2 transformer layout renamed to the original",
    {"Flux2Pipeline", "Flux2KleinPipeline"},
    {{"transformer", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "text_encoders.llm."}},
};

}  // namespace ggdiff
