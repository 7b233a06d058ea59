#include "families/hidream_o1/names.h"

#include <string>
#include <vector>

#include "io/name_util.h"

namespace ggdiff {

namespace {

constexpr const char* kModel = "model.";

bool hidream_names(const std::vector<std::string>& names) {
    bool layers = false, patches = false;
    for (const std::string& n : names) {
        layers |= starts_with(n, "model.language_model.layers.");
        patches |= n == "model.x_embedder.proj1.weight";
    }
    return layers && patches;
}

bool to_canonical(const std::string& name, std::string* out) {
    if (!starts_with(name, kModel)) return false;
    *out = name.substr(std::string(kModel).size());
    return true;
}

}  // namespace

const ModelLayout kHiDreamO1Layout = {
    hidream_names,
    hidream_names,
    to_canonical,
    "HiDream-O1 names: the leading 'model.' dropped",
    {},
    {},
    nullptr,
};

}  // namespace ggdiff
