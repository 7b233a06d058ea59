// Seeded Gaussian noise sources. The three kinds reproduce the noise other tools draw
// for the same seed, so a seed means the same image here as there:
//   cuda        Philox4x32-10 + Box-Muller, what torch.randn gives on NVIDIA GPUs (A1111's
//               and stable-diffusion.cpp's default);
//   cpu         torch's CPU mt19937 generator (ComfyUI's default);
//   std_default std::default_random_engine + std::normal_distribution<float> as libstdc++
//               implements them (stable-diffusion.cpp's original RNG), reimplemented here so
//               that it gives the same numbers with every standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace ggdiff::sampling {

enum class RngKind { Cuda, Cpu, StdDefault };

// "cuda", "cpu", "std_default" (case-insensitive; "std-default" also accepted).
Result<RngKind> parse_rng(const std::string& name);
const char* rng_name(RngKind kind);
std::vector<std::string> rng_names();

class Rng {
  public:
    virtual ~Rng();
    // Restarts the stream: the same seed always yields the same sequence of randn() calls.
    virtual void manual_seed(uint64_t seed) = 0;
    // n standard-normal samples. Successive calls continue the stream the way the
    // imitated generator does (for cuda: one Philox counter offset per call).
    virtual std::vector<float> randn(size_t n) = 0;
};

std::unique_ptr<Rng> make_rng(RngKind kind, uint64_t seed);

}  // namespace ggdiff::sampling
