// Overflow-checked size arithmetic for every size computed from a file or a request.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace ggdiff {

// a * b and a + b; false (and *out untouched) on overflow.
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) {
    uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}
inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) {
    uint64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

// The element count of `shape`: 0 when any dimension is 0 (whatever the others are), false
// for a negative dimension or a product past INT64_MAX.
inline bool checked_numel(const std::vector<int64_t>& shape, int64_t* out) {
    for (int64_t d : shape) {
        if (d < 0) return false;
        if (d == 0) {
            *out = 0;
            return true;
        }
    }
    int64_t n = 1;
    for (int64_t d : shape) {
        if (__builtin_mul_overflow(n, d, &n)) return false;
    }
    *out = n;
    return true;
}

}  // namespace ggdiff
