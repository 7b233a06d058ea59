#include "families/longcat/names.h"

#include "families/flux/names.h"
#include "io/name_util.h"

namespace ggdiff {

namespace {

constexpr const char* kTimeEmbed = "time_embed.timestep_embedder.linear_";

// A q/k RMSNorm weight under its ".weight" name (Comfy-Org's LongCat files).
bool weight_named_norm(const std::string& n) {
    return ends_with(n, "query_norm.weight") || ends_with(n, "key_norm.weight");
}

bool longcat_forms(const std::vector<std::string>& names) {
    bool double_blocks = false, norms = false, time_embed = false;
    for (const std::string& n : names) {
        double_blocks |= starts_with(n, "double_blocks.");
        norms |= weight_named_norm(n);
        time_embed |= starts_with(n, kTimeEmbed);
    }
    return (double_blocks && norms) || (time_embed && DiffusersFluxMap::detect(names));
}

bool to_original(const std::string& name, std::string* out) {
    if (starts_with(name, kTimeEmbed)) {
        // linear_1 -> in_layer, linear_2 -> out_layer
        const std::string rest = name.substr(std::string(kTimeEmbed).size());
        if (starts_with(rest, "1.")) {
            *out = "time_in.in_layer." + rest.substr(2);
            return true;
        }
        if (starts_with(rest, "2.")) {
            *out = "time_in.out_layer." + rest.substr(2);
            return true;
        }
        return false;
    }
    if (weight_named_norm(name)) {
        *out = name.substr(0, name.size() - 6) + "scale";
        return true;
    }
    return DiffusersFluxMap::map(name, out);
}

}  // namespace

const ModelLayout kLongCatLayout = {
    nullptr,  // a bare file: FLUX.1's layout files it (the same double_blocks names)
    longcat_forms,
    to_original,
    "LongCat DiT names (Comfy-Org norms, diffusers) renamed to the original FLUX names",
    {"LongCatImagePipeline", "LongCatImageEditPipeline"},
    {{"transformer", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "text_encoders.llm."}},
};

}  // namespace ggdiff
