// How graph builders reach model weights: by our own canonical string key plus the
// shape the builder expects (ggml order, innermost first). A Weights implementation
// always returns a tensor of exactly that shape, so graph building never trips a
// ggml assertion; a missing or mis-shaped weight is recorded as an error instead
// (first offending tensor wins) and reported before any compute happens.
#pragma once

#include <ggml.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ggdiff::nn {

class Weights {
  public:
    virtual ~Weights() = default;
    // Returns the weight `name` with ggml shape `ne` (trailing 1s may be omitted).
    // A weight stored with the same element count and matching leading dimensions
    // in another rank (e.g. VAE attention [C,C,1,1] vs [C,C]) is reshaped.
    virtual ggml_tensor* get(const std::string& name, const std::vector<int64_t>& ne) = 0;
    // Whether an optional weight exists in the checkpoint.
    virtual bool has(const std::string& name) const = 0;
};

// Everything a graph builder needs: the compute context and the weights.
struct Ctx {
    ggml_context* ctx;
    Weights* w;
    ggml_tensor* W(const std::string& name, const std::vector<int64_t>& ne) {
        return w->get(name, ne);
    }
};

}  // namespace ggdiff::nn
