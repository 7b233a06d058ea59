// What one LoRA module does to one weight, read from its file: the low-rank factors of a
// plain LoRA / LoCon pair (applied at run time as two small products), or the dense
// weight difference of anything else (LoCon with a Tucker core, LoHa, LoKr, full diffs).
// Shapes are checked against the weight; an error names the LoRA tensor and the weight.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "io/lora_file.h"
#include "io/lora_names.h"

namespace ggdiff {

struct LoraUpdate {
    // Low rank: delta = scale * up @ down, down [rank, k] with k = in * kh * kw.
    std::vector<float> down, up;
    int64_t rank = 0, out = 0, k = 0;
    int64_t kh = 1, kw = 1;  // down's kernel (3x3 for LoCon on a 3x3 convolution)
    float scale = 1.0f;      // alpha / rank (or the file's scale) times the multiplier
    // Otherwise the dense difference in the weight's element order, already scaled.
    std::vector<float> dense;
    // Where the update's `out` rows land in the weight (which has `weight_rows` rows): empty
    // for all of them in order; else its rows [from, from + count) on the weight's rows
    // [to, to + count), block by block (a third of a fused q/k/v weight, ...).
    std::vector<LoraRows> rows;
    int64_t weight_rows = 0;
    bool low_rank() const { return dense.empty(); }
    bool whole() const { return rows.empty(); }
};

// Reads the module's tensors and checks them against the weight's torch shape `weight`
// (e.g. [out, in] or [out, in, kh, kw]). `what` names the module in errors
// ("kohya.safetensors: lora_unet_..."). A bias difference (diff_b) is not read here.
Result<LoraUpdate> read_lora_update(const LoraFile& file, const LoraModule& module,
                                    const std::vector<int64_t>& weight, float multiplier,
                                    const std::string& weight_name);

// The update for some of its output rows only, landing on rows of a weight of `weight_rows`
// rows: blocks of (from: its own rows, to: the weight's rows, count). The result's rows are
// the selected ones packed in block order. All the rows onto a weight of that many rows, in
// order, give the update back unchanged (whole).
LoraUpdate select_rows(const LoraUpdate& u, const std::vector<LoraRows>& blocks,
                       int64_t weight_rows);

// Row-major data with one row of `row_len` values per output row of `u` (its up factor, its
// dense difference) laid out over the rows of the whole weight: [weight_rows, row_len], zero
// where `u` does not land. A whole update's data comes back as it is.
std::vector<float> spread_rows(const LoraUpdate& u, const std::vector<float>& data,
                               int64_t row_len);

// The dense difference of an update (the low-rank product computed on the CPU backend),
// in the weight's element order.
Result<std::vector<float>> dense_delta(const LoraUpdate& u, int threads);

// rows x cols row-major product a[m, r] @ b[r, n] on the CPU backend.
Result<std::vector<float>> cpu_matmul(const std::vector<float>& a, const std::vector<float>& b,
                                      int64_t m, int64_t r, int64_t n, int threads);

}  // namespace ggdiff
