// Indexing reads only the header: a full-size SD1 layout (2.1 GB, sparse on disk) indexes
// in milliseconds. The figures are printed for the record; no test fails on timing.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "io/index_bench.h"
#include "io/model_info.h"
#include "io/tensor_index.h"
#include "io_test_util.h"

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

// Writes a safetensors header for a .tensors list (F16) and extends the file sparsely.
uint64_t write_sparse_checkpoint(const std::string& list, const std::string& path, size_t* count) {
    std::ifstream in(list);
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    uint64_t off = 0;
    std::string line;
    *count = 0;
    while (std::getline(in, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream ss(line);
        std::string name, shape;
        if (!(ss >> name >> shape)) continue;
        std::vector<int64_t> dims;
        std::istringstream sh(shape);
        std::string d;
        uint64_t n = 2;
        while (std::getline(sh, d, ',')) {
            dims.push_back(std::stoll(d));
            n *= dims.back();
        }
        h[name] = {{"dtype", "F16"}, {"shape", dims}, {"data_offsets", {off, off + n}}};
        off += n;
        ++*count;
    }
    const std::string json = h.dump();
    write_bytes(path, safetensors_file(json, ""));
    EXPECT_EQ(truncate(path.c_str(), static_cast<off_t>(8 + json.size() + off)), 0);
    return off;
}

TEST(FullSizeIndex, Sd1Mc320HeaderOnly) {
    const std::string list = std::string(GGDIFF_SHARED_DIR) + "/fixtures/sd1_mc320.tensors";
    if (!std::ifstream(list)) GTEST_SKIP() << "no " << list;
    const std::string dir = test_dir("full_size");
    const std::string path = dir + "/sd1_mc320.safetensors";
    size_t count = 0;
    const uint64_t data_bytes = write_sparse_checkpoint(list, path, &count);

    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    const auto t0 = std::chrono::steady_clock::now();
    TensorIndex ix;
    Status st = ix.add(path);
    const auto t1 = std::chrono::steady_clock::now();
    getrusage(RUSAGE_SELF, &after);
    ASSERT_TRUE(st.ok()) << st.message();
    const ModelInfo info = summarize(ix);
    std::printf(
        "{\"bench\": \"index_sd1_mc320\", \"tensors\": %zu, \"gib\": %.2f, \"ms\": %.1f, "
        "\"maxrss_growth_mib\": %.1f}\n",
        ix.size(), data_bytes / double(1ull << 30),
        std::chrono::duration<double, std::milli>(t1 - t0).count(),
        (after.ru_maxrss - before.ru_maxrss) / 1024.0);

    EXPECT_EQ(ix.size(), count);
    EXPECT_EQ(info.context_dim, 768);  // the family itself is the registry's (tests/families)
    EXPECT_EQ(info.total_bytes, data_bytes);
    EXPECT_GT(info.component_bytes[static_cast<size_t>(Component::Diffusion)], 1ull << 30);
    EXPECT_GT(info.component_bytes[static_cast<size_t>(Component::TextEncoder)], 200ull << 20);
    EXPECT_GT(info.component_bytes[static_cast<size_t>(Component::Vae)], 100ull << 20);
    EXPECT_EQ(info.component_bytes[static_cast<size_t>(Component::Other)], 0u);
    EXPECT_NE(format_model_info(info).find("(context width 768)"), std::string::npos)
        << format_model_info(info);
    std::printf("%s", format_model_info(info).c_str());

    auto figures = bench_index({{path, ""}});
    ASSERT_TRUE(figures.ok()) << figures.status().message();
    EXPECT_EQ(figures->tensors, count);
    EXPECT_LT(figures->rss_after_mib - figures->rss_before_mib, 64.0);  // header only
    std::printf("%s\n", index_bench_json(*figures).c_str());
    std::remove(path.c_str());
}

}  // namespace
}  // namespace ggdiff
