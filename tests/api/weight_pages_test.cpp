// Memory over a model's phases (issue 14): weights stored as f16 are used in place from the
// mapped checkpoint, and each module's pages leave the process when its phase ends (the
// text encoder after encoding, the UNet before the decode of the last image, the VAE after
// it), so the peak is the largest phase, not the sum. Checked with the page tables
// themselves (/proc/self/pagemap: is a virtual page mapped in this process), through the C API.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ggdiff.h"

namespace {

const std::string kFixture = GGDIFF_BINARY_DIR "/fixtures/sd1_mc32.safetensors";
const std::string kMerges = GGDIFF_SHARED_DIR "/data/clip/merges.txt";

struct Range {
    uint64_t begin, end;  // byte offsets in the file
};

// Byte ranges of the tensors under each name prefix, from the safetensors header.
std::map<std::string, std::vector<Range>> tensor_ranges(const std::string& path,
                                                        const std::vector<std::string>& prefixes) {
    std::ifstream f(path, std::ios::binary);
    uint64_t n = 0;
    f.read(reinterpret_cast<char*>(&n), 8);
    std::string header(n, '\0');
    f.read(header.data(), static_cast<std::streamsize>(n));
    const nlohmann::json h = nlohmann::json::parse(header);
    std::map<std::string, std::vector<Range>> out;
    for (const auto& [name, t] : h.items()) {
        if (name == "__metadata__") continue;
        for (const std::string& p : prefixes) {
            if (name.rfind(p, 0) != 0) continue;
            const uint64_t b = t["data_offsets"][0].get<uint64_t>() + 8 + n;
            const uint64_t e = t["data_offsets"][1].get<uint64_t>() + 8 + n;
            out[p].push_back({b, e});
        }
    }
    return out;
}

// Where the file is mapped whole in this process (0 if it is not).
uintptr_t mapping_of(const std::string& path) {
    char real[4096];
    if (!realpath(path.c_str(), real)) return 0;
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        std::istringstream s(line);
        std::string addr, perms, offset, dev, inode, file;
        s >> addr >> perms >> offset >> dev >> inode >> file;
        if (file == real && std::stoull(offset, nullptr, 16) == 0) {
            return static_cast<uintptr_t>(std::stoull(addr.substr(0, addr.find('-')), nullptr, 16));
        }
    }
    return 0;
}

// Fraction of the whole pages inside the ranges that are mapped in this process now.
double present_fraction(uintptr_t base, const std::vector<Range>& ranges) {
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const int pm = open("/proc/self/pagemap", O_RDONLY);
    if (pm < 0) return -1.0;
    uint64_t total = 0, present = 0;
    for (const Range& r : ranges) {
        for (uint64_t p = (base + r.begin + page - 1) / page; p < (base + r.end) / page; ++p) {
            uint64_t entry = 0;
            if (pread(pm, &entry, 8, static_cast<off_t>(p * 8)) != 8) entry = 0;
            ++total;
            if (entry >> 63 & 1) ++present;
        }
    }
    close(pm);
    return total ? static_cast<double>(present) / static_cast<double>(total) : -1.0;
}

uint64_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    uint64_t size = 0, resident = 0;
    statm >> size >> resident;
    return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

const char* const kText = "cond_stage_model.";
const char* const kUNet = "model.diffusion_model.";
const char* const kDecoder = "first_stage_model.decoder.";

struct Observed {
    uintptr_t base = 0;
    std::map<std::string, std::vector<Range>> ranges;
    // Per progress phase: the largest fraction of each module's pages mapped at any of
    // its reports.
    std::map<std::string, std::map<std::string, double>> at;
};

int observe(const char* phase, int, int, double, void* user) {
    auto* o = static_cast<Observed*>(user);
    for (const auto& [prefix, ranges] : o->ranges) {
        auto& seen = o->at[phase];
        const double now = present_fraction(o->base, ranges);
        seen[prefix] = seen.count(prefix) ? std::max(seen[prefix], now) : now;
    }
    return 1;
}

class WeightPages : public ::testing::Test {
  protected:
    void SetUp() override {
        opts_ = ggdiff_options_new();
        ASSERT_EQ(ggdiff_options_set(opts_, "model", kFixture.c_str()), 0);
        ASSERT_EQ(ggdiff_options_set(opts_, "tokenizer", kMerges.c_str()), 0);
        // One thread: the suites run side by side, and spinning thread pools on a shared core
        // crawl.
        ASSERT_EQ(ggdiff_options_set(opts_, "threads", "1"), 0);
        ASSERT_EQ(ggdiff_model_load(opts_, &model_), 0) << ggdiff_last_error();
        for (auto [k, v] : {std::pair{"prompt", "a red circle"},
                            {"width", "64"},
                            {"height", "64"},
                            {"steps", "2"},
                            {"seed", "5"}}) {
            ASSERT_EQ(ggdiff_options_set(opts_, k, v), 0) << k;
        }
    }
    void TearDown() override {
        ggdiff_model_free(model_);
        ggdiff_options_free(opts_);
    }
    std::vector<unsigned char> generate(Observed* seen) {
        ggdiff_image* images = nullptr;
        int count = 0;
        const int rc =
            ggdiff_generate(model_, opts_, seen ? observe : nullptr, seen, &images, &count);
        EXPECT_EQ(rc, 0) << ggdiff_last_error();
        std::vector<unsigned char> px;
        if (rc == 0 && count == 1) {
            px.assign(images[0].data,
                      images[0].data + images[0].width * images[0].height * images[0].channels);
        }
        ggdiff_images_free(images, count);
        return px;
    }
    ggdiff_options* opts_ = nullptr;
    ggdiff_model* model_ = nullptr;
};

TEST_F(WeightPages, EachModuleLeavesMemoryWhenItsPhaseEnds) {
    Observed seen;
    seen.base = mapping_of(kFixture);
    ASSERT_NE(seen.base, 0u) << "the checkpoint is not mapped whole";
    seen.ranges = tensor_ranges(kFixture, {kText, kUNet, kDecoder});
    ASSERT_EQ(seen.ranges.size(), 3u);

    const std::vector<unsigned char> first = generate(&seen);
    ASSERT_FALSE(first.empty());
    // After encoding, the text encoder's pages are gone.
    EXPECT_EQ(seen.at["text"][kText], 0.0);
    // During sampling the UNet is mapped in (read in place: f16 pages of the file), and the
    // text encoder stays out.
    EXPECT_GT(seen.at["sampling"][kUNet], 0.9);
    EXPECT_EQ(seen.at["sampling"][kText], 0.0);
    // The decode reported, the UNet and the decoder are out too.
    EXPECT_EQ(seen.at["decode"][kUNet], 0.0);
    EXPECT_EQ(seen.at["decode"][kDecoder], 0.0);
    EXPECT_EQ(seen.at["decode"][kText], 0.0);

    // The next generation reads the released weights again and makes the same image.
    Observed again = seen;
    again.at.clear();
    EXPECT_EQ(generate(&again), first);
    EXPECT_GT(again.at["sampling"][kUNet], 0.9);
    EXPECT_EQ(again.at["decode"][kUNet], 0.0);
}

TEST_F(WeightPages, TwentyGenerationsKeepTheResidentSetFlat) {
    // Two generations first: allocator pools, thread scratch and caches settle.
    generate(nullptr);
    generate(nullptr);
    const uint64_t settled = resident_bytes();
    uint64_t peak_after = settled;
    for (int i = 0; i < 18; ++i) {
        generate(nullptr);
        peak_after = std::max(peak_after, resident_bytes());
    }
    // Between generations nothing of the model stays resident, and nothing accumulates.
    // (The fixture's weights alone are 414 MiB; 16 MiB is noise from malloc's arenas.)
    EXPECT_LT(peak_after, settled + (16u << 20))
        << "resident set grew from " << settled / 1048576 << " MiB to " << peak_after / 1048576
        << " MiB over 18 generations";
    EXPECT_LT(settled, uint64_t{300} << 20) << "weights stayed resident between generations";
}

TEST_F(WeightPages, InPlaceF16GivesTheImageOfWidenedF32Copies) {
    // The kernels widen f16 exactly, so reading the mapped f16 weights and computing on f32
    // copies (--type f32) differ only in the order of sums: at most one level per channel.
    const std::vector<unsigned char> in_place = generate(nullptr);
    ggdiff_options* f32 = ggdiff_options_clone(opts_);
    ASSERT_EQ(ggdiff_options_set(f32, "type", "f32"), 0);
    ggdiff_model* widened = nullptr;
    ASSERT_EQ(ggdiff_model_load(f32, &widened), 0) << ggdiff_last_error();
    ggdiff_image* images = nullptr;
    int count = 0;
    ASSERT_EQ(ggdiff_generate(widened, f32, nullptr, nullptr, &images, &count), 0)
        << ggdiff_last_error();
    ASSERT_EQ(count, 1);
    ASSERT_EQ(in_place.size(), static_cast<size_t>(images[0].width * images[0].height * 3));
    int worst = 0;
    for (size_t i = 0; i < in_place.size(); ++i)
        worst = std::max(worst, std::abs(static_cast<int>(in_place[i]) - images[0].data[i]));
    EXPECT_LE(worst, 1);
    ggdiff_images_free(images, count);
    ggdiff_model_free(widened);
    ggdiff_options_free(f32);
}

}  // namespace
