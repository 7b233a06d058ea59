#include "sampling/torch_cpu_rng.h"

#include <cmath>

namespace ggdiff::sampling {

namespace {
constexpr size_t kN = 624;
constexpr size_t kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu;
constexpr uint32_t kUpper = 0x80000000u;
constexpr uint32_t kLower = 0x7fffffffu;

// torch's Box-Muller over 16 uniforms: data[0..7] give radii, data[8..15] angles.
void normal_fill_16(float* data) {
    for (int j = 0; j < 8; ++j) {
        const float u1 = 1.0f - data[j];  // [0,1) -> (0,1] so the log is finite
        const float u2 = data[j + 8];
        const float radius = std::sqrt(-2.0f * std::log(u1));
        const float theta = 2.0f * 3.14159265358979323846f * u2;
        data[j] = radius * std::cos(theta);
        data[j + 8] = radius * std::sin(theta);
    }
}
}  // namespace

void Mt19937::seed_with(uint32_t seed) {
    state_[0] = seed;
    for (size_t j = 1; j < kN; ++j) {
        const uint32_t prev = state_[j - 1];
        state_[j] = 1812433253u * (prev ^ (prev >> 30)) + static_cast<uint32_t>(j);
    }
    index_ = kN;
}

void Mt19937::twist() {
    for (size_t i = 0; i < kN; ++i) {
        const uint32_t y = (state_[i] & kUpper) | (state_[(i + 1) % kN] & kLower);
        state_[i] = state_[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
    }
    index_ = 0;
}

uint32_t Mt19937::next_u32() {
    if (index_ >= kN) twist();
    uint32_t y = state_[index_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

uint64_t Mt19937::next_u64() {
    const uint64_t hi = next_u32();
    const uint64_t lo = next_u32();
    return (hi << 32) | lo;
}

void TorchCpuRng::manual_seed(uint64_t seed) {
    mt_.seed_with(static_cast<uint32_t>(seed & 0xffffffffu));
    has_cached_normal_ = false;
    cached_normal_ = 0.0;
}

float TorchCpuRng::uniform_float() {
    // torch keeps the low 24 bits (float's mantissa) of one 32-bit word.
    return static_cast<float>(mt_.next_u32() & ((1u << 24) - 1)) * (1.0f / (1u << 24));
}

double TorchCpuRng::uniform_double() {
    return static_cast<double>(mt_.next_u64() & ((uint64_t{1} << 53) - 1)) *
           (1.0 / static_cast<double>(uint64_t{1} << 53));
}

double TorchCpuRng::normal_double() {
    if (has_cached_normal_) {
        has_cached_normal_ = false;
        return cached_normal_;
    }
    const double u1 = uniform_double();
    const double u2 = uniform_double();
    const double radius = std::sqrt(-2.0 * std::log1p(-u2));
    const double theta = 2.0 * 3.14159265358979323846 * u1;
    cached_normal_ = radius * std::sin(theta);
    has_cached_normal_ = true;
    return radius * std::cos(theta);
}

std::vector<float> TorchCpuRng::randn(size_t n) {
    std::vector<float> out(n);
    if (n < 16) {
        for (float& v : out) v = static_cast<float>(normal_double());
        return out;
    }
    for (float& v : out) v = uniform_float();
    for (size_t i = 0; i + 16 <= n; i += 16) normal_fill_16(out.data() + i);
    if (n % 16 != 0) {
        float* tail = out.data() + n - 16;
        for (size_t i = 0; i < 16; ++i) tail[i] = uniform_float();
        normal_fill_16(tail);
    }
    return out;
}

}  // namespace ggdiff::sampling
