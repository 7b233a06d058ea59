// Conversions between 8-bit images and the float tensors the VAE works on.
#pragma once

#include "core/host_tensor.h"
#include "image/image.h"

namespace ggdiff {

// Grey/RGB(A) image -> [W, H, channels, 1] in [-1, 1]: channels 3 drops alpha (grey is
// replicated); channels 4 takes an RGBA image (see convert_channels).
HostTensor image_to_tensor(const Image& img, int channels = 3);
// [W, H, 3 or 4, 1] in [-1, 1] -> RGB or RGBA image, clamped, scaled by 255 and truncated (as
// the reference engines do, so that outputs match them bit for bit).
Image tensor_to_image(const HostTensor& t);
// Bilinear resize of an RGB(A) image.
Image resize_image(const Image& img, int width, int height);
// Nearest-neighbour resize: output pixel x takes input pixel floor(x * in / out).
Image resize_image_nearest(const Image& img, int width, int height);

}  // namespace ggdiff
