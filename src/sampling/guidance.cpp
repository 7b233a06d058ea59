#include "sampling/guidance.h"

namespace ggdiff::sampling {

void apply_cfg(const std::vector<float>& cond, const std::vector<float>& uncond, float scale,
               std::vector<float>& out) {
    out.resize(cond.size());
    for (size_t i = 0; i < cond.size(); ++i) out[i] = uncond[i] + scale * (cond[i] - uncond[i]);
}

void apply_img_cfg(const std::vector<float>& cond, const std::vector<float>& uncond,
                   const std::vector<float>& img_uncond, float txt_scale, float img_scale,
                   std::vector<float>& out) {
    out.resize(cond.size());
    for (size_t i = 0; i < cond.size(); ++i)
        out[i] = img_uncond[i] + img_scale * (uncond[i] - img_uncond[i]) +
                 txt_scale * (cond[i] - uncond[i]);
}

bool SlgParams::active(int step, size_t schedule_size) const {
    if (scale == 0.0f || layers.empty() || schedule_size == 0) return false;
    const int first = static_cast<int>(start * static_cast<float>(schedule_size));
    const int last = static_cast<int>(end * static_cast<float>(schedule_size));
    const int counted = step + 1;
    return counted > first && counted < last;
}

void apply_slg(const std::vector<float>& cond, const std::vector<float>& skip_cond, float scale,
               std::vector<float>& out) {
    for (size_t i = 0; i < out.size() && i < cond.size(); ++i)
        out[i] += (cond[i] - skip_cond[i]) * scale;
}

}  // namespace ggdiff::sampling
