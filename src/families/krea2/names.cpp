#include "families/krea2/names.h"

#include <algorithm>
#include <utility>

#include "io/name_util.h"
#include "pipeline/parts/dit_lora_names.h"

namespace ggdiff {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

// The reference's renaming (name_conversion.cpp, convert_diffusers_dit_to_original_krea2):
// the first matching prefix, then each member name once where it occurs.
const Pairs& prefixes() {
    static const Pairs p = {
        {"img_in.", "first."},
        {"time_embed.linear_1.", "tmlp.0."},
        {"time_embed.linear_2.", "tmlp.2."},
        {"time_mod_proj.", "tproj.1."},
        {"txt_in.linear_1.", "txtmlp.1."},
        {"txt_in.linear_2.", "txtmlp.3."},
        {"text_fusion.", "txtfusion."},
        {"transformer_blocks.", "blocks."},
        {"final_layer.", "last."},
    };
    return p;
}

const Pairs& members() {
    static const Pairs m = {
        {"attn.to_out.0.", "attn.wo."},
        {"attn.to_out.", "attn.wo."},
        {"attn.to_gate.", "attn.gate."},
        {"attn.to_q.", "attn.wq."},
        {"attn.to_k.", "attn.wk."},
        {"attn.to_v.", "attn.wv."},
        {"ff.gate.", "mlp.gate."},
        {"ff.up.", "mlp.up."},
        {"ff.down.", "mlp.down."},
        {"txt_in.norm.", "txtmlp.0."},
        {"last.norm.weight", "last.norm.scale"},
        {"last.modulation.weight", "last.modulation.lin"},
    };
    return m;
}

bool has_name(const std::vector<std::string>& names, const char* want) {
    return std::find(names.begin(), names.end(), want) != names.end();
}

// A Krea2 DiT alone, in either naming.
bool bare_krea2(const std::vector<std::string>& names) {
    return has_name(names, "txtfusion.projector.weight") ||
           has_name(names, "text_fusion.projector.weight");
}

bool diffusers_krea2(const std::vector<std::string>& names) {
    return has_name(names, "text_fusion.projector.weight");
}

// An original module path -> its diffusers path (the renaming reversed), or "" when the
// module has no other name.
std::string diffusers_path(const std::string& path) {
    std::string n = path + ".";
    bool renamed = false;
    for (const auto& [d, o] : prefixes()) {
        if (starts_with(n, o)) {
            n = d + n.substr(o.size());
            renamed = true;
            break;
        }
    }
    for (const auto& [d, o] : members()) {
        if (d == "attn.to_out." || o.back() != '.') continue;  // one form back; no norms
        const size_t at = n.find(o);
        if (at != std::string::npos) {
            n.replace(at, o.size(), d);
            renamed = true;
        }
    }
    return renamed ? n.substr(0, n.size() - 1) : std::string();
}

}  // namespace

bool krea2_diffusers_to_original(const std::string& name, std::string* out) {
    std::string n = name;
    for (const auto& [from, to] : prefixes()) {
        if (starts_with(n, from)) {
            n = to + n.substr(from.size());
            break;
        }
    }
    for (const auto& [from, to] : members()) {
        const size_t at = n.find(from);
        if (at != std::string::npos) n.replace(at, from.size(), to);
    }
    if (n == name) return false;
    *out = n;
    return true;
}

const ModelLayout kKrea2Layout = {
    bare_krea2,
    diffusers_krea2,
    krea2_diffusers_to_original,
    "diffusers Krea2 transformer renamed to the original names",
    {},
    {},
};

std::vector<std::string> krea2_lora_keys(const std::string& weight) {
    std::vector<std::string> keys;
    if (!ends_with(weight, ".weight")) return keys;
    const std::string path = weight.substr(0, weight.size() - 7);
    dit_lora::original_keys(path, &keys);
    const std::string d = diffusers_path(path);
    if (!d.empty()) dit_lora::diffusers_keys(d, &keys);
    dit_lora::diffusers_keys(path, &keys);
    std::vector<std::string> unique;
    for (std::string& k : keys) {
        if (std::find(unique.begin(), unique.end(), k) == unique.end()) unique.push_back(k);
    }
    return unique;
}

LoraTarget krea2_lora_target(ModuleRunner& runner) {
    return dit_lora::dit_lora_target(runner, "Krea2 DiT", "model.diffusion_model.", krea2_lora_keys,
                                     nullptr);
}

}  // namespace ggdiff
