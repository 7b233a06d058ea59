// Test helpers for the UNet: the LDM tensor list of a config, a tiny safetensors
// writer, an in-memory nn::Weights on the ggml CPU backend, and a runner.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "models/diffusion/unet.h"
#include "nn/weights.h"

namespace ggdiff::unet_test {

// One tensor in torch order (outermost first), f32 data in that memory order, which is
// also ggml's (ne reversed).
struct Tensor {
    std::vector<int64_t> shape;
    std::vector<float> data;
};
using TensorMap = std::map<std::string, Tensor>;

// Names and torch shapes of every weight of an LDM UNet with this config.
std::map<std::string, std::vector<int64_t>> unet_layout(const models::UNetConfig& cfg,
                                                        const std::string& prefix);

// Deterministic weights for a layout, scaled so activations stay O(1): norm scales
// near 1, small biases, matrices ~ N(0, 1/fan_in).
TensorMap random_weights(const std::map<std::string, std::vector<int64_t>>& layout, uint32_t seed);

Tensor random_tensor(std::vector<int64_t> shape, uint32_t seed, float scale = 1.0f);

// Writes F32 data, or F16 zeros when `zeros_f16` (shapes only matter).
Status write_safetensors(const std::string& path, const TensorMap& tensors, bool zeros_f16 = false);

// nn::Weights over a TensorMap; tensors live in a CPU backend buffer after upload().
class MapWeights : public nn::Weights {
  public:
    explicit MapWeights(const TensorMap& src);
    ~MapWeights() override;
    MapWeights(const MapWeights&) = delete;
    MapWeights& operator=(const MapWeights&) = delete;

    ggml_tensor* get(const std::string& name, const std::vector<int64_t>& ne) override;
    bool has(const std::string& name) const override { return src_.count(name) > 0; }

    const Status& status() const { return status_; }
    const std::set<std::string>& requested() const { return requested_; }
    Status upload(void* backend);  // ggml_backend_t

  private:
    const TensorMap& src_;
    ggml_context* wctx_ = nullptr;
    void* buffer_ = nullptr;  // ggml_backend_buffer_t
    std::map<std::string, ggml_tensor*> made_;
    std::set<std::string> requested_;
    Status status_;
};

struct UNetInputs {
    Tensor x;          // [N, C, H, W]
    Tensor timesteps;  // [N]
    Tensor context;    // [N or 1, T, context_dim]
};

// Builds and runs the UNet on the CPU backend. `nodes` receives the graph size.
Result<HostTensor> run_unet(const models::UNetConfig& cfg, const TensorMap& weights,
                            const UNetInputs& in, const std::string& prefix, int* nodes = nullptr);

// Graph-builds (no compute) and returns the weight names the builder asked for.
Result<std::set<std::string>> requested_weights(const models::UNetConfig& cfg,
                                                const TensorMap& weights, const std::string& prefix,
                                                int64_t latent, int* nodes = nullptr);

}  // namespace ggdiff::unet_test
