// open_clip text tower -> HF CLIPTextModel names.
#include "io/name_map.h"
#include "io/name_util.h"

namespace ggdiff {

bool is_openclip_layout(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "transformer.resblocks.")) return true;
    }
    return false;
}

bool openclip_to_hf(const std::string& name, std::vector<std::string>* out) {
    out->clear();
    static const std::pair<const char*, const char*> kFixed[] = {
        {"token_embedding.weight", "text_model.embeddings.token_embedding.weight"},
        {"positional_embedding", "text_model.embeddings.position_embedding.weight"},
        {"ln_final.weight", "text_model.final_layer_norm.weight"},
        {"ln_final.bias", "text_model.final_layer_norm.bias"},
        {"text_projection", "text_projection"},
        {"logit_scale", "logit_scale"},
    };
    for (const auto& [from, to] : kFixed) {
        if (name == from) {
            out->push_back(to);
            return true;
        }
    }
    int layer = 0;
    std::string rest;
    if (!take_indexed(name, "transformer.resblocks.", &layer, &rest)) return false;
    const std::string base = "text_model.encoder.layers." + std::to_string(layer) + ".";
    if (rest == "attn.in_proj_weight" || rest == "attn.in_proj_bias") {
        const char* kind = rest == "attn.in_proj_weight" ? "weight" : "bias";
        for (const char* p : {"q", "k", "v"}) {
            out->push_back(base + "self_attn." + p + "_proj." + kind);
        }
        return true;
    }
    static const std::pair<const char*, const char*> kLayer[] = {
        {"ln_1.", "layer_norm1."},
        {"ln_2.", "layer_norm2."},
        {"attn.out_proj.", "self_attn.out_proj."},
        {"mlp.c_fc.", "mlp.fc1."},
        {"mlp.c_proj.", "mlp.fc2."},
    };
    for (const auto& [from, to] : kLayer) {
        std::string s = rest;
        if (replace_prefix(&s, from, to)) {
            out->push_back(base + s);
            return true;
        }
    }
    return false;
}

}  // namespace ggdiff
