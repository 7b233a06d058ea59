#include "sampling/philox_rng.h"

#include <cmath>

namespace ggdiff::sampling {

namespace {
constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

PhiloxCounter philox_round(const PhiloxCounter& c, const PhiloxKey& k) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c[2];
    const auto hi = [](uint64_t v) { return static_cast<uint32_t>(v >> 32); };
    const auto lo = [](uint64_t v) { return static_cast<uint32_t>(v); };
    return {hi(p1) ^ c[1] ^ k[0], lo(p1), hi(p0) ^ c[3] ^ k[1], lo(p0)};
}
}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
    for (int round = 0; round < 9; ++round) {
        counter = philox_round(counter, key);
        key[0] += kWeyl0;
        key[1] += kWeyl1;
    }
    return philox_round(counter, key);
}

float philox_box_muller(uint32_t a, uint32_t b) {
    // The constants are float on purpose: torch and the imitations compute in float32.
    constexpr float kTwoPow32Inv = 2.3283064e-10f;
    constexpr float kTwoPow32Inv2Pi = 2.3283064e-10f * 6.2831855f;
    // The half-step offset keeps u strictly inside (0, 1], so log(u) is finite.
    const float u = static_cast<float>(a) * kTwoPow32Inv + kTwoPow32Inv / 2;
    const float v = static_cast<float>(b) * kTwoPow32Inv2Pi + kTwoPow32Inv2Pi / 2;
    const float radius = std::sqrt(-2.0f * std::log(u));
    return radius * std::sin(v);
}

std::vector<float> PhiloxRng::randn(size_t n) {
    std::vector<float> out(n);
    const PhiloxKey key = {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)};
    for (size_t i = 0; i < n; ++i) {
        const PhiloxCounter c = philox4x32_10({offset_, 0u, static_cast<uint32_t>(i), 0u}, key);
        out[i] = philox_box_muller(c[0], c[1]);
    }
    offset_ += 1;
    return out;
}

}  // namespace ggdiff::sampling
