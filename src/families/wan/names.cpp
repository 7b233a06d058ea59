#include "families/wan/names.h"

#include <algorithm>
#include <utility>

#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"
#include "runtime/module_runner.h"

namespace ggdiff {
namespace {

// diffusers -> original, the top level.
const std::pair<const char*, const char*> kTop[] = {
    {"condition_embedder.text_embedder.linear_1.", "text_embedding.0."},
    {"condition_embedder.text_embedder.linear_2.", "text_embedding.2."},
    {"condition_embedder.time_embedder.linear_1.", "time_embedding.0."},
    {"condition_embedder.time_embedder.linear_2.", "time_embedding.2."},
    {"condition_embedder.time_proj.", "time_projection.1."},
    {"proj_out.", "head.head."},
};

// diffusers -> original, inside blocks.N (diffusers' norm2 is the affine norm before the
// cross-attention, the original norm3).
const std::pair<const char*, const char*> kBlock[] = {
    {"attn1.to_q.", "self_attn.q."},
    {"attn1.to_k.", "self_attn.k."},
    {"attn1.to_v.", "self_attn.v."},
    {"attn1.to_out.0.", "self_attn.o."},
    {"attn1.norm_q.", "self_attn.norm_q."},
    {"attn1.norm_k.", "self_attn.norm_k."},
    {"attn2.to_q.", "cross_attn.q."},
    {"attn2.to_k.", "cross_attn.k."},
    {"attn2.to_v.", "cross_attn.v."},
    {"attn2.to_out.0.", "cross_attn.o."},
    {"attn2.norm_q.", "cross_attn.norm_q."},
    {"attn2.norm_k.", "cross_attn.norm_k."},
    {"norm2.", "norm3."},
    {"ffn.net.0.proj.", "ffn.0."},
    {"ffn.net.2.", "ffn.2."},
};

std::vector<LoraRowKey> no_row_keys(const std::string&, const std::vector<int64_t>&) {
    return {};
}

// The diffusers path of an original path (inverse of the tables), or "" when it has none.
std::string diffusers_path(const std::string& path) {
    const std::string p = path + ".";
    for (const auto& [d, o] : kTop) {
        if (p == o) return std::string(d).substr(0, std::string(d).size() - 1);
    }
    int index = 0;
    std::string rest;
    if (!take_indexed(path, "blocks.", &index, &rest)) return "";
    rest += ".";
    for (const auto& [d, o] : kBlock) {
        if (rest == o) {
            const std::string dd = d;
            return "blocks." + std::to_string(index) + "." + dd.substr(0, dd.size() - 1);
        }
    }
    return "";
}

bool bare_wan(const std::vector<std::string>& names) {
    bool patch = false, blocks = false;
    for (const std::string& n : names) {
        patch = patch || starts_with(n, "patch_embedding.");
        blocks =
            blocks || starts_with(n, "blocks.0.cross_attn.") || starts_with(n, "blocks.0.attn2.");
    }
    return patch && blocks;
}

}  // namespace

bool is_diffusers_wan_layout(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "condition_embedder.")) return true;
    }
    return false;
}

bool diffusers_wan_to_original(const std::string& name, std::string* out) {
    std::string n = name;
    for (const auto& [from, to] : kTop) {
        if (replace_prefix(&n, from, to)) {
            *out = n;
            return true;
        }
    }
    if (n == "scale_shift_table") {
        *out = "head.modulation";
        return true;
    }
    int index = 0;
    std::string rest;
    if (!take_indexed(n, "blocks.", &index, &rest)) return false;
    const std::string block = "blocks." + std::to_string(index) + ".";
    if (rest == "scale_shift_table") {
        *out = block + "modulation";
        return true;
    }
    for (const auto& [from, to] : kBlock) {
        if (replace_prefix(&rest, from, to)) {
            *out = block + rest;
            return true;
        }
    }
    return false;
}

std::vector<std::string> wan_lora_keys(const std::string& weight) {
    std::vector<std::string> keys;
    if (!ends_with(weight, ".weight")) return keys;
    const std::string path = weight.substr(0, weight.size() - 7);
    dit_lora::original_keys(path, &keys);
    const std::string d = diffusers_path(path);
    if (!d.empty()) dit_lora::diffusers_keys(d, &keys);
    std::vector<std::string> unique;
    for (std::string& k : keys) {
        if (std::find(unique.begin(), unique.end(), k) == unique.end())
            unique.push_back(std::move(k));
    }
    return unique;
}

LoraTarget wan_lora_target(ModuleRunner& runner, const std::string& prefix) {
    return dit_lora::dit_lora_target(runner, "Wan DiT", prefix, wan_lora_keys, no_row_keys);
}

const ModelLayout kWanLayout = {
    bare_wan,
    is_diffusers_wan_layout,
    diffusers_wan_to_original,
    "diffusers Wan transformer renamed to the original names",
    {"WanPipeline"},
    {{"transformer", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "text_encoders.t5xxl."}},
};

}  // namespace ggdiff
