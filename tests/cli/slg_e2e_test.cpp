// Skip-layer guidance (--slg-scale, --skip-layers, --skip-layer-start, --skip-layer-end)
// through the CLI on the flux_tiny fixture: it moves the image only on the steps of its
// window (an empty window gives the no-SLG image bit for bit), batches and CFG keep working
// with it, and requests it cannot honour (a family whose denoiser cannot skip blocks, blocks
// the model does not have, a window that ends before it starts) fail before any compute.
// The reference images of FLUX with SLG are the golden set tests/golden/flux_slg.
#include <gtest/gtest.h>

#include <algorithm>

#include "../golden/flux_e2e.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
namespace flux = ggdiff::e2e::flux;
using e2e::contains;
using e2e::RunResult;

// The flux_slg golden case's guidance: both double blocks of the tiny DiT skipped on the
// 1-based steps 1 and 2 of 4.
const std::vector<std::string> kSlg = {"--slg-scale",      "2.5", "--skip-layer-start", "0.1",
                                       "--skip-layer-end", "0.7", "--skip-layers",      "[0,1]"};

class SkipLayerGuidance : public ::testing::Test {
  protected:
    void SetUp() override { dir_ = e2e::fresh_dir(); }

    // ggdiff on the flux_tiny files with the flux_euler request plus `extra`; the images it
    // wrote (one per batch item), in name order.
    std::vector<std::string> generate(const std::vector<std::string>& extra,
                                      const std::string& name) {
        const std::string out_dir = dir_ + "/" + name;
        fs::create_directories(out_dir);
        std::vector<std::string> args = flux::model_args();
        for (const std::string& a : flux::case_args("flux_euler")) args.push_back(a);
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out_dir + "/out.png"});
        RunResult r = e2e::run_ggdiff(args, dir_, 300);
        EXPECT_TRUE(r.succeeded()) << r.describe();
        std::vector<std::string> images;
        for (const auto& e : fs::directory_iterator(out_dir)) images.push_back(e.path().string());
        std::sort(images.begin(), images.end());
        return images;
    }

    static e2e::ImageDiff diff(const std::string& a, const std::string& b) {
        e2e::ImageDiff d = e2e::compare_images(a, b);
        EXPECT_TRUE(d.ok) << d.error;
        return d;
    }

    // A run expected to fail before any compute: exits non-zero, writes nothing, and its
    // error says each of `words`.
    void expect_error(const std::vector<std::string>& args, const std::vector<std::string>& words) {
        std::vector<std::string> full = args;
        full.insert(full.end(), {"-o", dir_ + "/never.png"});
        RunResult r = e2e::run_ggdiff(full, dir_, 120);
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        for (const std::string& w : words)
            EXPECT_TRUE(contains(r.err, w)) << w << "\n" << r.describe();
        EXPECT_FALSE(fs::exists(dir_ + "/never.png"));
    }

    std::string dir_;
};

TEST_F(SkipLayerGuidance, ChangesTheImageOnlyInsideItsWindow) {
    ASSERT_TRUE(flux::prerequisites_ok());
    const auto plain = generate({}, "plain");
    ASSERT_EQ(plain.size(), 1u);
    // A window that holds no step (start == end) runs no extra pass: the same image.
    std::vector<std::string> empty = kSlg;
    empty[3] = empty[5] = "0.5";
    const auto same = generate(empty, "empty_window");
    ASSERT_EQ(same.size(), 1u);
    const e2e::ImageDiff d0 = diff(same[0], plain[0]);
    EXPECT_EQ(d0.max_abs, 0) << "an empty window changed the image";
    const auto guided = generate(kSlg, "guided");
    ASSERT_EQ(guided.size(), 1u);
    const e2e::ImageDiff d1 = diff(guided[0], plain[0]);
    std::printf("SLG [0,1] vs none: mean_abs_diff %.3f\n", d1.mean_abs);
    EXPECT_GT(d1.mean_abs, 3.0);
    // Single blocks are numbered after the double blocks: 2 and 3 are the tiny DiT's single
    // blocks, and skipping them moves the image too, differently.
    std::vector<std::string> singles = kSlg;
    singles[7] = "2,3";
    const auto single = generate(singles, "singles");
    ASSERT_EQ(single.size(), 1u);
    const e2e::ImageDiff d2 = diff(single[0], plain[0]);
    const e2e::ImageDiff d3 = diff(single[0], guided[0]);
    std::printf("SLG [2,3] vs none: %.3f, vs [0,1]: %.3f\n", d2.mean_abs, d3.mean_abs);
    EXPECT_GT(d2.mean_abs, 1.0);
    EXPECT_GT(d3.mean_abs, 1.0);
    // Scale 0 is off whatever the other flags say.
    std::vector<std::string> off = kSlg;
    off[1] = "0";
    const auto zero = generate(off, "scale0");
    ASSERT_EQ(zero.size(), 1u);
    EXPECT_EQ(diff(zero[0], plain[0]).max_abs, 0);
}

TEST_F(SkipLayerGuidance, WorksWithBatchesAndWithCfg) {
    ASSERT_TRUE(flux::prerequisites_ok());
    // Each batch item gets its own guided sampling: item 0 of a batch of 2 is the single
    // image of the same seed.
    const auto single = generate(kSlg, "single");
    std::vector<std::string> batch_args = kSlg;
    batch_args.insert(batch_args.end(), {"-b", "2"});
    const auto batch = generate(batch_args, "batch");
    ASSERT_EQ(single.size(), 1u);
    ASSERT_EQ(batch.size(), 2u);
    EXPECT_LE(diff(batch[0], single[0]).mean_abs, 0.05);
    EXPECT_GT(diff(batch[1], single[0]).mean_abs, 1.0);  // seed + 1
    // With CFG (the negative prompt batched with the prompt) SLG adds its own push.
    const std::vector<std::string> cfg = {"--cfg-scale", "3", "-n", "blurry"};
    const auto cfg_only = generate(cfg, "cfg");
    std::vector<std::string> both = cfg;
    both.insert(both.end(), kSlg.begin(), kSlg.end());
    const auto cfg_slg = generate(both, "cfg_slg");
    ASSERT_EQ(cfg_only.size(), 1u);
    ASSERT_EQ(cfg_slg.size(), 1u);
    EXPECT_GT(diff(cfg_slg[0], cfg_only[0]).mean_abs, 3.0);
}

TEST_F(SkipLayerGuidance, RequestsItCannotHonourFailBeforeCompute) {
    ASSERT_TRUE(flux::prerequisites_ok());
    std::vector<std::string> base = flux::model_args();
    for (const std::string& a : flux::case_args("flux_euler")) base.push_back(a);
    // The tiny DiT has 2 double and 2 single blocks: 0..3.
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--slg-scale", "2.5", "--skip-layers", "1,4"});
    expect_error(args, {"--skip-layers", "no block 4", "0..3"});
    args = base;
    args.insert(args.end(), {"--slg-scale", "2.5", "--skip-layers", "[]"});
    expect_error(args, {"--skip-layers", "at least one"});
    args = base;
    args.insert(args.end(),
                {"--slg-scale", "2.5", "--skip-layer-start", "0.5", "--skip-layer-end", "0.2"});
    expect_error(args, {"--skip-layer-start 0.5 is after --skip-layer-end 0.2"});
    args = base;
    args.insert(args.end(), {"--skip-layers", "-1"});
    expect_error(args, {"--skip-layers", "-1"});
}

TEST_F(SkipLayerGuidance, FamiliesThatCannotSkipBlocksRefuseIt) {
    ASSERT_TRUE(e2e::prerequisites_ok());
    std::vector<std::string> args = e2e::model_args();
    for (const std::string& a : e2e::euler_request(2)) args.push_back(a);
    args.insert(args.end(), {"--slg-scale", "2.5"});
    expect_error(args, {"--slg-scale", "not supported for SD1", "FLUX and SD3"});
    // Scale 0 (the default) is no request: the other flags alone change nothing and pass.
    args = e2e::model_args();
    for (const std::string& a : e2e::euler_request(1)) args.push_back(a);
    args.insert(args.end(), {"--skip-layers", "7,8,9", "-o", dir_ + "/sd1.png"});
    RunResult r = e2e::run_ggdiff(args, dir_, 300);
    EXPECT_TRUE(r.succeeded()) << r.describe();
}

}  // namespace
