// Published noise-level tables some schedules are built from, and the log-linear
// resampling that stretches a table to any step count.
#pragma once

#include <cstddef>
#include <vector>

namespace ggdiff::sampling {

enum class AysModel { Sd1, Sdxl, Svd };

// NVIDIA's Align Your Steps 10-step schedules (11 levels, descending, last one > 0).
const std::vector<float>& ays_table(AysModel model);

// GITS (Chen et al. 2024) schedules for coefficient 1.20 in SD1 sigma space: entry k holds
// k + 2 steps (k + 3 levels, descending), for 2..20 steps.
const std::vector<std::vector<float>>& gits_table();

// Resamples a descending sigma list to new_len points, linear in log(sigma) over a
// uniform [0, 1] grid (stable-diffusion.cpp's loglinear_interp, including its float grid).
std::vector<float> log_linear_interpolation(const std::vector<float>& sigmas, size_t new_len);

}  // namespace ggdiff::sampling
