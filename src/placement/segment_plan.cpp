#include "placement/segment_plan.h"

#include <algorithm>

#include "core/log.h"

namespace ggdiff::placement {
namespace {

double mib(uint64_t b) {
    return static_cast<double>(b) / 1048576.0;
}

// Blocks [from, n) walked in order into segments: one is closed when it holds a block and the
// next would exceed `capacity`.
void pack(const std::vector<uint64_t>& block_bytes, int from, uint64_t capacity,
          std::vector<Segment>& out) {
    Segment cur{from, from, 0};
    for (int i = from; i < static_cast<int>(block_bytes.size()); ++i) {
        const uint64_t b = block_bytes[static_cast<size_t>(i)];
        if (cur.end > cur.begin && cur.bytes + b > capacity) {
            out.push_back(cur);
            cur = Segment{i, i, 0};
        }
        cur.end = i + 1;
        cur.bytes += b;
    }
    out.push_back(cur);
}

}  // namespace

Result<SegmentPlan> plan_segments(const std::string& module,
                                  const std::vector<TensorRecord>& tensors, uint64_t budget,
                                  bool stream) {
    SegmentPlan plan;
    plan.module = module;
    plan.budget = budget;
    std::vector<uint64_t> block_bytes;
    for (const TensorRecord& t : tensors) {
        if (t.block < 0) {
            plan.resident_bytes += t.bytes;
            continue;
        }
        if (static_cast<size_t>(t.block) >= block_bytes.size())
            block_bytes.resize(static_cast<size_t>(t.block) + 1, 0);
        block_bytes[static_cast<size_t>(t.block)] += t.bytes;
    }
    plan.num_blocks = static_cast<int>(block_bytes.size());
    uint64_t all_blocks = 0;
    for (uint64_t b : block_bytes) all_blocks += b;

    if (plan.resident_bytes + all_blocks <= budget || block_bytes.empty()) {
        plan.segments.push_back({0, plan.num_blocks, all_blocks});
        plan.segment_capacity = budget > plan.resident_bytes ? budget - plan.resident_bytes : 0;
        if (plan.resident_bytes + all_blocks > budget) {
            return Status::Error(string_format(
                "%s: its %.1f MiB of weights do not fit the %.1f MiB budget and it has no "
                "blocks to cut at",
                module.c_str(), mib(plan.resident_bytes + all_blocks), mib(budget)));
        }
        return plan;
    }
    if (plan.resident_bytes >= budget) {
        return Status::Error(string_format(
            "%s: the weights outside its blocks (%.1f MiB) alone exceed the %.1f MiB budget "
            "(short by %.1f MiB)",
            module.c_str(), mib(plan.resident_bytes), mib(budget),
            mib(plan.resident_bytes - budget)));
    }
    plan.cut = true;
    plan.streamed = stream;
    const uint64_t left = budget - plan.resident_bytes;
    plan.segment_capacity = stream ? left / 2 : left;
    pack(block_bytes, 0, plan.segment_capacity, plan.segments);
    for (size_t k = 0; k < plan.segments.size(); ++k) {
        // A block larger than the capacity stands alone in its segment.
        const Segment& s = plan.segments[k];
        if (s.bytes <= plan.segment_capacity) continue;
        return Status::Error(string_format(
            "%s: segment %zu (block %d, %.1f MiB) does not fit: capacity %.1f MiB%s, short by "
            "%.1f MiB",
            module.c_str(), k, s.begin, mib(s.bytes), mib(plan.segment_capacity),
            stream ? " (half of what is left, as --stream-layers keeps two segments)" : "",
            mib(s.bytes - plan.segment_capacity)));
    }
    if (stream) {
        // Residency: keep the most leading blocks that leave room for two slots of the
        // largest block still streamed; stream the rest in segments of half what remains.
        const int n = plan.num_blocks;
        std::vector<uint64_t> prefix(static_cast<size_t>(n) + 1, 0);
        for (int i = 0; i < n; ++i)
            prefix[static_cast<size_t>(i) + 1] =
                prefix[static_cast<size_t>(i)] + block_bytes[static_cast<size_t>(i)];
        int keep = 0;
        for (int k = 0; k < n; ++k) {
            uint64_t largest = 0;
            for (int i = k; i < n; ++i)
                largest = std::max(largest, block_bytes[static_cast<size_t>(i)]);
            if (prefix[static_cast<size_t>(k)] + 2 * largest <= left) keep = k;
        }
        plan.segments.clear();
        plan.segment_capacity = (left - prefix[static_cast<size_t>(keep)]) / 2;
        if (keep > 0) {
            plan.segments.push_back({0, keep, prefix[static_cast<size_t>(keep)]});
            plan.resident_segments = 1;
        }
        pack(block_bytes, keep, plan.segment_capacity, plan.segments);
    }
    return plan;
}

uint64_t SegmentPlan::streamed_bytes() const {
    if (!cut) return 0;
    uint64_t n = 0;
    for (size_t k = static_cast<size_t>(resident_segments); k < segments.size(); ++k)
        n += segments[k].bytes;
    return n;
}

std::vector<std::string> segment_log_lines(const SegmentPlan& plan) {
    std::vector<std::string> out;
    if (!plan.cut) {
        out.push_back(string_format(
            "%s: %.1f MiB of weights fit the %.1f MiB budget whole", plan.module.c_str(),
            mib(plan.resident_bytes + (plan.segments.empty() ? 0 : plan.segments[0].bytes)),
            mib(plan.budget)));
        return out;
    }
    for (size_t k = 0; k < plan.segments.size(); ++k) {
        const Segment& s = plan.segments[k];
        const bool kept = static_cast<int>(k) < plan.resident_segments;
        out.push_back(string_format("%s segment %zu: blocks [%d, %d), %.1f MiB%s",
                                    plan.module.c_str(), k, s.begin, s.end, mib(s.bytes),
                                    kept ? " (kept on the device)" : ""));
    }
    return out;
}

}  // namespace ggdiff::placement
