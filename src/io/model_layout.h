// A model family's own tensor naming, as the name normalisation (io/name_map.h) and the
// diffusers-folder reader (io/diffusers_folder.h) need it. io knows the layouts that several
// families share (the LDM UNet and its diffusers form, VAEs, CLIP, T5, language models); a
// family's own diffusion-model names live in its folder (src/families/<family>/) and reach io
// only through these records, which the family registry hands to every TensorIndex that
// opens model files (families/registry.h: model_layouts()). io names no family.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ggdiff {

struct ModelLayout {
    // Whether the names of a file given without a role (-m) are this family's diffusion
    // model alone (its original or converted names), so that they are filed under
    // "model.diffusion_model.". nullptr: never.
    bool (*bare_diffusion)(const std::vector<std::string>& names) = nullptr;
    // A converted form of the family's diffusion-model names (diffusers, ...): whether the
    // names (without wrappers) are in it, and the renaming of one name to the canonical one
    // (false: the name is kept). Both nullptr: the family has no other form.
    bool (*converted)(const std::vector<std::string>& names) = nullptr;
    bool (*to_canonical)(const std::string& name, std::string* out) = nullptr;
    const char* converted_note = nullptr;  // log note: "diffusers FLUX transformer renamed"
    // diffusers pipelines of the family (model_index.json "_class_name") and, for each, the
    // subfolder -> role prefix routes to load with -m; empty: the generic routing applies.
    std::vector<std::string> diffusers_pipelines;
    std::vector<std::pair<std::string, std::string>> diffusers_parts;
    // In place of to_canonical where one name's canonical name depends on the others (SD3:
    // only the last block's context modulation is stored the other way round): the renaming
    // made once from all the names of the converted form.
    using Renamer = std::function<bool(const std::string& name, std::string* out)>;
    Renamer (*renamer)(const std::vector<std::string>& names) = nullptr;
};

using ModelLayouts = std::vector<const ModelLayout*>;

}  // namespace ggdiff
