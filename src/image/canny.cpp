#include "image/canny.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ggdiff {
namespace {

constexpr float kPi = 3.14159265358979323846f;

// A single-channel float plane.
struct Plane {
    int w = 0, h = 0;
    std::vector<float> v;
    Plane(int width, int height) : w(width), h(height), v(static_cast<size_t>(width) * height) {}
    float& at(int x, int y) { return v[static_cast<size_t>(y) * w + x]; }
    float at(int x, int y) const { return v[static_cast<size_t>(y) * w + x]; }
};

// Cross-correlation with a k x k kernel (row-major, kernel[ky * k + kx]) and zero padding.
Plane convolve(const Plane& in, const std::vector<float>& kernel, int k, int pad) {
    Plane out(in.w, in.h);
    for (int y = 0; y < in.h; ++y) {
        for (int x = 0; x < in.w; ++x) {
            float sum = 0.0f;
            for (int ky = 0; ky < k; ++ky) {
                const int iy = y + ky - pad;
                if (iy < 0 || iy >= in.h) continue;
                for (int kx = 0; kx < k; ++kx) {
                    const int ix = x + kx - pad;
                    if (ix < 0 || ix >= in.w) continue;
                    sum += in.at(ix, iy) * kernel[static_cast<size_t>(ky) * k + kx];
                }
            }
            out.at(x, y) = sum;
        }
    }
    return out;
}

// 5x5 Gaussian, sigma 1.4, scaled by 1 / (2 pi sigma^2) (not renormalized).
std::vector<float> gaussian5() {
    const float sigma = 1.4f;
    const float normal = 1.0f / (2.0f * kPi * sigma * sigma);
    std::vector<float> k(25);
    for (int y = 0; y < 5; ++y) {
        for (int x = 0; x < 5; ++x) {
            const float gx = static_cast<float>(y - 2), gy = static_cast<float>(x - 2);
            k[static_cast<size_t>(y) * 5 + x] =
                std::exp(-((gx * gx + gy * gy) / (2.0f * sigma * sigma))) * normal;
        }
    }
    return k;
}

float max_of(const std::vector<float>& v) {
    float m = -std::numeric_limits<float>::infinity();
    for (float x : v) m = std::max(m, x);
    return m;
}

// Keeps a pixel when it is not smaller than its two neighbours across the edge. The
// direction tests are the reference implementation's as written: they pick the vertical
// neighbours for every angle up to 157.5 degrees and compare against 1 above that.
Plane non_max_suppression(const Plane& g, const Plane& theta) {
    Plane out(g.w, g.h);
    for (int y = 1; y < g.h - 1; ++y) {
        for (int x = 1; x < g.w - 1; ++x) {
            float angle = theta.at(x, y) * 180.0f / kPi;
            if (angle < 0.0f) angle += 180.0f;
            float q = 1.0f, r = 1.0f;
            if ((0.0f >= angle && angle < 22.5f) || (157.5f >= angle && angle <= 180.0f)) {
                q = g.at(x, y + 1);
                r = g.at(x, y - 1);
            } else if (22.5f >= angle && angle < 67.5f) {
                q = g.at(x + 1, y - 1);
                r = g.at(x - 1, y + 1);
            } else if (67.5f >= angle && angle < 112.5f) {
                q = g.at(x + 1, y);
                r = g.at(x - 1, y);
            } else if (112.5f >= angle && angle < 157.5f) {
                q = g.at(x - 1, y - 1);
                r = g.at(x + 1, y + 1);
            }
            const float cur = g.at(x, y);
            out.at(x, y) = cur >= q && cur >= r ? cur : 0.0f;
        }
    }
    return out;
}

void hysteresis(Plane& img, const CannyOptions& o) {
    const float ht = max_of(img.v) * o.high_threshold;
    const float lt = ht * o.low_threshold;
    for (float& v : img.v) {
        if (v >= ht) {
            v = o.strong;
        } else if (v <= ht && v >= lt) {
            v = o.weak;
        }
    }
    for (int y = 0; y < img.h; ++y) {
        for (int x = 0; x < img.w; ++x) {
            if (!(x >= 3 && x <= img.w - 3 && y >= 3 && y <= img.h - 3)) img.at(x, y) = 0.0f;
        }
    }
    // One pass in scan order, in place: a weak pixel next to a strong one becomes strong.
    for (int y = 1; y < img.h - 1; ++y) {
        for (int x = 1; x < img.w - 1; ++x) {
            if (img.at(x, y) != o.weak) continue;
            const bool strong_next =
                img.at(x + 1, y - 1) == o.strong || img.at(x + 1, y) == o.strong ||
                img.at(x, y - 1) == o.strong || img.at(x, y + 1) == o.strong ||
                img.at(x - 1, y - 1) == o.strong || img.at(x - 1, y) == o.strong;
            img.at(x, y) = strong_next ? o.strong : 0.0f;
        }
    }
}

uint8_t to_byte(float v) {
    if (v <= 0.0f) return 0;
    if (v >= 1.0f) return 255;
    return static_cast<uint8_t>(v * 255.0f + 0.5f);
}

}  // namespace

Image canny_edges(const Image& image, const CannyOptions& o) {
    const Image rgb = image.channels == 3 ? image : convert_channels(image, 3);
    Plane grey(rgb.width, rgb.height);
    for (size_t i = 0; i < grey.v.size(); ++i) {
        const uint8_t* px = &rgb.pixels[i * 3];
        grey.v[i] =
            0.2989f * (px[0] / 255.0f) + 0.5870f * (px[1] / 255.0f) + 0.1140f * (px[2] / 255.0f);
    }
    grey = convolve(grey, gaussian5(), 5, 2);
    const std::vector<float> kx = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
    const std::vector<float> ky = {1, 2, 1, 0, 0, 0, -1, -2, -1};
    const Plane ix = convolve(grey, kx, 3, 1);
    const Plane iy = convolve(grey, ky, 3, 1);
    Plane g(grey.w, grey.h), theta(grey.w, grey.h);
    for (size_t i = 0; i < g.v.size(); ++i) {
        g.v[i] = std::sqrt(ix.v[i] * ix.v[i] + iy.v[i] * iy.v[i]);
        theta.v[i] = std::atan2(iy.v[i], ix.v[i]);
    }
    const float gmax = max_of(g.v);
    if (gmax != 0.0f && std::isfinite(gmax)) {
        for (float& v : g.v) v *= 1.0f / gmax;
    }
    Plane edges = non_max_suppression(g, theta);
    hysteresis(edges, o);

    Image out;
    out.width = rgb.width;
    out.height = rgb.height;
    out.channels = 3;
    out.pixels.resize(rgb.pixels.size());
    for (size_t i = 0; i < edges.v.size(); ++i) {
        const uint8_t b = to_byte(o.inverse ? 1.0f - edges.v[i] : edges.v[i]);
        out.pixels[i * 3] = out.pixels[i * 3 + 1] = out.pixels[i * 3 + 2] = b;
    }
    return out;
}

}  // namespace ggdiff
