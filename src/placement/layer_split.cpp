#include "placement/layer_split.h"

#include <map>

#include "core/log.h"
#include "placement/spec_text.h"

namespace ggdiff::placement {
namespace {

// Moves each listed tensor whose op devices[tensor_device] cannot run to the first of
// devices[0, num_devices) that can, recording the move.
void apply_op_support(LayerSplitPlan& plan, const std::vector<TensorRecord>& tensors,
                      const std::vector<size_t>& which, const OpSupport& supports,
                      size_t num_devices) {
    if (!supports) return;
    for (size_t i : which) {
        const size_t from = plan.tensor_device[i];
        if (supports(tensors[i], from)) continue;
        TensorMove m;
        m.tensor = i;
        m.name = tensors[i].name;
        m.op = tensors[i].op;
        m.from = from;
        for (size_t d = 0; d < num_devices; ++d) {
            if (d != from && supports(tensors[i], d)) {
                m.moved = true;
                m.to = d;
                plan.tensor_device[i] = d;
                break;
            }
        }
        plan.moves.push_back(m);
    }
}

}  // namespace

Result<LayerSplitPlan> plan_layer_split(const std::string& module,
                                        const std::vector<TensorRecord>& tensors,
                                        const std::vector<DeviceInfo>& devices,
                                        const OpSupport& supports, uint64_t headroom) {
    if (devices.empty()) return Status::Error(module + ": layer split needs at least one device");
    LayerSplitPlan plan;
    plan.module = module;
    for (const DeviceInfo& d : devices) {
        for (const std::string& seen : plan.devices) {
            if (seen == d.name)
                return Status::Error(module + ": device " + quoted(d.name) + " listed twice");
        }
        plan.devices.push_back(d.name);
    }
    const size_t n = devices.size();
    plan.shares = split_proportions(devices, headroom);
    plan.tensor_device.assign(tensors.size(), 0);

    // Blocks in order with their bytes.
    std::map<int, uint64_t> block_bytes;
    uint64_t total = 0;
    for (const TensorRecord& t : tensors) {
        total += t.bytes;
        if (t.block >= 0) block_bytes[t.block] += t.bytes;
    }
    plan.num_blocks = static_cast<int>(block_bytes.size());

    for (const DeviceInfo& d : devices) {
        if (d.type == DeviceType::Cpu && n > 1) {
            plan.fallback_reason = "CPU device " + quoted(d.name) +
                                   " in the device list; to keep weights in host memory use "
                                   "--params-backend " +
                                   module + "=cpu";
            break;
        }
    }
    if (plan.fallback_reason.empty() && block_bytes.empty())
        plan.fallback_reason = "no recognizable blocks";
    std::vector<size_t> nonblock, in_blocks;
    for (size_t i = 0; i < tensors.size(); ++i)
        (tensors[i].block < 0 ? nonblock : in_blocks).push_back(i);
    if (!plan.fallback_reason.empty()) {
        std::vector<size_t> all(tensors.size());
        for (size_t i = 0; i < all.size(); ++i) all[i] = i;
        apply_op_support(plan, tensors, all, supports, 1);
        return plan;
    }
    plan.split = true;

    // Non-block weights on the main device, or the first that runs their op.
    apply_op_support(plan, tensors, nonblock, supports, n);
    std::vector<double> nonblock_bytes(n, 0.0);
    for (size_t i : nonblock)
        nonblock_bytes[plan.tensor_device[i]] += static_cast<double>(tensors[i].bytes);
    std::vector<double> budget(n);
    for (size_t d = 0; d < n; ++d)
        budget[d] = plan.shares[d] * static_cast<double>(total) - nonblock_bytes[d];

    // Walk the blocks in order.
    plan.ranges.resize(n);
    std::map<int, size_t> device_of_block;
    size_t d = 0;
    double used = 0.0;
    plan.ranges[0].begin = block_bytes.begin()->first;
    for (const auto& [block, bytes] : block_bytes) {
        const double b = static_cast<double>(bytes);
        while (d + 1 < n && (used > 0.0 || nonblock_bytes[d] > 0.0) && used + b > budget[d]) {
            plan.ranges[d].end = block;
            ++d;
            plan.ranges[d].begin = block;
            used = 0.0;
        }
        device_of_block[block] = d;
        used += b;
        plan.ranges[d].block_bytes += bytes;
    }
    const int last = block_bytes.rbegin()->first + 1;
    plan.ranges[d].end = last;
    for (size_t k = d + 1; k < n; ++k) plan.ranges[k].begin = plan.ranges[k].end = last;
    for (size_t k = 0; k < n; ++k) plan.ranges[k].device = k;

    // Block weights to their range's device, then op support.
    for (size_t i : in_blocks) plan.tensor_device[i] = device_of_block[tensors[i].block];
    apply_op_support(plan, tensors, in_blocks, supports, n);

    for (size_t i = 0; i < tensors.size(); ++i)
        plan.ranges[plan.tensor_device[i]].bytes += tensors[i].bytes;
    return plan;
}

std::vector<std::string> layer_split_log_lines(const LayerSplitPlan& plan) {
    std::vector<std::string> out;
    if (!plan.split) {
        out.push_back(plan.module + " layer split: " + plan.fallback_reason + "; using " +
                      plan.devices[0] + " only");
        return out;
    }
    for (const LayerRange& r : plan.ranges) {
        out.push_back(string_format("%s layer split: %s <- blocks [%d, %d)", plan.module.c_str(),
                                    plan.devices[r.device].c_str(), r.begin, r.end));
    }
    return out;
}

std::vector<std::string> layer_split_warnings(const LayerSplitPlan& plan) {
    std::vector<std::string> out;
    for (const TensorMove& m : plan.moves) {
        const std::string op = m.op.empty() ? std::string("?") : m.op;
        if (m.moved) {
            out.push_back(plan.module + ": tensor " + quoted(m.name) + " (op " + op +
                          ") is not supported on " + quoted(plan.devices[m.from]) + "; moved to " +
                          quoted(plan.devices[m.to]));
        } else {
            std::vector<std::string> names;
            for (const std::string& d : plan.devices) {
                names.push_back(quoted(d));
                if (!plan.split) break;  // only the first device was tried
            }
            out.push_back(plan.module + ": tensor " + quoted(m.name) + " (op " + op +
                          ") is not supported on any of " + join(names, ", ") + "; it stays on " +
                          quoted(plan.devices[m.from]) + " and the op runs on the CPU");
        }
    }
    return out;
}

}  // namespace ggdiff::placement
