// Per-op timing of graph computations, for finding where the time goes. With
// GGDIFF_PROFILE=1 in the environment every GraphRunner run computes its graph one node
// at a time and logs (info level) the seconds per op kind, with the GFLOP and GFLOP/s of
// the CPU kernels; GGDIFF_PROFILE=shapes also splits the kernels by output shape. Nodes
// computed one at a time pay a per-call overhead that hides in a normal run.
#pragma once

#include <ggml-backend.h>
#include <ggml.h>

#include <chrono>
#include <map>
#include <string>

namespace ggdiff {

class GraphProfile {
  public:
    // Whether GGDIFF_PROFILE asks for profiles.
    static bool enabled();

    // Observes `sched`'s next computation (until finish()).
    explicit GraphProfile(ggml_backend_sched_t sched);
    // Stops observing and logs the table.
    void finish(const std::string& label, int nodes, int splits);

  private:
    static bool observe(ggml_tensor* t, bool ask, void* user);

    struct Entry {
        double secs = 0.0, flops = 0.0;
        int count = 0;
    };
    ggml_backend_sched_t sched_;
    std::chrono::steady_clock::time_point last_;
    std::map<std::string, Entry> by_op_;
    double total_ = 0.0;
};

}  // namespace ggdiff
