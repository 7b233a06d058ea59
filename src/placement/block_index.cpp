#include "placement/block_index.h"

#include <algorithm>
#include <map>
#include <set>

namespace ggdiff::placement {
namespace {

std::vector<std::string> split_path(const std::string& name) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        const size_t dot = name.find('.', start);
        out.push_back(name.substr(start, dot == std::string::npos ? dot : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return out;
}

// Non-negative integer segment, or -1.
int parse_index(const std::string& s) {
    if (s.empty() || s.size() > 9) return -1;
    int v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    return v;
}

bool is_block_segment(const std::string& s) {
    static const std::set<std::string> kSegments = {
        "transformer_blocks",
        "joint_blocks",
        "double_blocks",
        "single_blocks",
        "blocks",
        "block",
        "layers",
        "resblocks",
    };
    return kSegments.count(s) > 0;
}

// Where a name sits: its group path (everything up to the block segment), the segment,
// and the index inside the group; segment empty = non-block.
struct BlockKey {
    std::string group;
    std::string segment;
    int index = -1;
};

std::string join_path(const std::vector<std::string>& parts, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) {
        if (i) out.push_back('.');
        out += parts[i];
    }
    return out;
}

BlockKey unet_key(const std::vector<std::string>& parts) {
    for (size_t i = 0; i < parts.size(); ++i) {
        if (parts[i] == "middle_block") return {join_path(parts, i + 1), parts[i], 0};
        if ((parts[i] == "input_blocks" || parts[i] == "output_blocks") && i + 1 < parts.size()) {
            const int idx = parse_index(parts[i + 1]);
            if (idx >= 0) return {join_path(parts, i + 1), parts[i], idx};
        }
    }
    return {};
}

// The first block segment of the path (one of `segments`, or of the generic set).
BlockKey generic_key(const std::vector<std::string>& parts,
                     const std::vector<std::string>& segments = {}) {
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
        const bool block = segments.empty() ? is_block_segment(parts[i])
                                            : std::find(segments.begin(), segments.end(),
                                                        parts[i]) != segments.end();
        if (!block) continue;
        const int idx = parse_index(parts[i + 1]);
        if (idx >= 0) return {join_path(parts, i + 1), parts[i], idx};
    }
    return {};
}

// Order of groups that must come in a fixed order; others keep first appearance.
int segment_rank(const std::string& segment) {
    if (segment == "single_blocks" || segment == "middle_block") return 1;
    if (segment == "output_blocks") return 2;
    return 0;
}

}  // namespace

int block_index_of(const std::string& name) {
    return generic_key(split_path(name)).index;
}

int unet_block_index_of(const std::string& name, int num_input_blocks) {
    const BlockKey k = unet_key(split_path(name));
    if (k.segment == "input_blocks") return k.index;
    if (k.segment == "middle_block") return num_input_blocks;
    if (k.segment == "output_blocks") return num_input_blocks + 1 + k.index;
    return -1;
}

BlockNumbering number_blocks(const std::vector<std::string>& names, const std::string& prefix,
                             const std::vector<std::string>& segments) {
    const auto listed = [&segments](const char* s) {
        return std::find(segments.begin(), segments.end(), s) != segments.end();
    };
    // Declared segments number a UNet only when they name its parts.
    const bool unet_allowed = segments.empty() || listed("input_blocks");
    std::vector<BlockKey> keys(names.size());
    bool unet = false;
    for (size_t i = 0; i < names.size() && unet_allowed; ++i) {
        if (names[i].compare(0, prefix.size(), prefix) != 0) continue;
        keys[i] = unet_key(split_path(names[i]));
        if (!keys[i].segment.empty()) unet = true;
    }
    for (size_t i = 0; i < names.size(); ++i) {
        if (names[i].compare(0, prefix.size(), prefix) != 0) continue;
        if (!unet) keys[i] = generic_key(split_path(names[i]), segments);
    }
    // The rank of a group: its segment's place in `segments`, else the generic order.
    const auto rank = [&segments](const std::string& segment) {
        if (segments.empty()) return segment_rank(segment);
        return static_cast<int>(std::find(segments.begin(), segments.end(), segment) -
                                segments.begin());
    };

    // Groups in order of first appearance, then stably by rank.
    struct Group {
        std::string path, segment;
        std::set<int> indices;
    };
    std::vector<Group> groups;
    std::map<std::string, size_t> group_of;
    for (const BlockKey& k : keys) {
        if (k.segment.empty()) continue;
        auto it = group_of.find(k.group);
        if (it == group_of.end()) {
            it = group_of.emplace(k.group, groups.size()).first;
            groups.push_back({k.group, k.segment, {}});
        }
        groups[it->second].indices.insert(k.index);
    }
    std::stable_sort(groups.begin(), groups.end(), [&rank](const Group& a, const Group& b) {
        return rank(a.segment) < rank(b.segment);
    });

    BlockNumbering out;
    std::map<std::pair<std::string, int>, int> global;
    for (const Group& g : groups) {
        const size_t dot = g.path.rfind('.');
        const std::string short_name = dot == std::string::npos ? g.path : g.path.substr(dot + 1);
        for (int idx : g.indices) {
            global[{g.path, idx}] = out.num_blocks();
            out.block_names.push_back(
                g.segment == "middle_block" ? short_name : short_name + "." + std::to_string(idx));
        }
    }
    out.block.assign(names.size(), -1);
    for (size_t i = 0; i < names.size(); ++i) {
        if (!keys[i].segment.empty()) out.block[i] = global[{keys[i].group, keys[i].index}];
    }
    return out;
}

BlockNumbering assign_blocks(std::vector<TensorRecord>& records, const std::string& prefix,
                             const std::vector<std::string>& segments) {
    std::vector<std::string> names;
    names.reserve(records.size());
    for (const TensorRecord& r : records) names.push_back(r.name);
    BlockNumbering n = number_blocks(names, prefix, segments);
    for (size_t i = 0; i < records.size(); ++i) records[i].block = n.block[i];
    return n;
}

}  // namespace ggdiff::placement
