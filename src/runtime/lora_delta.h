// What one LoRA module does to one weight, read from its file: the low-rank factors of a
// plain LoRA / LoCon pair (applied at run time as two small products), or the dense
// weight difference of anything else (LoCon with a Tucker core, LoHa, LoKr, full diffs).
// Shapes are checked against the weight; an error names the LoRA tensor and the weight.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/lora_file.h"

namespace ggdiff {

struct LoraUpdate {
    // Low rank: delta = scale * up @ down, down [rank, k] with k = in * kh * kw.
    std::vector<float> down, up;
    int64_t rank = 0, out = 0, k = 0;
    int64_t kh = 1, kw = 1;  // down's kernel (3x3 for LoCon on a 3x3 convolution)
    float scale = 1.0f;      // alpha / rank (or the file's scale) times the multiplier
    // Otherwise the dense difference in the weight's element order, already scaled.
    std::vector<float> dense;
    bool low_rank() const { return dense.empty(); }
};

// Reads the module's tensors and checks them against the weight's torch shape `weight`
// (e.g. [out, in] or [out, in, kh, kw]). `what` names the module in errors
// ("kohya.safetensors: lora_unet_..."). A bias difference (diff_b) is not read here.
Result<LoraUpdate> read_lora_update(const LoraFile& file, const LoraModule& module,
                                    const std::vector<int64_t>& weight, float multiplier,
                                    const std::string& weight_name);

// The dense difference of an update (the low-rank product computed on the CPU backend),
// in the weight's element order.
Result<std::vector<float>> dense_delta(const LoraUpdate& u, int threads);

// rows x cols row-major product a[m, r] @ b[r, n] on the CPU backend.
Result<std::vector<float>> cpu_matmul(const std::vector<float>& a, const std::vector<float>& b,
                                      int64_t m, int64_t r, int64_t n, int threads);

}  // namespace ggdiff
