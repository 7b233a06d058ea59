// Wan 2.1 / 2.2 video DiTs (3D patch embedding, blocks with self- and cross-attention).
// Recognised, not run yet: -M info names it and generation stops with "not supported yet".
#include "io/name_util.h"
#include "pipeline/family.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";

bool detect(const TensorIndex& index) {
    const std::string d = kDit;
    return index.has(d + "patch_embedding.weight") && index.has(d + "blocks.0.cross_attn.q.weight");
}

bool bare_wan(const std::vector<std::string>& names) {
    bool patch = false, blocks = false;
    for (const std::string& n : names) {
        patch = patch || starts_with(n, "patch_embedding.");
        blocks = blocks || starts_with(n, "blocks.0.cross_attn.");
    }
    return patch && blocks;
}

const ModelLayout kWanLayout = {bare_wan, nullptr, nullptr, nullptr, {}, {}};

}  // namespace

extern const FamilyRecipe kWanRecipe = {
    "wan",
    "Wan",
    "model.diffusion_model.patch_embedding.weight and blocks.0.cross_attn.q.weight",
    detect,
    nullptr,
    nullptr,
    &kWanLayout};

}  // namespace ggdiff
