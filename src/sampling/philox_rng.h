// torch.randn as it comes out of an NVIDIA GPU, computed on the host.
//
// Element i of the c-th randn() call since manual_seed(seed) is Box-Muller applied to the
// first two words of Philox4x32-10(counter = {c, 0, i, 0}, key = seed). This is the layout
// A1111's rng_philox.py and stable-diffusion.cpp's PhiloxRNG use to imitate torch on CUDA,
// so the same seed gives the same latent noise as those tools. The counter offset advances
// by one per call, whatever the call's size.
#pragma once

#include <array>
#include <cstdint>

#include "sampling/rng.h"

namespace ggdiff::sampling {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// The Philox4x32 bijection with 10 rounds (Salmon et al. 2011, Random123).
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// Two uniform 32-bit words -> one standard normal (the sine branch, in float like torch).
float philox_box_muller(uint32_t a, uint32_t b);

class PhiloxRng final : public Rng {
  public:
    explicit PhiloxRng(uint64_t seed = 0) { manual_seed(seed); }
    void manual_seed(uint64_t seed) override {
        seed_ = seed;
        offset_ = 0;
    }
    std::vector<float> randn(size_t n) override;
    uint32_t offset() const { return offset_; }

  private:
    uint64_t seed_ = 0;
    uint32_t offset_ = 0;
};

}  // namespace ggdiff::sampling
