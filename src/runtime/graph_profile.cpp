#include "runtime/graph_profile.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "core/log.h"
#include "runtime/cpu_kernels.h"

namespace ggdiff {
namespace {

// 0: off, 1: by op, 2: by op and kernel output shape.
int profile_level() {
    static const int level = [] {
        const char* e = std::getenv("GGDIFF_PROFILE");
        if (!e || !*e || std::strcmp(e, "0") == 0) return 0;
        return std::strcmp(e, "shapes") == 0 ? 2 : 1;
    }();
    return level;
}

}  // namespace

bool GraphProfile::enabled() {
    return profile_level() > 0;
}

GraphProfile::GraphProfile(ggml_backend_sched_t sched)
    : sched_(sched), last_(std::chrono::steady_clock::now()) {
    ggml_backend_sched_set_eval_callback(sched_, observe, this);
}

bool GraphProfile::observe(ggml_tensor* t, bool ask, void* user) {
    auto* self = static_cast<GraphProfile*>(user);
    if (ask) return true;  // every node on its own
    const auto now = std::chrono::steady_clock::now();
    const double secs = std::chrono::duration<double>(now - self->last_).count();
    std::string key = t->op == GGML_OP_CUSTOM ? std::string(t->name) : ggml_op_desc(t);
    if (profile_level() > 1 && t->op == GGML_OP_CUSTOM) {
        key += string_format(" [%lld %lld %lld %lld]", static_cast<long long>(t->ne[0]),
                             static_cast<long long>(t->ne[1]), static_cast<long long>(t->ne[2]),
                             static_cast<long long>(t->ne[3]));
    }
    Entry& e = self->by_op_[key];
    e.secs += secs;
    e.flops += cpu::kernel_flops(t);
    e.count += 1;
    self->total_ += secs;
    self->last_ = now;
    return true;
}

void GraphProfile::finish(const std::string& label, int nodes, int splits) {
    ggml_backend_sched_set_eval_callback(sched_, nullptr, nullptr);
    std::vector<std::pair<std::string, Entry>> rows(by_op_.begin(), by_op_.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.secs > b.second.secs; });
    std::string text = string_format("profile %s: %.3f s, %d nodes, %d splits:", label.c_str(),
                                     total_, nodes, splits);
    for (const auto& [op, e] : rows) {
        if (e.secs < 0.001 * total_) break;
        text += string_format("\n  %-36s %8.3f s %5d nodes", op.c_str(), e.secs, e.count);
        if (e.flops > 0) {
            text += string_format(" %8.1f GFLOP %6.1f GFLOP/s", e.flops * 1e-9,
                                  e.flops * 1e-9 / e.secs);
        }
    }
    GGDIFF_LOG_INFO("%s", text.c_str());
}

}  // namespace ggdiff
