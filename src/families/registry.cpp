#include "families/registry.h"

namespace ggdiff {

// The families, most specific first: the first whose detect() accepts the weights wins.
// Adding a family is one line here (and its folder, src/families/<family>/).
#define GGDIFF_FAMILIES(X)                                                        \
    X(kSd1Recipe)              /* families/sd: SD1.x and models of its layout */  \
    X(kSd2Recipe)              /* families/sd: SD2.x (eps and v) */               \
    X(kSdxlRecipe)             /* families/sdxl */                                \
    X(kLensRecipe)             /* families/lens (before Qwen Image) */            \
    X(kQwenImageLayeredRecipe) /* families/qwen_image (before Qwen Image) */      \
    X(kQwenImageRecipe)        /* families/qwen_image */                          \
    X(kOvisImageRecipe)        /* families/ovis (before FLUX.1: its layout) */    \
    X(kLongCatRecipe)          /* families/longcat (before FLUX.1: its layout) */ \
    X(kChromaRadianceRecipe)   /* families/chroma: Chroma1-Radiance */            \
    X(kChromaRecipe)           /* families/chroma (before FLUX.1) */              \
    X(kSefiImageRecipe)        /* families/sefi (before FLUX.2: its layout) */    \
    X(kFlux2Recipe)            /* families/flux2: detect only (before FLUX.1) */  \
    X(kFluxRecipe)             /* families/flux: FLUX.1 dev, schnell, Kontext */  \
    X(kZImageRecipe)           /* families/z_image */                             \
    X(kBooguRecipe)            /* families/boogu: Boogu Image */                  \
    X(kHiDreamO1Recipe)        /* families/hidream_o1: HiDream-O1-Image */        \
    X(kAnimaRecipe)            /* families/anima */                               \
    X(kErnieImageRecipe)       /* families/ernie: ERNIE-Image */                  \
    X(kMiniT2IRecipe)          /* families/minit2i */                             \
    X(kKrea2Recipe)            /* families/krea2 */                               \
    X(kPidRecipe)              /* families/pid: PiD (Pixel Diffusion Decoder) */  \
    X(kIdeogram4Recipe)        /* families/ideogram4 */                           \
    X(kSd3Recipe)              /* families/sd3 */                                 \
    X(kLtx2Recipe)             /* families/ltx: LTX-2.3, detect only */           \
    X(kWanRecipe)              /* families/wan: detect only */

#define GGDIFF_DECLARE_RECIPE(name) extern const FamilyRecipe name;
#define GGDIFF_RECIPE_ADDRESS(name) &name,
GGDIFF_FAMILIES(GGDIFF_DECLARE_RECIPE)

const std::vector<const FamilyRecipe*>& family_recipes() {
    static const std::vector<const FamilyRecipe*> recipes = {
        GGDIFF_FAMILIES(GGDIFF_RECIPE_ADDRESS)};
    return recipes;
}

const FamilyRecipe* find_family(const TensorIndex& index) {
    for (const FamilyRecipe* r : family_recipes()) {
        if (r->detect(index)) return r;
    }
    return nullptr;
}

const FamilyRecipe* family_by_id(const std::string& id) {
    for (const FamilyRecipe* r : family_recipes()) {
        if (id == r->id) return r;
    }
    return nullptr;
}

std::string family_id(const TensorIndex& index) {
    const FamilyRecipe* r = find_family(index);
    return r ? r->id : "unknown";
}

std::vector<std::string> family_signatures() {
    std::vector<std::string> out;
    for (const FamilyRecipe* r : family_recipes()) {
        out.push_back(std::string(r->id) + ": " + r->signature);
    }
    return out;
}

const ModelLayouts& model_layouts() {
    static const ModelLayouts layouts = [] {
        ModelLayouts l;
        for (const FamilyRecipe* r : family_recipes()) {
            bool seen = false;  // families that share a folder share its layout
            for (const ModelLayout* x : l) seen = seen || x == r->layout;
            if (r->layout && !seen) l.push_back(r->layout);
        }
        return l;
    }();
    return layouts;
}

TensorIndex model_index() {
    return TensorIndex(model_layouts());
}

Result<const FamilyRecipe*> runnable_family(const TensorIndex& index) {
    const FamilyRecipe* r = find_family(index);
    if (!r) {
        std::string looked_for;
        for (const std::string& s : family_signatures()) {
            looked_for += (looked_for.empty() ? "" : "; ") + s;
        }
        return Status::Error(
            "cannot tell which model family these files hold (no known diffusion model found; "
            "looked for " +
            looked_for + "); ggdiff -M info lists what is in them");
    }
    if (!r->load) {
        return Status::Error(std::string(r->id) + " models (" + r->display +
                             ") are not supported yet");
    }
    return r;
}

Status check_part_files(const FamilyRecipe& recipe, const ModelOptions& options) {
    // --clip_vision is refused by every family that does not list it, even one whose other
    // part files are not checked: only image-to-video models read it.
    if (!options.clip_vision.empty() &&
        (!recipe.part_files ||
         (std::string(",") + recipe.part_files + ",").find(",clip_vision,") == std::string::npos)) {
        return Status::Error("--clip_vision " + options.clip_vision + ": " + recipe.display +
                             " models have no part that reads it (a CLIP vision encoder for "
                             "image-to-video models); leave it out");
    }
    // PuLID-FLUX's modules sit between FLUX.1's blocks (families/flux/pulid.h).
    if (!options.pulid_weights.empty() && std::string(recipe.id) != "flux") {
        return Status::Error("--pulid-weights " + options.pulid_weights +
                             ": PuLID-FLUX works with FLUX.1 models only, and this is a " +
                             recipe.display + " model");
    }
    // Part files only a family that lists them reads (LTX-2's, families/ltx/recipe.cpp).
    const std::string lists = std::string(",") + (recipe.part_files ? recipe.part_files : "") + ",";
    for (const auto& [flag, path] :
         {std::pair<const char*, const std::string*>{"audio-vae", &options.audio_vae},
          {"embeddings-connectors", &options.embeddings_connectors}}) {
        if (!path->empty() && lists.find(std::string(",") + flag + ",") == std::string::npos) {
            return Status::Error(std::string("--") + flag + " " + *path + ": " + recipe.display +
                                 " models have no part that reads it (LTX-2 does); leave it out");
        }
    }
    if (!recipe.part_files) return Status::Ok();
    const std::string reads = std::string(",") + recipe.part_files + ",";
    const std::pair<const char*, const std::string*> parts[] = {
        {"clip_l", &options.clip_l}, {"clip_g", &options.clip_g},         {"t5xxl", &options.t5xxl},
        {"llm", &options.llm},       {"llm_vision", &options.llm_vision}, {"taesd", &options.taesd},
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
