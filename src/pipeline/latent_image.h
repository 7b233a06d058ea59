// Conversions between 8-bit images and the float tensors the VAE works on.
#pragma once

#include "core/host_tensor.h"
#include "image/image.h"

namespace ggdiff {

// RGB(A) image -> [W, H, 3, 1] in [-1, 1] (alpha dropped).
HostTensor image_to_tensor(const Image& img);
// [W, H, 3, 1] in [-1, 1] -> RGB image, clamped, scaled by 255 and truncated (as
// the reference engines do, so that outputs match them bit for bit).
Image tensor_to_image(const HostTensor& t);
// Bilinear resize of an RGB(A) image.
Image resize_image(const Image& img, int width, int height);

}  // namespace ggdiff
