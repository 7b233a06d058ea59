#include "pipeline/family_registry.h"

#include "pipeline/families/families.h"

namespace ggdiff {

const std::vector<const FamilyRecipe*>& family_recipes() {
    static const std::vector<const FamilyRecipe*> recipes = {
        &kSdRecipe,        &kSdxlRecipe, &kQwenImageLayeredRecipe,
        &kQwenImageRecipe, &kFluxRecipe, &kZImageRecipe,
    };
    return recipes;
}

const FamilyRecipe* find_family(const TensorIndex& index) {
    for (const FamilyRecipe* r : family_recipes()) {
        if (r->detect(index)) return r;
    }
    return nullptr;
}

Status check_part_files(const FamilyRecipe& recipe, const ModelOptions& options) {
    if (!recipe.part_files) return Status::Ok();
    const std::string reads = std::string(",") + recipe.part_files + ",";
    const std::pair<const char*, const std::string*> parts[] = {
        {"clip_l", &options.clip_l}, {"clip_g", &options.clip_g}, {"t5xxl", &options.t5xxl},
        {"llm", &options.llm},       {"taesd", &options.taesd},
    };
    for (const auto& [flag, path] : parts) {
        if (path->empty() || reads.find(std::string(",") + flag + ",") != std::string::npos) {
            continue;
        }
        std::string read;  // "--vae, --taesd"
        for (char c : std::string("--") + recipe.part_files) {
            read += c == ',' ? std::string(", --") : std::string(1, c);
        }
        return Status::Error(std::string("--") + flag + " " + *path + ": " + recipe.display +
                             " models have no part that reads it (they read " + read +
                             "); leave it out");
    }
    return Status::Ok();
}

}  // namespace ggdiff
