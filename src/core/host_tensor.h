// A small float tensor in host memory. Shape is in ggml order: ne[0] is the
// fastest-moving (innermost) dimension, so a latent is {W, H, C, N}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ggdiff {

struct HostTensor {
    std::vector<int64_t> ne;  // ggml order, 1..4 dims
    std::vector<float> data;

    HostTensor() = default;
    explicit HostTensor(std::vector<int64_t> shape, float fill = 0.0f)
        : ne(std::move(shape)), data(static_cast<size_t>(count(ne)), fill) {}

    static int64_t count(const std::vector<int64_t>& shape) {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return shape.empty() ? 0 : n;
    }
    int64_t numel() const { return static_cast<int64_t>(data.size()); }
    int64_t dim(size_t i) const { return i < ne.size() ? ne[i] : 1; }
    float* ptr() { return data.data(); }
    const float* ptr() const { return data.data(); }

    // Same-sized tensors stacked on a new outer axis: n x [a, b] -> [a, b, n] (a batch of
    // per-item conditionings).
    static HostTensor stack(const std::vector<const HostTensor*>& items, int64_t a, int64_t b) {
        HostTensor out({a, b, static_cast<int64_t>(items.size())});
        float* dst = out.ptr();
        for (const HostTensor* t : items) {
            for (float v : t->data) *dst++ = v;
        }
        return out;
    }
};

}  // namespace ggdiff
