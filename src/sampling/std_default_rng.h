// stable-diffusion.cpp's "std_default" RNG: std::default_random_engine seeded with the
// seed truncated to unsigned int, and a fresh std::normal_distribution<float> for every
// randn() call (so an odd-sized call drops the spare value of its last pair).
//
// std::default_random_engine and the normal algorithm are implementation-defined; this is
// libstdc++'s choice (minstd_rand0 and Marsaglia's polar method over generate_canonical),
// written out so the stream is the same whatever library ggdiff is built with.
#pragma once

#include <cstdint>

#include "sampling/rng.h"

namespace ggdiff::sampling {

// Park & Miller's "minimal standard" LCG: x <- 16807 x mod (2^31 - 1).
class MinStdRand0 {
  public:
    static constexpr uint64_t kModulus = 2147483647u;
    explicit MinStdRand0(uint64_t seed = 1) { seed_with(seed); }
    void seed_with(uint64_t seed) {
        state_ = seed % kModulus;
        if (state_ == 0) state_ = 1;  // zero is a fixed point of the recurrence
    }
    uint32_t next() {
        state_ = (state_ * 16807u) % kModulus;
        return static_cast<uint32_t>(state_);
    }

  private:
    uint64_t state_ = 1;
};

class StdDefaultRng final : public Rng {
  public:
    explicit StdDefaultRng(uint64_t seed = 0) { manual_seed(seed); }
    void manual_seed(uint64_t seed) override { engine_.seed_with(static_cast<unsigned int>(seed)); }
    std::vector<float> randn(size_t n) override;

  private:
    float canonical();
    MinStdRand0 engine_;
};

}  // namespace ggdiff::sampling
