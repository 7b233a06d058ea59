#include "families/hidream_o1/edit.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "image/resample.h"
#include "pipeline/latent_image.h"

namespace ggdiff::models {

namespace {

constexpr int kPatch = 32;            // HiDream-O1's pixel patch
constexpr int32_t kImageBase = 4096;  // the generated image's time position

// The reference's calculate_dimensions: a max_size^2 area at `ratio` (width / height), sides
// truncated to multiples of 32 (at least 32).
std::pair<int, int> cond_dimensions(int max_size, double ratio) {
    int w = static_cast<int>(std::sqrt(max_size * max_size * ratio));
    int h = static_cast<int>(w / ratio);
    w = std::max(kPatch, w / kPatch * kPatch);
    h = std::max(kPatch, h / kPatch * kPatch);
    return {w, h};
}

// `planes` [w, h, 3] resized to out_w x out_h with `filter`.
HostTensor resized(const HostTensor& t, int64_t out_w, int64_t out_h, ResampleFilter filter) {
    HostTensor out({out_w, out_h, 3});
    out.data = resample_planes(t.data, t.dim(0), t.dim(1), 3, out_w, out_h, filter);
    return out;
}

// Columns [x0, x0 + w) and rows [y0, y0 + h) of t [W, H, 3].
HostTensor cropped(const HostTensor& t, int64_t x0, int64_t y0, int64_t w, int64_t h) {
    HostTensor out({w, h, 3});
    for (int64_t c = 0; c < 3; ++c) {
        for (int64_t y = 0; y < h; ++y) {
            const float* src = t.ptr() + (c * t.dim(1) + y0 + y) * t.dim(0) + x0;
            std::copy(src, src + w, out.ptr() + (c * h + y) * w);
        }
    }
    return out;
}

// The reference's resize_to_area: the largest of four roundings of the scaled size (in
// multiples of 32) whose area is at most image_size^2, reached by a bicubic resize that keeps
// the aspect ratio and a centre crop.
HostTensor resize_to_area(const HostTensor& image, int image_size) {
    const int64_t width = image.dim(0), height = image.dim(1);
    const int64_t s_max = static_cast<int64_t>(image_size) * image_size;
    const double scale =
        std::sqrt(static_cast<double>(s_max) / static_cast<double>(width * height));
    const int64_t wr = std::llround(width * scale), hr = std::llround(height * scale);
    const int64_t wf = static_cast<int64_t>(std::floor(width * scale));
    const int64_t hf = static_cast<int64_t>(std::floor(height * scale));
    std::vector<std::pair<int64_t, int64_t>> sizes = {{wr / kPatch * kPatch, hr / kPatch * kPatch},
                                                      {wr / kPatch * kPatch, hf / kPatch * kPatch},
                                                      {wf / kPatch * kPatch, hr / kPatch * kPatch},
                                                      {wf / kPatch * kPatch, hf / kPatch * kPatch}};
    std::sort(sizes.begin(), sizes.end(),
              [](const auto& a, const auto& b) { return a.first * a.second > b.first * b.second; });
    std::pair<int64_t, int64_t> size = sizes.back();
    for (const auto& s : sizes) {
        if (s.first > 0 && s.second > 0 && s.first * s.second <= s_max) {
            size = s;
            break;
        }
    }
    const double s1 = static_cast<double>(width) / static_cast<double>(size.first);
    const double s2 = static_cast<double>(height) / static_cast<double>(size.second);
    if (s1 < s2) {
        const int64_t rh = std::llround(height / s1);
        const HostTensor r = resized(image, size.first, rh, ResampleFilter::Bicubic);
        return cropped(r, 0, (rh - size.second) / 2, size.first, size.second);
    }
    const int64_t rw = std::llround(width / s2);
    const HostTensor r = resized(image, rw, size.second, ResampleFilter::Bicubic);
    return cropped(r, (rw - size.first) / 2, 0, size.first, size.second);
}

}  // namespace

HiDreamO1EditImage hidream_o1_edit_image(const Image& image, int count, int width, int height) {
    const int side = std::max(width, height);
    const int max_size = count == 1   ? side
                         : count == 2 ? side * 48 / 64
                         : count <= 4 ? side / 2
                         : count <= 8 ? side * 24 / 64
                                      : side / 4;
    const int cond = count <= 4 ? 384 : count <= 8 ? 384 * 48 / 64 : 384 / 2;
    // The image as floats in [0, 1].
    HostTensor rgb = image_to_tensor(image, 3);
    rgb.ne = {rgb.dim(0), rgb.dim(1), 3};
    for (float& v : rgb.data) v = (v + 1.0f) * 0.5f;

    HostTensor ref = resize_to_area(rgb, max_size);
    for (float& v : ref.data) v = std::min(1.0f, std::max(0.0f, v));
    const auto [cw, ch] =
        cond_dimensions(cond, static_cast<double>(ref.dim(0)) / static_cast<double>(ref.dim(1)));
    HiDreamO1EditImage out;
    out.vision = resized(ref, cw, ch, ResampleFilter::Nearest);
    for (float& v : out.vision.data) v = v * 2.0f - 1.0f;
    for (float& v : ref.data) v = v * 2.0f - 1.0f;
    out.pixels = std::move(ref);
    return out;
}

std::vector<int32_t> hidream_o1_sequence_positions(const std::vector<int32_t>& ids,
                                                   const std::vector<HiDreamO1Grid>& grids) {
    const int64_t n = static_cast<int64_t>(ids.size());
    std::vector<int32_t> t, h, w;
    // The next text position: one past the highest time position so far (the reference
    // looks at the time stream only).
    auto next = [&]() { return t.empty() ? 0 : *std::max_element(t.begin(), t.end()) + 1; };
    auto push = [&](int32_t a, int32_t b, int32_t c) {
        t.push_back(a);
        h.push_back(b);
        w.push_back(c);
    };
    int64_t st = 0;
    size_t image = 0;
    int32_t fix_point = kImageBase;
    while (st < n) {
        int64_t ed = st;
        while (ed < n && ids[static_cast<size_t>(ed)] != kHiDreamO1ImageToken) ++ed;
        const int32_t start = next();
        if (ed >= n || image >= grids.size()) {
            for (int64_t i = 0; i < n - st; ++i) push(start + i, start + i, start + i);
            break;
        }
        const HiDreamO1Grid& g = grids[image];
        const int64_t text = std::max<int64_t>(0, ed - st - (g.skip_start ? 1 : 0));
        for (int64_t i = 0; i < text; ++i) {
            const int32_t p = start + static_cast<int32_t>(i);
            push(p, p, p);
        }
        int32_t base = start + static_cast<int32_t>(text);
        if (g.skip_start) {
            base = fix_point > 0 ? fix_point : start;
            fix_point = 0;
        }
        for (int32_t ti = 0; ti < g.t; ++ti) {
            for (int32_t hi = 0; hi < g.h; ++hi) {
                for (int32_t wi = 0; wi < g.w; ++wi) push(base + ti, base + hi, base + wi);
            }
        }
        st = ed + static_cast<int64_t>(g.t) * g.h * g.w;
        ++image;
    }
    std::vector<int32_t> pos(static_cast<size_t>(4 * n), 0);
    for (int64_t i = 0; i < n && i < static_cast<int64_t>(t.size()); ++i) {
        pos[i] = t[i];
        pos[n + i] = h[i];
        pos[2 * n + i] = w[i];
    }
    return pos;
}

}  // namespace ggdiff::models
