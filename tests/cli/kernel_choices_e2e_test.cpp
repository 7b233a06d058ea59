// --fa, --diffusion-fa and the --*-conv-direct flags act where ggml's kernels run (GPUs, RPC
// devices, or the CPU with GGDIFF_CPU_KERNELS=0; the CPU kernels fuse attention and pick
// their own convolutions either way): the graphs then hold FLASH_ATTN_EXT and direct
// CONV_2D nodes (GGDIFF_PROFILE lists the ops run), and the image stays the golden one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "../golden/e2e_support.h"

namespace ggdiff::e2e {
namespace {

const std::vector<std::string> kEulerCase = euler_request(4);

RunResult run_euler(const std::string& dir, const std::string& out,
                    const std::vector<std::string>& extra) {
    std::vector<std::string> args = model_args();
    args.insert(args.end(), kEulerCase.begin(), kEulerCase.end());
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"-o", dir + "/" + out});
    return run_ggdiff(args, dir);
}

void expect_golden(const std::string& path) {
    const ImageDiff d = compare_images(path, golden_dir() + "/euler.png");
    ASSERT_TRUE(d.ok) << d.error;
    std::printf("[ kernels  ] %s: mean_abs_diff %.3f max_abs_diff %d\n", path.c_str(), d.mean_abs,
                d.max_abs);
    EXPECT_LE(d.mean_abs, manifest_tolerance());
}

TEST(KernelChoices, FlashAttentionAndDirectConvolutionOnGgmlKernels) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    ScopedEnv plain_ggml("GGDIFF_CPU_KERNELS", "0");
    ScopedEnv profile("GGDIFF_PROFILE", "1");

    const RunResult base = run_euler(dir, "base.png", {});
    ASSERT_TRUE(base.succeeded()) << base.describe();
    EXPECT_FALSE(contains(base.err, "FLASH_ATTN_EXT")) << base.err;
    EXPECT_TRUE(contains(base.err, "IM2COL")) << base.err;
    expect_golden(dir + "/base.png");

    const RunResult chosen = run_euler(
        dir, "chosen.png", {"--diffusion-fa", "--diffusion-conv-direct", "--vae-conv-direct"});
    ASSERT_TRUE(chosen.succeeded()) << chosen.describe();
    EXPECT_TRUE(contains(chosen.err, "FLASH_ATTN_EXT")) << chosen.err;
    EXPECT_TRUE(contains(chosen.err, "CONV_2D ")) << chosen.err;
    EXPECT_FALSE(contains(chosen.err, "IM2COL")) << chosen.err;
    expect_golden(dir + "/chosen.png");
}

// On the CPU kernels the choices change nothing: the same image, bit for bit.
TEST(KernelChoices, CpuKernelsIgnoreThem) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const RunResult a = run_euler(dir, "a.png", {});
    ASSERT_TRUE(a.succeeded()) << a.describe();
    const RunResult b = run_euler(dir, "b.png", {"--fa", "--diffusion-conv-direct"});
    ASSERT_TRUE(b.succeeded()) << b.describe();
    const ImageDiff d = compare_images(dir + "/a.png", dir + "/b.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_EQ(d.max_abs, 0);
}

}  // namespace
}  // namespace ggdiff::e2e
