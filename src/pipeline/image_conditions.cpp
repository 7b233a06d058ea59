#include "pipeline/image_conditions.h"

#include <algorithm>
#include <cmath>

#include "image/canny.h"
#include "image/input_fit.h"
#include "pipeline/latent_image.h"

namespace ggdiff {

std::vector<float> mask_weights(const Image& mask, int width, int height, bool binary) {
    Image grey = mask.channels == 1 ? mask : convert_channels(mask, 1);
    grey = fit_input_image(grey, width, height);
    std::vector<float> m(grey.pixels.size());
    for (size_t i = 0; i < m.size(); ++i) {
        const float v = grey.pixels[i] / 255.0f;
        m[i] = binary ? std::round(v) : v;
    }
    return m;
}

std::vector<float> block_max(const std::vector<float>& m, int w, int h, int f) {
    const int lw = w / f, lh = h / f;
    std::vector<float> out(static_cast<size_t>(lw) * lh, 0.0f);
    for (int y = 0; y < lh * f; ++y) {
        for (int x = 0; x < lw * f; ++x) {
            float& o = out[static_cast<size_t>(y / f) * lw + x / f];
            o = std::max(o, m[static_cast<size_t>(y) * w + x]);
        }
    }
    return out;
}

std::vector<float> dilate3x3(const std::vector<float>& m, int w, int h) {
    std::vector<float> out(m.size());
    for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
            float v = m[static_cast<size_t>(y) * w + x];
            for (int yy = std::max(0, y - 1); yy <= std::min(h - 1, y + 1); ++yy) {
                for (int xx = std::max(0, x - 1); xx <= std::min(w - 1, x + 1); ++xx) {
                    v = std::max(v, m[static_cast<size_t>(yy) * w + xx]);
                }
            }
            out[static_cast<size_t>(y) * w + x] = v;
        }
    }
    return out;
}

void grey_out(HostTensor& image, const std::vector<float>& mask) {
    const size_t plane = mask.size();
    for (size_t i = 0; i < image.data.size(); ++i) image.data[i] *= 1.0f - mask[i % plane];
}

HostTensor inpaint_concat(const std::vector<float>& latent_mask, const HostTensor& masked_latent) {
    const int64_t w = masked_latent.dim(0), h = masked_latent.dim(1), c = masked_latent.dim(2);
    HostTensor out({w, h, 1 + c, 1});
    std::copy(latent_mask.begin(), latent_mask.end(), out.data.begin());
    std::copy(masked_latent.data.begin(), masked_latent.data.end(),
              out.data.begin() + static_cast<long>(latent_mask.size()));
    return out;
}

void blend_latent(std::vector<float>& x, const std::vector<float>& keep,
                  const std::vector<float>& m) {
    const size_t plane = m.size();
    for (size_t i = 0; i < x.size(); ++i) {
        const float w = m[i % plane];
        x[i] = x[i] * w + keep[i] * (1.0f - w);
    }
}

ControlHint make_control_hint(const Image& image, int width, int height, bool canny,
                              float strength) {
    Image rgb = image.channels == 3 ? image : convert_channels(image, 3);
    rgb = fit_input_image(rgb, width, height);
    if (canny) rgb = canny_edges(rgb);
    ControlHint hint;
    hint.strength = strength;
    hint.image = HostTensor({width, height, 3, 1});
    const size_t plane = static_cast<size_t>(width) * height;
    for (size_t i = 0; i < plane; ++i) {
        for (size_t c = 0; c < 3; ++c)
            hint.image.data[c * plane + i] = rgb.pixels[i * 3 + c] / 255.0f;
    }
    return hint;
}

}  // namespace ggdiff
