// Shapes of one network's tensors under its prefix, for the architecture detection of a
// family's model (sizes read from the weights): every error names the model and the tensor.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/checkpoint_file.h"
#include "io/tensor_index.h"

namespace ggdiff {

struct TensorProbe {
    const TensorIndex& index;
    std::string prefix;  // "model.diffusion_model."
    std::string model;   // "FLUX", "SD3": how errors start

    bool has(const std::string& n) const { return index.has(prefix + n); }
    // How many blocks `group`0, `group`1, ... in a row have tensor "<group><i>.<probe>".
    int count(const std::string& group, const std::string& probe) const {
        int n = 0;
        while (has(group + std::to_string(n) + "." + probe)) ++n;
        return n;
    }
    // The shape of tensor `n` (torch order), which must have `rank` dimensions.
    Result<std::vector<int64_t>> shape(const std::string& n, size_t rank) const {
        const TensorInfo* t = index.find(prefix + n);
        if (!t) return missing(n);
        if (t->shape.size() != rank) {
            return Status::Error(model + ": tensor " + prefix + n + " has shape " +
                                 shape_string(t->shape) + ", expected " + std::to_string(rank) +
                                 " dimensions");
        }
        return t->shape;
    }
    // Tensor `n` is there with exactly `want` (torch order).
    Status expect(const std::string& n, const std::vector<int64_t>& want) const {
        const TensorInfo* t = index.find(prefix + n);
        if (!t) return missing(n);
        if (t->shape != want) {
            return Status::Error(model + ": tensor " + prefix + n + " has shape " +
                                 shape_string(t->shape) + ", expected " + shape_string(want));
        }
        return Status::Ok();
    }
    Status missing(const std::string& n) const {
        return Status::Error(model + ": missing tensor " + prefix + n);
    }
    // Tensor `n` is there but its shape does not fit: `why`.
    Status odd(const std::string& n, const std::string& why) const {
        const TensorInfo* t = index.find(prefix + n);
        return Status::Error(model + ": tensor " + prefix + n + " has shape " +
                             shape_string(t ? t->shape : std::vector<int64_t>{}) + ": " + why);
    }
};

}  // namespace ggdiff
