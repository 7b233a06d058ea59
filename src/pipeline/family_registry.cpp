#include "pipeline/family_registry.h"

#include "pipeline/families/families.h"

namespace ggdiff {

const std::vector<const FamilyRecipe*>& family_recipes() {
    static const std::vector<const FamilyRecipe*> recipes = {
        &kSdRecipe,
        &kQwenImageLayeredRecipe,
        &kQwenImageRecipe,
        &kFluxRecipe,
    };
    return recipes;
}

const FamilyRecipe* find_family(const TensorIndex& index) {
    for (const FamilyRecipe* r : family_recipes()) {
        if (r->detect(index)) return r;
    }
    return nullptr;
}

}  // namespace ggdiff
