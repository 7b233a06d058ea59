// The rate the CPU kernels reach on a plain f32 matrix product: the reference that
// ggdiff-bench puts next to each phase's GFLOP/s, so the distance to the machine's limit
// shows.
#pragma once

#include "core/status.h"

namespace ggdiff {

// GFLOP/s of an f32 size x size x size product through cpu::mul_mat on the CPU backend
// with `threads` threads: best of three after a warm-up.
Result<double> measure_sgemm_gflops(int threads, int size);

}  // namespace ggdiff
