// Figures for the indexing benchmark (apps/bench): how long TensorIndex::add takes and
// how much resident memory it adds. Not a test: callers print the JSON and compare runs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace ggdiff {

struct IndexBenchFigures {
    size_t files = 0;
    size_t tensors = 0;
    uint64_t bytes = 0;   // stored tensor bytes indexed
    double index_ms = 0;  // wall time of all add() calls
    double rss_before_mib = 0;
    double rss_after_mib = 0;  // resident set right after indexing (not peak)
};

// Indexes (path, prefix) pairs into a fresh TensorIndex, timing the add() calls.
Result<IndexBenchFigures> bench_index(
    const std::vector<std::pair<std::string, std::string>>& files);

// {"bench": "index", "files": .., "tensors": .., "gib": .., "ms": .., "rss_mib": .., ...}
std::string index_bench_json(const IndexBenchFigures& f);

}  // namespace ggdiff
