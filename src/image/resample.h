// Resizing planes of floats (latents, decoded images) the way torch.nn.functional.interpolate
// does without align_corners: sample centres at (i + 0.5) * in / out - 0.5, edges clamped.
// The hires fix upscales latents and images with it (A1111's "Latent (...)" upscalers and the
// image upscalers "Lanczos" and "Nearest").
#pragma once

#include <cstdint>
#include <vector>

namespace ggdiff {

enum class ResampleFilter {
    Nearest,       // source index dst * in / out (integer), as torch's "nearest"
    NearestExact,  // source index floor((dst + 0.5) * in / out), as torch's "nearest-exact"
    Bilinear,      // triangle filter
    Bicubic,       // cubic convolution with a = -0.75 (torch's bicubic)
    Lanczos,       // Lanczos-3, weights normalised to sum 1
};

// Resizes `planes` consecutive row-major w x h planes of `in` to out_w x out_h each. With
// `antialias` the filters widen by in/out when shrinking and their weights are normalised
// (torch's antialias=True); it has no effect on the nearest filters. Every size must be >= 1
// and `in` must hold w * h * planes values.
std::vector<float> resample_planes(const std::vector<float>& in, int64_t w, int64_t h,
                                   int64_t planes, int64_t out_w, int64_t out_h,
                                   ResampleFilter filter, bool antialias = false);

}  // namespace ggdiff
