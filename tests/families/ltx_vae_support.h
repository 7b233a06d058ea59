// Helpers of the LTX VAE / vocoder / upscaler tests: a CPU graph runner over host weights
// (the callback the ltx:: decoders take) and the reference engine's [W, H, T, C] order.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "../vae/vae_test_support.h"
#include "models/vae/wan_vae.h"

namespace ggdiff::ltx_test {

// Runs each graph on the CPU backend (the project's CPU kernels where they apply); counts
// the graphs in `runs` when given. `weights` must outlive the runner.
inline models::WanGraphRun cpu_runner(const std::map<std::string, vae_test::HostWeight>* weights,
                                      int* runs = nullptr) {
    return [weights, runs](const models::WanGraphBuild& build) {
        if (runs) ++*runs;
        std::vector<const HostTensor*> hosts;
        auto make = [&](ggml_context* ctx, nn::Weights* w, const std::vector<ggml_tensor*>& ins) {
            nn::Ctx c{ctx, w};
            size_t next = 0;
            return build(c, [&](const HostTensor& t) -> ggml_tensor* {
                if (!ins.empty()) return ins[next++];
                hosts.push_back(&t);  // the dry build: learn the inputs
                int64_t d[4] = {t.dim(0), t.dim(1), t.dim(2), t.dim(3)};
                return ggml_new_tensor(ctx, GGML_TYPE_F32, 4, d);
            });
        };
        ggml_init_params p = {ggml_tensor_overhead() * 80000, nullptr, true};
        ggml_context* dry = ggml_init(p);
        vae_test::HostWeights w(*weights);
        make(dry, &w, {});
        ggml_free(dry);
        return vae_test::run_graph_multi(*weights, hosts, make, true);
    };
}

// [W, H, C, T] (ours) -> [W, H, T, C] (the reference's), or back with `back`.
inline std::vector<float> swap_channels_frames(const std::vector<float>& v, int64_t plane,
                                               int64_t channels, int64_t frames,
                                               bool back = false) {
    std::vector<float> out(v.size());
    for (int64_t t = 0; t < frames; ++t)
        for (int64_t c = 0; c < channels; ++c)
            for (int64_t i = 0; i < plane; ++i) {
                const size_t ours = static_cast<size_t>(((t * channels) + c) * plane + i);
                const size_t theirs = static_cast<size_t>(((c * frames) + t) * plane + i);
                if (back) {
                    out[ours] = v[theirs];
                } else {
                    out[theirs] = v[ours];
                }
            }
    return out;
}

}  // namespace ggdiff::ltx_test
