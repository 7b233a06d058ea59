// SD3 names. The diffusers SD3Transformer2DModel and the original MMDiT name the same linears
// (diffusers' scripts/convert_sd3_to_diffusers.py): one table below, read one way to rename
// a diffusers transformer and the other way to find the LoRA keys of a loaded weight.
#include "families/sd3/names.h"

#include <algorithm>
#include <memory>

#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"
#include "runtime/module_runner.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";

struct Member {
    const char* diffusers;
    const char* original;
};

// Members of transformer_blocks.N (diffusers) / joint_blocks.N (original).
const Member kBlockMembers[] = {
    {"norm1.linear", "x_block.adaLN_modulation.1"},
    {"norm1_context.linear", "context_block.adaLN_modulation.1"},
    {"attn.to_q", "x_block.attn.q"},
    {"attn.to_k", "x_block.attn.k"},
    {"attn.to_v", "x_block.attn.v"},
    {"attn.add_q_proj", "context_block.attn.q"},
    {"attn.add_k_proj", "context_block.attn.k"},
    {"attn.add_v_proj", "context_block.attn.v"},
    {"attn.norm_q", "x_block.attn.ln_q"},
    {"attn.norm_k", "x_block.attn.ln_k"},
    {"attn.norm_added_q", "context_block.attn.ln_q"},
    {"attn.norm_added_k", "context_block.attn.ln_k"},
    {"attn.to_out.0", "x_block.attn.proj"},
    {"attn.to_add_out", "context_block.attn.proj"},
    {"attn2.to_q", "x_block.attn2.q"},
    {"attn2.to_k", "x_block.attn2.k"},
    {"attn2.to_v", "x_block.attn2.v"},
    {"attn2.norm_q", "x_block.attn2.ln_q"},
    {"attn2.norm_k", "x_block.attn2.ln_k"},
    {"attn2.to_out.0", "x_block.attn2.proj"},
    {"ff.net.0.proj", "x_block.mlp.fc1"},
    {"ff.net.2", "x_block.mlp.fc2"},
    {"ff_context.net.0.proj", "context_block.mlp.fc1"},
    {"ff_context.net.2", "context_block.mlp.fc2"},
};

const Member kTopMembers[] = {
    {"pos_embed.proj", "x_embedder.proj"},
    {"time_text_embed.timestep_embedder.linear_1", "t_embedder.mlp.0"},
    {"time_text_embed.timestep_embedder.linear_2", "t_embedder.mlp.2"},
    {"time_text_embed.text_embedder.linear_1", "y_embedder.mlp.0"},
    {"time_text_embed.text_embedder.linear_2", "y_embedder.mlp.2"},
    {"context_embedder", "context_embedder"},
    {"proj_out", "final_layer.linear"},
    {"norm_out.linear", "final_layer.adaLN_scale_shift"},
};

// The (scale, shift) norms' names of their own in the original naming.
constexpr const char* kContextScaleShift = "context_block.adaLN_scale_shift";
constexpr const char* kContextShiftScale = "context_block.adaLN_modulation.1";
constexpr const char* kFinalShiftScale = "final_layer.adaLN_modulation.1";
constexpr const char* kFinalScaleShift = "final_layer.adaLN_scale_shift";

// The fused q/k/v of the original naming and their split parts.
const std::vector<dit_lora::FusedQkv> kFused = {
    {"x_block.attn.qkv", {"x_block.attn.q", "x_block.attn.k", "x_block.attn.v"}},
    {"context_block.attn.qkv",
     {"context_block.attn.q", "context_block.attn.k", "context_block.attn.v"}},
    {"x_block.attn2.qkv", {"x_block.attn2.q", "x_block.attn2.k", "x_block.attn2.v"}},
};

// "<member>.<rest>" -> the renamed member and the rest.
bool take_member(const std::string& s, const char* member, std::string* rest) {
    const std::string m = std::string(member) + ".";
    if (!starts_with(s, m)) return false;
    *rest = s.substr(m.size());
    return true;
}

const char* diffusers_member(const char* original) {
    for (const Member& m : kBlockMembers) {
        if (std::string(original) == m.original) return m.diffusers;
    }
    return nullptr;
}

}  // namespace

bool DiffusersSd3Map::detect(const std::vector<std::string>& names) {
    bool blocks = false, patch = false;
    for (const std::string& n : names) {
        blocks |= starts_with(n, "transformer_blocks.") &&
                  n.find(".norm1_context.linear.") != std::string::npos;
        patch |= starts_with(n, "pos_embed.proj.");
    }
    return blocks && patch;
}

DiffusersSd3Map::DiffusersSd3Map(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        int i = 0;
        std::string rest;
        if (take_indexed(n, "transformer_blocks.", &i, &rest))
            last_block_ = std::max(last_block_, i);
    }
}

bool DiffusersSd3Map::map(const std::string& name, std::string* out) const {
    if (name == "pos_embed.pos_embed") {
        *out = "pos_embed";
        return true;
    }
    int i = 0;
    std::string rest, tail;
    if (take_indexed(name, "transformer_blocks.", &i, &rest)) {
        for (const Member& m : kBlockMembers) {
            if (!take_member(rest, m.diffusers, &tail)) continue;
            // The last block's context norm is diffusers' AdaLayerNormContinuous.
            const bool pre_only = i == last_block_ && std::string(m.original) == kContextShiftScale;
            *out = "joint_blocks." + std::to_string(i) + "." +
                   (pre_only ? kContextScaleShift : m.original) + "." + tail;
            return true;
        }
        return false;
    }
    for (const Member& m : kTopMembers) {
        if (take_member(name, m.diffusers, &tail)) {
            *out = std::string(m.original) + "." + tail;
            return true;
        }
    }
    return false;
}

std::vector<std::string> sd3_lora_keys(const std::string& weight) {
    std::vector<std::string> keys;
    if (!ends_with(weight, ".weight")) return keys;
    const std::string path = weight.substr(0, weight.size() - 7);
    dit_lora::original_keys(path, &keys);
    // The diffusers path where the weight is one diffusers linear as it is.
    int i = 0;
    std::string rest;
    if (take_indexed(path, "joint_blocks.", &i, &rest)) {
        const std::string block = "transformer_blocks." + std::to_string(i) + ".";
        if (rest == kContextScaleShift) {
            dit_lora::diffusers_keys(block + "norm1_context.linear", &keys);
        } else if (rest != kContextShiftScale) {  // by its shape: row keys
            if (const char* d = diffusers_member(rest.c_str()))
                dit_lora::diffusers_keys(block + d, &keys);
        }
        return keys;
    }
    for (const Member& m : kTopMembers) {
        if (path == m.original) dit_lora::diffusers_keys(m.diffusers, &keys);
    }
    return keys;
}

std::vector<LoraRowKey> sd3_lora_row_keys(const std::string& weight,
                                          const std::vector<int64_t>& shape) {
    std::vector<LoraRowKey> out;
    if (!ends_with(weight, ".weight") || shape.size() < 2) return out;
    const std::string path = weight.substr(0, weight.size() - 7);
    const int64_t rows = shape[0];
    std::vector<std::string> keys;
    if (dit_lora::swapped_modulation_row_keys(path, rows, kFinalShiftScale, kFinalScaleShift,
                                              "norm_out.linear", &out)) {
        return out;
    }
    int i = 0;
    std::string rest;
    if (!take_indexed(path, "joint_blocks.", &i, &rest)) return out;
    const std::string block = "joint_blocks." + std::to_string(i) + ".";
    const std::string dblock = "transformer_blocks." + std::to_string(i) + ".";
    if (rest == kContextShiftScale) {
        // The pre-only block's (2 chunks: shift, scale) is diffusers' (scale, shift) norm.
        dit_lora::diffusers_keys(dblock + "norm1_context.linear", &keys);
        const bool pre_only = rows == 2 * shape[1];
        dit_lora::add_row_keys(
            keys, pre_only ? dit_lora::swapped_halves(rows) : std::vector<LoraRows>{{0, 0, rows}},
            &out);
        return out;
    }
    if (rest == kContextScaleShift) {
        dit_lora::original_keys(block + kContextShiftScale, &keys);
        dit_lora::add_row_keys(keys, dit_lora::swapped_halves(rows), &out);
        return out;
    }
    dit_lora::fused_qkv_row_keys(rest, rows, block, dblock, kFused, diffusers_member, &out);
    return out;
}

LoraTarget sd3_lora_target(ModuleRunner& runner) {
    return dit_lora::dit_lora_target(runner, "MMDiT", kDit, sd3_lora_keys, sd3_lora_row_keys);
}

namespace {

bool bare_sd3(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "joint_blocks.")) return true;
    }
    return DiffusersSd3Map::detect(names);
}

ModelLayout::Renamer diffusers_sd3_renamer(const std::vector<std::string>& names) {
    auto m = std::make_shared<DiffusersSd3Map>(names);
    return [m](const std::string& name, std::string* out) { return m->map(name, out); };
}

}  // namespace

const ModelLayout kSd3Layout = {
    bare_sd3,
    DiffusersSd3Map::detect,
    nullptr,
    "diffusers SD3 transformer layout renamed to the original",
    {"StableDiffusion3Pipeline", "StableDiffusion3Img2ImgPipeline"},
    {{"transformer", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "text_encoders.clip_l."},
     {"text_encoder_2", "text_encoders.clip_g."},
     {"text_encoder_3", "text_encoders.t5xxl."}},
    diffusers_sd3_renamer,
};

}  // namespace ggdiff
