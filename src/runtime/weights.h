// How graph builders reach model weights: by our own canonical string key plus the
// shape the builder expects (ggml order, innermost first). A Weights implementation
// always returns a tensor of exactly that shape, so graph building never trips a
// ggml assertion; a missing or mis-shaped weight is recorded as an error instead
// (first offending tensor wins) and reported before any compute happens.
// The runtime implements these (WeightStore) and the nn layer builders use them, so they
// live here: runtime never includes nn (docs/layers.md).
#pragma once

#include <ggml.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ggdiff {

// An update a weight gets at run time instead of being merged into it (LoRA applied
// "at_runtime"): the layer adds scale * up(down(x)), or the product with the dense
// difference, to its output. Tensors are f32 on the weight's device; down and dense keep
// the weight's kernel layout ([kw, kh, in, rank] / the weight's own shape), up is
// [1, 1, rank, out].
struct WeightAdapter {
    ggml_tensor* down = nullptr;
    ggml_tensor* up = nullptr;
    ggml_tensor* dense = nullptr;
    float scale = 1.0f;
};

class Weights {
  public:
    virtual ~Weights() = default;
    // Returns the weight `name` with ggml shape `ne` (trailing 1s may be omitted).
    // A weight stored with the same element count and matching leading dimensions
    // in another rank (e.g. VAE attention [C,C,1,1] vs [C,C]) is reshaped.
    virtual ggml_tensor* get(const std::string& name, const std::vector<int64_t>& ne) = 0;
    // Whether an optional weight exists in the checkpoint.
    virtual bool has(const std::string& name) const = 0;
    // The run-time updates of weight `name` (nullptr: none).
    virtual const std::vector<WeightAdapter>* adapters(const std::string& name) const {
        (void)name;
        return nullptr;
    }
};

// Everything a graph builder needs: the compute context and the weights (the layer
// builders of src/nn know it as nn::Ctx).
struct BuildCtx {
    ggml_context* ctx;
    Weights* w;
    ggml_tensor* W(const std::string& name, const std::vector<int64_t>& ne) {
        return w->get(name, ne);
    }
};

}  // namespace ggdiff
