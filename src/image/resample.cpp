#include "image/resample.h"

#include <algorithm>
#include <cmath>

namespace ggdiff {
namespace {

struct Tap {
    int64_t index;
    double weight;
};

double triangle(double x) {
    x = std::abs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

double cubic(double x) {
    constexpr double a = -0.75;
    x = std::abs(x);
    if (x <= 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    return 0.0;
}

double sinc(double x) {
    if (std::abs(x) < 1e-12) return 1.0;
    const double px = M_PI * x;
    return std::sin(px) / px;
}

double lanczos3(double x) {
    x = std::abs(x);
    return x < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0;
}

// For each output index along one axis, the input indices it reads and their weights.
std::vector<std::vector<Tap>> axis_taps(int64_t in, int64_t out, ResampleFilter filter,
                                        bool antialias) {
    std::vector<std::vector<Tap>> taps(static_cast<size_t>(out));
    const double scale = static_cast<double>(in) / static_cast<double>(out);
    auto clamp_index = [in](int64_t i) { return std::min(std::max<int64_t>(i, 0), in - 1); };
    if (filter == ResampleFilter::Nearest || filter == ResampleFilter::NearestExact) {
        for (int64_t o = 0; o < out; ++o) {
            const int64_t i = filter == ResampleFilter::Nearest
                                  ? o * in / out
                                  : static_cast<int64_t>(std::floor((o + 0.5) * scale));
            taps[static_cast<size_t>(o)].push_back({clamp_index(i), 1.0});
        }
        return taps;
    }
    const double widen = antialias ? std::max(1.0, scale) : 1.0;
    const double radius = filter == ResampleFilter::Bilinear  ? 1.0
                          : filter == ResampleFilter::Bicubic ? 2.0
                                                              : 3.0;
    const double support = radius * widen;
    const bool normalise = antialias || filter == ResampleFilter::Lanczos;
    for (int64_t o = 0; o < out; ++o) {
        const double centre = (o + 0.5) * scale - 0.5;
        const auto first = static_cast<int64_t>(std::ceil(centre - support));
        const auto last = static_cast<int64_t>(std::floor(centre + support));
        std::vector<Tap>& t = taps[static_cast<size_t>(o)];
        double sum = 0.0;
        for (int64_t i = first; i <= last; ++i) {
            const double d = (centre - static_cast<double>(i)) / widen;
            const double wgt = filter == ResampleFilter::Bilinear  ? triangle(d)
                               : filter == ResampleFilter::Bicubic ? cubic(d)
                                                                   : lanczos3(d);
            if (wgt == 0.0) continue;
            t.push_back({clamp_index(i), wgt});
            sum += wgt;
        }
        if (normalise && std::abs(sum) > 1e-12) {
            for (Tap& tap : t) tap.weight /= sum;
        }
        if (t.empty())
            t.push_back({clamp_index(static_cast<int64_t>(std::floor(centre + 0.5))), 1.0});
    }
    return taps;
}

}  // namespace

std::vector<float> resample_planes(const std::vector<float>& in, int64_t w, int64_t h,
                                   int64_t planes, int64_t out_w, int64_t out_h,
                                   ResampleFilter filter, bool antialias) {
    if (w == out_w && h == out_h) return in;
    const auto xt = axis_taps(w, out_w, filter, antialias);
    const auto yt = axis_taps(h, out_h, filter, antialias);
    std::vector<float> out(static_cast<size_t>(out_w * out_h * planes));
    for (int64_t p = 0; p < planes; ++p) {
        const float* src = in.data() + p * w * h;
        float* dst = out.data() + p * out_w * out_h;
        for (int64_t y = 0; y < out_h; ++y) {
            for (int64_t x = 0; x < out_w; ++x) {
                double v = 0.0;
                for (const Tap& ty : yt[static_cast<size_t>(y)]) {
                    const float* row = src + ty.index * w;
                    for (const Tap& tx : xt[static_cast<size_t>(x)]) {
                        v += static_cast<double>(row[tx.index]) * tx.weight * ty.weight;
                    }
                }
                dst[y * out_w + x] = static_cast<float>(v);
            }
        }
    }
    return out;
}

}  // namespace ggdiff
