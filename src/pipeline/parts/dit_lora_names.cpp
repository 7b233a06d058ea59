#include "pipeline/parts/dit_lora_names.h"

#include <algorithm>

#include "io/name_util.h"

namespace ggdiff::dit_lora {
namespace {

std::string underscores(std::string s) {
    std::replace(s.begin(), s.end(), '.', '_');
    return s;
}

}  // namespace

void original_keys(const std::string& path, std::vector<std::string>* keys) {
    const std::string u = underscores(path);
    for (const char* p : {"unet_", "diffusion_model_", "", "model_diffusion_model_"})
        keys->push_back(p + u);
}

void diffusers_keys(const std::string& path, std::vector<std::string>* keys) {
    const std::string u = underscores(path);
    for (const char* p : {"transformer_", "", "lycoris_"}) keys->push_back(p + u);
}

std::vector<std::string> same_path_keys(const std::string& weight) {
    std::vector<std::string> keys;
    if (!ends_with(weight, ".weight")) return keys;
    const std::string path = weight.substr(0, weight.size() - std::string(".weight").size());
    original_keys(path, &keys);
    diffusers_keys(path, &keys);
    std::vector<std::string> unique;
    for (std::string& k : keys) {
        if (std::find(unique.begin(), unique.end(), k) == unique.end()) {
            unique.push_back(std::move(k));
        }
    }
    return unique;
}

void add_row_keys(const std::vector<std::string>& keys, const std::vector<LoraRows>& rows,
                  std::vector<LoraRowKey>* out) {
    for (const std::string& k : keys) out->push_back({k, rows});
}

std::vector<LoraRows> swapped_halves(int64_t rows) {
    const int64_t h = rows / 2;
    return {{0, h, h}, {h, 0, h}};
}

bool swapped_modulation_row_keys(const std::string& path, int64_t rows, const char* shift_scale,
                                 const char* scale_shift, const char* diffusers_name,
                                 std::vector<LoraRowKey>* out) {
    std::vector<std::string> keys;
    if (path == shift_scale) {  // a diffusers LoRA, swapped
        diffusers_keys(diffusers_name, &keys);
    } else if (path == scale_shift) {  // an original-form LoRA on a diffusers-loaded model
        original_keys(shift_scale, &keys);
    } else {
        return false;
    }
    add_row_keys(keys, swapped_halves(rows), out);
    return true;
}

bool fused_qkv_row_keys(const std::string& rest, int64_t rows, const std::string& block,
                        const std::string& dblock, const std::vector<FusedQkv>& fused,
                        const std::function<const char*(const char*)>& diffusers_member,
                        std::vector<LoraRowKey>* out) {
    for (const FusedQkv& f : fused) {
        if (rest == f.original) {  // a third for each of diffusers' q, k, v
            const int64_t h = rows / 3;
            for (int j = 0; j < 3; ++j) {
                std::vector<std::string> k;
                diffusers_keys(dblock + diffusers_member(f.split[j]), &k);
                add_row_keys(k, {{0, j * h, h}}, out);
            }
            return true;
        }
        for (int j = 0; j < 3; ++j) {
            if (rest == f.split[j]) {  // a third of a fused-form LoRA's output
                std::vector<std::string> keys;
                original_keys(block + f.original, &keys);
                add_row_keys(keys, {{j * rows, 0, rows}}, out);
                return true;
            }
        }
    }
    return false;
}

LoraTarget dit_lora_target(ModuleRunner& runner, const char* label, const std::string& prefix,
                           std::vector<std::string> (*keys)(const std::string& weight),
                           std::vector<LoraRowKey> (*row_keys)(const std::string& weight,
                                                               const std::vector<int64_t>& shape)) {
    LoraTarget t;
    t.label = label;
    t.runner = &runner;
    t.keys = [prefix, keys](const std::string& weight) {
        if (!starts_with(weight, prefix)) return std::vector<std::string>{};
        return keys(weight.substr(prefix.size()));
    };
    if (!row_keys) return t;  // no weight answers to row keys
    t.row_keys = [prefix, row_keys](const std::string& weight, const std::vector<int64_t>& shape) {
        if (!starts_with(weight, prefix)) return std::vector<LoraRowKey>{};
        return row_keys(weight.substr(prefix.size()), shape);
    };
    return t;
}

bool original_member(const std::string& rest, const Members& table, std::string* out) {
    for (const Member& m : table) {
        const std::string prefix = std::string(m.diffusers) + ".";
        if (!starts_with(rest, prefix)) continue;
        std::string tail = rest.substr(prefix.size());
        if (m.norm && tail == "weight") tail = "scale";
        *out = std::string(m.original) + "." + tail;
        return true;
    }
    return false;
}

const char* diffusers_member(const std::string& original, const Members& table) {
    for (const Member& m : table) {
        if (!m.norm && original == m.original) return m.diffusers;
    }
    return nullptr;
}

bool diffusers_to_original(const std::string& name, const BlockNames& names, std::string* out) {
    int i = 0;
    std::string rest, mapped;
    if (take_indexed(name, "transformer_blocks.", &i, &rest)) {
        if (!original_member(rest, names.double_blocks, &mapped)) return false;
        *out = "double_blocks." + std::to_string(i) + "." + mapped;
        return true;
    }
    if (take_indexed(name, "single_transformer_blocks.", &i, &rest)) {
        if (!original_member(rest, names.single_blocks, &mapped)) return false;
        *out = "single_blocks." + std::to_string(i) + "." + mapped;
        return true;
    }
    return original_member(name, names.top, out);
}

std::vector<std::string> block_lora_keys(const std::string& weight, const BlockNames& names) {
    std::vector<std::string> keys;
    if (!ends_with(weight, ".weight")) return keys;
    const std::string path = weight.substr(0, weight.size() - 7);
    original_keys(path, &keys);
    int i = 0;
    std::string rest;
    if (take_indexed(path, "double_blocks.", &i, &rest)) {
        if (const char* d = diffusers_member(rest, names.double_blocks))
            diffusers_keys("transformer_blocks." + std::to_string(i) + "." + d, &keys);
    } else if (take_indexed(path, "single_blocks.", &i, &rest)) {
        if (const char* d = diffusers_member(rest, names.single_blocks))
            diffusers_keys("single_transformer_blocks." + std::to_string(i) + "." + d, &keys);
    } else if (const char* d = diffusers_member(path, names.top)) {
        diffusers_keys(d, &keys);
    }
    return keys;
}

}  // namespace ggdiff::dit_lora
