// Input images (-i, --end-img, --mask, --control-image) at the output size, as sd-cli loads
// them: an image of another aspect is first cut to the output's aspect around its centre
// (whole pixels, width or height truncated), then resized with stb_image_resize's box filter
// in sRGB space with clamped edges. Images already at the size are returned as they are.
#pragma once

#include "image/image.h"

namespace ggdiff {

Image fit_input_image(const Image& image, int width, int height);

}  // namespace ggdiff
