// open_clip text and vision towers -> HF CLIPTextModel / CLIPVisionModel names.
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

bool is_openclip_vision_layout(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "visual.transformer.resblocks.")) return true;
    }
    return false;
}

bool openclip_vision_to_hf(const std::string& name, std::vector<std::string>* out) {
    out->clear();
    std::string rest = name;
    if (!replace_prefix(&rest, "visual.", "")) return false;
    // The projection keeps its name: open_clip's [width, proj] is HF's transposed.
    static const std::pair<const char*, const char*> kFixed[] = {
        {"class_embedding", "vision_model.embeddings.class_embedding"},
        {"conv1.weight", "vision_model.embeddings.patch_embedding.weight"},
        {"ln_pre.weight", "vision_model.pre_layrnorm.weight"},
        {"ln_pre.bias", "vision_model.pre_layrnorm.bias"},
        {"ln_post.weight", "vision_model.post_layernorm.weight"},
        {"ln_post.bias", "vision_model.post_layernorm.bias"},
    };
    for (const auto& [from, to] : kFixed) {
        if (rest == from) {
            out->push_back(to);
            return true;
        }
    }
    // The encoder layers and the position table are named as in the text tower.
    if (rest != "positional_embedding" && !starts_with(rest, "transformer.resblocks.")) {
        return false;
    }
    if (!openclip_to_hf(rest, out)) return false;
    for (std::string& n : *out) replace_prefix(&n, "text_model.", "vision_model.");
    return true;
}

}  // namespace ggdiff
