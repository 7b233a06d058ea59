#include "io/index_bench.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "core/log.h"
#include "io/model_info.h"
#include "io/tensor_index.h"

namespace ggdiff {

namespace {

double resident_mib() {
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    long size = 0, resident = 0;
    const int n = std::fscanf(f, "%ld %ld", &size, &resident);
    std::fclose(f);
    if (n != 2) return 0;
    return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
           (1024.0 * 1024.0);
}

}  // namespace

Result<IndexBenchFigures> bench_index(
    const std::vector<std::pair<std::string, std::string>>& files) {
    IndexBenchFigures f;
    f.rss_before_mib = resident_mib();
    TensorIndex index;
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& [path, prefix] : files) GGDIFF_TRY(index.add(path, prefix));
    const auto t1 = std::chrono::steady_clock::now();
    f.rss_after_mib = resident_mib();
    f.index_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const ModelInfo info = summarize(index);
    f.files = index.files().size();
    f.tensors = info.tensor_count;
    f.bytes = info.total_bytes;
    return f;
}

std::string index_bench_json(const IndexBenchFigures& f) {
    return string_format(
        "{\"bench\": \"index\", \"files\": %zu, \"tensors\": %zu, \"gib\": %.3f, \"ms\": "
        "%.2f, \"rss_before_mib\": %.1f, \"rss_after_mib\": %.1f}",
        f.files, f.tensors, f.bytes / double(1ull << 30), f.index_ms, f.rss_before_mib,
        f.rss_after_mib);
}

}  // namespace ggdiff
