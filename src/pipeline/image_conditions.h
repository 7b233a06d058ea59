// Image conditions besides the init image, prepared at the output size for the generic
// generate path: the inpainting mask (pixel weights, its latent-size reductions, the
// masked init image) and the ControlNet's control image. Pure host code.
#pragma once

#include <vector>

#include "core/host_tensor.h"
#include "image/image.h"
#include "pipeline/family.h"

namespace ggdiff {

// Weights in [0, 1] per output pixel (row-major, width * height; 1 = repaint) from a mask
// image of any size and channel count (colour becomes grey luma, alpha is ignored),
// resized bilinearly when its size differs. `binary` rounds every weight to 0 or 1
// (inpainting models are trained on binary masks); otherwise grey stays a soft weight.
std::vector<float> mask_weights(const Image& mask, int width, int height, bool binary);

// [w * h] -> [(w / f) * (h / f)]: the largest weight of each f x f block (a latent pixel
// is repainted when any of its image pixels is).
std::vector<float> block_max(const std::vector<float>& m, int w, int h, int f);

// 3x3 max filter, same size (a max pool with stride 1 and padding 1): grows the repaint
// area by one pixel so that the blend does not cut through the seam.
std::vector<float> dilate3x3(const std::vector<float>& m, int w, int h);

// An image tensor [W, H, C, 1] in [-1, 1]: each pixel moves towards mid grey (0) by its
// mask weight, so a weight of 1 leaves mid grey (the "masked image" of inpainting models).
void grey_out(HostTensor& image, const std::vector<float>& mask);

// The inpainting inputs of a denoiser: [w, h, 1 + c, 1] with the latent mask in channel 0
// and the masked image's latent [w, h, c, 1] after it.
HostTensor inpaint_concat(const std::vector<float>& latent_mask, const HostTensor& masked_latent);

// x = x * m + keep * (1 - m) per latent channel; m has one weight per latent pixel.
void blend_latent(std::vector<float>& x, const std::vector<float>& keep,
                  const std::vector<float>& m);

// The ControlNet condition: the control image as RGB at width x height (bilinear), with
// Canny edges instead when `canny` is set, as [W, H, 3, 1] in [0, 1].
ControlHint make_control_hint(const Image& image, int width, int height, bool canny,
                              float strength);

}  // namespace ggdiff
