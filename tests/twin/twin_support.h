// What the twin suites share: two ggdiff-rpc workers per test, reading the placement lines of a
// -v log, a single-device reference image made once per build of the binaries, and the
// comparison of a placement's image with it (TESTING.md, "Twin").
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "../golden/e2e_support.h"
#include "../rpc/rpc_test_util.h"

namespace ggdiff::twin {

using e2e::RunResult;

struct Range {
    std::string device;
    int begin = 0, end = 0;
};

// "<module> layer split: <device> <- blocks [a, b)" lines for one module, in log order.
inline std::vector<Range> split_ranges(const std::string& log, const std::string& module) {
    std::vector<Range> out;
    const std::regex re(module + R"( layer split: (\S+) <- blocks \[(\d+), (\d+)\))");
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
         ++it) {
        out.push_back({(*it)[1].str(), std::stoi((*it)[2].str()), std::stoi((*it)[3].str())});
    }
    return out;
}

// The devices of split_ranges, in log order.
inline std::vector<std::string> split_devices(const std::string& log, const std::string& module) {
    std::vector<std::string> out;
    for (const Range& r : split_ranges(log, module)) out.push_back(r.device);
    return out;
}

inline std::string describe(const std::vector<Range>& ranges) {
    std::string s;
    for (const Range& r : ranges) {
        s += r.device + " <- [" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ") ";
    }
    return s.empty() ? "(none)" : s;
}

// The ranges cover [0, blocks) contiguously on `devices` in this order, each non-empty unless
// `first_may_be_empty` (a tiny encoder's embedding alone can fill the first device's share).
inline void expect_ranges(const std::string& log, const std::string& module,
                          const std::vector<std::string>& devices, int blocks,
                          bool first_may_be_empty = false) {
    const std::vector<Range> ranges = split_ranges(log, module);
    ASSERT_EQ(ranges.size(), devices.size())
        << "expected one '" << module << " layer split' line per device\n"
        << describe(ranges) << "\n"
        << log;
    int next = 0;
    for (size_t i = 0; i < ranges.size(); ++i) {
        EXPECT_EQ(ranges[i].device, devices[i]) << describe(ranges);
        EXPECT_EQ(ranges[i].begin, next) << describe(ranges);
        if (i > 0 || !first_may_be_empty) {
            EXPECT_LT(ranges[i].begin, ranges[i].end) << "empty range: " << describe(ranges);
        }
        next = ranges[i].end;
    }
    EXPECT_EQ(next, blocks) << describe(ranges);
}

// With -v the runners log "<label>: graph of N nodes in K splits": the largest K seen.
inline int max_splits(const std::string& log, const std::string& label) {
    const std::regex re(label + R"(: graph of \d+ nodes in (\d+) splits)");
    int k = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
         ++it) {
        k = std::max(k, std::stoi((*it)[1].str()));
    }
    return k;
}

// With -v the runners log "<label>: N weights, X MiB, on <where>": where.
inline std::string weights_on(const std::string& log, const std::string& label) {
    const std::regex re(label + R"(: \d+ weights, [\d.]+ MiB, on ([^\n]+))");
    std::smatch m;
    return std::regex_search(log, m, re) ? m[1].str() : "(not logged)";
}

// With -v the runners log "<label>: N weights, X MiB, on <where>": X in bytes (-1 when the
// line is not there).
inline double weight_bytes_logged(const std::string& log, const std::string& label) {
    const std::regex re(label + R"(: \d+ weights, ([\d.]+) MiB)");
    std::smatch m;
    return std::regex_search(log, m, re) ? std::stod(m[1].str()) * double(1 << 20) : -1.0;
}

// --max-vram graph cutting and --stream-layers (issue 15). The segments' log lines, in order.
struct SegmentLine {
    int begin, end;
    bool kept;
};
inline std::vector<SegmentLine> segment_lines(const std::string& log, const std::string& module) {
    std::vector<SegmentLine> out;
    const std::regex re(module +
                        R"( segment (\d+): blocks \[(\d+), (\d+)\), [\d.]+ MiB( \(kept)?)");
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
         ++it) {
        out.push_back({std::stoi((*it)[2].str()), std::stoi((*it)[3].str()), (*it)[4].matched});
    }
    return out;
}

// The segments cover every block once, in order, and there are at least `min_segments`.
inline void expect_segments(const std::string& log, const std::string& module, int blocks,
                            size_t min_segments) {
    const auto segs = segment_lines(log, module);
    ASSERT_GE(segs.size(), min_segments) << log;
    int next = 0;
    for (const SegmentLine& s : segs) {
        EXPECT_EQ(s.begin, next) << log;
        EXPECT_LT(s.begin, s.end) << log;
        next = s.end;
    }
    EXPECT_EQ(next, blocks) << log;
}

// Identity of a file for the reference cache: size and modification time.
inline std::string file_stamp(const std::string& path) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return path + ":missing";
    return path + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
}

inline std::string join(const std::vector<std::string>& v, const std::string& sep) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
    return s;
}

// A test with two ggdiff-rpc workers on free loopback ports (started for every test and always
// stopped) and a scratch folder. Suites check their own prerequisites, then call SetUp().
class TwoWorkers : public ::testing::Test {
  protected:
    // Above 0: both workers run with `--mem worker_mem_mib()` (they advertise and enforce
    // that much device memory).
    virtual int worker_mem_mib() const { return 0; }

    void SetUp() override {
        std::string error;
        ASSERT_TRUE(w0_.start(&error, 1, worker_mem_mib())) << error;
        ASSERT_TRUE(w1_.start(&error, 1, worker_mem_mib())) << error;
        dir_ = e2e::fresh_dir();
    }
    void TearDown() override {
        w0_.stop();
        w1_.stop();
    }

    std::string servers() const { return w0_.endpoint() + "," + w1_.endpoint(); }
    static std::string log_of(const RunResult& r) { return r.out + r.err; }

    // Where cached_image keeps the image for `key` in the folder `cache`.
    std::string cache_path(const std::string& cache, const std::string& key) const {
        const std::string full = key + "|" + file_stamp(e2e::binary_path()) + "|" +
                                 file_stamp(rpc_test::binary("ggdiff-rpc"));
        const std::string folder = std::string(GGDIFF_TEST_TMP) + "/" + cache;
        std::filesystem::create_directories(folder);
        char name[64];
        std::snprintf(name, sizeof(name), "/ref_%016zx", std::hash<std::string>{}(full));
        return folder + name + ".png";
    }

    // An image made once per build of the binaries and kept under GGDIFF_TEST_TMP/`cache`
    // (ctest runs every test in its own process): `key` names everything the image depends on
    // besides the ggdiff and ggdiff-rpc binaries, `make` writes it to the path it is given.
    std::string cached_image(const std::string& cache, const std::string& key,
                             const std::function<RunResult(const std::string&)>& make) const {
        const std::string path = cache_path(cache, key);
        if (std::filesystem::is_regular_file(path)) return path;
        const std::string tmp =
            path.substr(0, path.size() - 4) + ".tmp" + std::to_string(getpid()) + ".png";
        const RunResult r = make(tmp);
        if (!r.succeeded() || !std::filesystem::is_regular_file(tmp)) {
            ADD_FAILURE() << "the single-device reference failed\n" << r.describe();
            return "";
        }
        std::filesystem::rename(tmp, path);  // atomic: parallel tests may race to make it
        return path;
    }

    // The CLI's name for image i of a batch written to `first`: first, then NAME_1.EXT, ...
    static std::string batch_name(const std::string& first, int i) {
        if (i == 0) return first;
        const std::filesystem::path p(first);
        return (p.parent_path() /
                (p.stem().string() + "_" + std::to_string(i) + p.extension().string()))
            .string();
    }

    // A batch of `count` images made once per build of the binaries like cached_image; `make`
    // writes the batch to the path it is given (and its batch_name siblings). Returns the
    // paths in batch order (empty when making them failed).
    std::vector<std::string> cached_batch(
        const std::string& cache, const std::string& key, int count,
        const std::function<RunResult(const std::string&)>& make) const {
        const std::string batch_key = key + "|batch " + std::to_string(count);
        const std::string final_path = cache_path(cache, batch_key);
        const std::string first = cached_image(cache, batch_key, [&](const std::string& tmp) {
            RunResult r = make(tmp);
            // The rest of the batch first: the first file marks the whole batch as made.
            for (int i = 1; r.succeeded() && i < count; ++i) {
                if (std::filesystem::is_regular_file(batch_name(tmp, i))) {
                    std::filesystem::rename(batch_name(tmp, i), batch_name(final_path, i));
                }
            }
            return r;
        });
        std::vector<std::string> out;
        for (int i = 0; !first.empty() && i < count; ++i) {
            out.push_back(batch_name(first, i));
            if (!std::filesystem::is_regular_file(out.back())) {
                ADD_FAILURE() << "image " << i
                              << " of the reference batch is missing: " << out.back();
                return {};
            }
        }
        return out;
    }

    // The run `r` wrote `out`: it must have succeeded and its image be within `tolerance` (mean
    // absolute difference) of `reference` ("" when the reference failed: nothing to compare).
    static void expect_same_image(const RunResult& r, const std::string& out,
                                  const std::string& reference, double tolerance,
                                  const char* what = "twin") {
        EXPECT_TRUE(r.succeeded()) << r.describe();
        if (!r.succeeded() || reference.empty()) return;
        const e2e::ImageDiff d = e2e::compare_images(out, reference);
        EXPECT_TRUE(d.ok) << d.error;
        EXPECT_LE(d.mean_abs, tolerance)
            << "placement image differs from the single-device image: mean " << d.mean_abs
            << ", max " << d.max_abs << "\n"
            << r.describe();
        std::printf("%s: mean_abs_diff %.3f max_abs_diff %d (tolerance %.2f)\n", what, d.mean_abs,
                    d.max_abs, tolerance);
    }

    rpc_test::Worker w0_, w1_;
    std::string dir_;
};

// A twin suite on one request: the model's arguments, the request (a golden case of a suite
// under tests/golden, or a suite's own arguments) and the placement of its single-device image.
// That image is made once per build of the binaries; `twin` runs the request under another
// placement and expects the single-device image, and the golden image when there is a case.
class CaseTwin : public TwoWorkers {
  protected:
    // The files and tokenizers of the model (without the request).
    virtual std::vector<std::string> model_args() const = 0;
    // The fixture files model_args reads: they must exist, and they key the cached image.
    virtual std::vector<std::string> model_files() const = 0;
    // The placement of the single-device image, e.g. {"--backend", "all=RPC0"}.
    virtual std::vector<std::string> single_device_placement() const = 0;
    // The folder under GGDIFF_TEST_TMP that keeps the single-device images.
    virtual std::string cache_name() const = 0;
    // The golden case: its suite under tests/golden and its id (empty: no golden image, and
    // case_args and same_image_tolerance must be given).
    virtual std::string suite() const { return ""; }
    virtual std::string case_id() const { return ""; }
    virtual std::vector<std::string> case_args() const {
        return e2e::suite_case_args(suite_dir(), case_id());
    }
    // The largest mean difference from the single-device image (the suite's tolerance).
    virtual double same_image_tolerance() const { return e2e::suite_tolerance(suite_dir()); }

    std::string suite_dir() const { return e2e::repo_suite_dir(suite()); }
    std::string golden() const {
        return suite().empty() ? std::string() : suite_dir() + "/" + case_id() + ".png";
    }

    void SetUp() override {
        std::vector<std::string> needed = model_files();
        needed.push_back(e2e::binary_path());
        if (!suite().empty()) needed.push_back(golden());
        for (const std::string& f : needed) {
            ASSERT_TRUE(std::filesystem::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        ASSERT_FALSE(case_args().empty()) << "no case " << case_id() << " in " << suite_dir();
        TwoWorkers::SetUp();
    }

    // The request with `extra` after it, on both workers, logging its placement (-v).
    std::vector<std::string> request(const std::vector<std::string>& extra) const {
        std::vector<std::string> args = model_args();
        for (const std::string& a : case_args()) args.push_back(a);
        args.insert(args.end(), {"--rpc-servers", servers(), "-v"});
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    }

    RunResult generate(const std::vector<std::string>& extra, const std::string& out,
                       const std::string& log_dir) const {
        std::vector<std::string> args = request(extra);
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, log_dir, 600);
    }

    // The request under single_device_placement(), made once per build of the binaries.
    std::string single_device() const {
        const std::vector<std::string> placement = single_device_placement();
        std::string key =
            join(placement, " ") + "|" + join(model_args(), " ") + "|" + join(case_args(), " ");
        for (const std::string& f : model_files()) key += "|" + file_stamp(f);
        return cached_image(cache_name(), key, [&](const std::string& path) {
            return generate(placement, path, dir_ + "/reference");
        });
    }

    // The request placed by `extra`: its image must be the single-device one (and the golden
    // one when there is a case).
    RunResult twin(const std::vector<std::string>& extra, const char* what) {
        const std::string reference = single_device();
        const std::string out = dir_ + "/twin.png";
        RunResult r = generate(extra, out, dir_);
        expect_same_image(r, out, reference, same_image_tolerance(), what);
        if (r.succeeded() && !suite().empty()) {
            const e2e::ImageDiff g = e2e::compare_images(out, golden());
            EXPECT_TRUE(g.ok) << g.error;
            EXPECT_LE(g.mean_abs, e2e::suite_tolerance(suite_dir()))
                << what << " against the golden image";
        }
        return r;
    }
};

// The `module` component of the plan that a request with --auto-fit --fit-dry-run prints on
// stdout (its -v dropped: the plan must be the only output). A JSON null, with the reason added
// as a test failure, when the run fails or prints no such component.
inline nlohmann::json planned_component(std::vector<std::string> args, const std::string& dir,
                                        const std::string& module = "diffusion") {
    args.erase(std::remove(args.begin(), args.end(), std::string("-v")), args.end());
    const RunResult dry = e2e::run_ggdiff(args, dir, 300);
    if (!dry.succeeded()) {
        ADD_FAILURE() << dry.describe();
        return nullptr;
    }
    const nlohmann::json plan = nlohmann::json::parse(dry.out, nullptr, false);
    if (plan.is_discarded()) {
        ADD_FAILURE() << "--fit-dry-run did not print JSON\n" << dry.describe();
        return nullptr;
    }
    for (const auto& c : plan.value("components", nlohmann::json::array())) {
        if (c.value("module", "") == module) return c;
    }
    ADD_FAILURE() << "no " << module << " component in the plan\n" << plan.dump(1);
    return nullptr;
}

// "<device>=<GiB>" for --max-vram: the planned component's compute reserve plus `weight_bytes`.
inline std::string vram_budget(const std::string& device, const nlohmann::json& component,
                               double weight_bytes) {
    const double bytes = component.value("reserve_bytes", 0.0) + weight_bytes;
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s=%.9f", device.c_str(), bytes / double(1ull << 30));
    return buf;
}

}  // namespace ggdiff::twin
