// torch.randn as torch's default CPU generator produces it (what ComfyUI uses), so a
// seed gives the same noise as torch.manual_seed(seed); torch.randn(n).
//
// torch draws from mt19937 seeded with the low 32 bits of the seed and turns the stream
// into normals two different ways depending on the request size:
//   n >= 16: n float uniforms from 24-bit words, then Box-Muller in blocks of 16 (the first
//            8 values are radii, the next 8 angles); when n is not a multiple of 16 the last
//            16 outputs are recomputed from 16 fresh uniforms;
//   n <  16: one double Box-Muller per pair from 53-bit uniforms, the sine half cached in
//            the generator for the next value (the cache survives between calls).
#pragma once

#include <array>
#include <cstdint>

#include "sampling/rng.h"

namespace ggdiff::sampling {

// The 32-bit Mersenne Twister (Matsumoto & Nishimura), seeded like torch and std::mt19937.
class Mt19937 {
  public:
    explicit Mt19937(uint32_t seed = 5489u) { seed_with(seed); }
    void seed_with(uint32_t seed);
    uint32_t next_u32();
    // Two words, the first one high, as torch's random64() combines them.
    uint64_t next_u64();

  private:
    void twist();
    std::array<uint32_t, 624> state_{};
    size_t index_ = 624;
};

class TorchCpuRng final : public Rng {
  public:
    explicit TorchCpuRng(uint64_t seed = 0) { manual_seed(seed); }
    void manual_seed(uint64_t seed) override;
    std::vector<float> randn(size_t n) override;

  private:
    float uniform_float();
    double uniform_double();
    double normal_double();

    Mt19937 mt_;
    bool has_cached_normal_ = false;
    double cached_normal_ = 0.0;
};

}  // namespace ggdiff::sampling
