// Canny edge detection of a control image, as sd-cli's --canny does it: grey luma, a 5x5
// Gaussian blur (sigma 1.4), Sobel gradients, non-maximum suppression, then a double
// threshold with hysteresis (high 0.08 of the strongest edge, low 0.08 of that; weak
// edges 0.8, strong 1.0). The result keeps that implementation's quirks (its direction
// tests, its untouched sub-threshold responses and its 3-pixel black border), so that a
// ControlNet sees the same edges as with the reference engine.
#pragma once

#include "image/image.h"

namespace ggdiff {

struct CannyOptions {
    float high_threshold = 0.08f;
    float low_threshold = 0.08f;
    float weak = 0.8f;
    float strong = 1.0f;
    bool inverse = false;  // white background, black edges
};

// RGB (or any channel count) image -> RGB image of the edge map (grey in all channels).
Image canny_edges(const Image& image, const CannyOptions& options = {});

}  // namespace ggdiff
