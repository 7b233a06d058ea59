// Stand-alone part files (--clip_l, --clip_g, --t5xxl, --llm, --taesd, --clip_vision) are either
// read by the model's parts or refused before loading: never silently unused. SD1/SD2 read --clip_l
// in place of the checkpoint's text encoder.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../golden/e2e_support.h"
#include "../golden/qwen_e2e.h"
#include "sd2_fixture.h"

namespace ggdiff::e2e {
namespace {

// A small SD1 request on the fixture with `extra` appended.
RunResult run_sd1(const std::string& dir, const std::string& out,
                  const std::vector<std::string>& extra) {
    std::vector<std::string> args = model_args();
    args.insert(args.end(),
                {"-p", "a red circle", "-W", "64", "-H", "64", "--steps", "2", "--cfg-scale", "1",
                 "--sampling-method", "euler", "-s", "5", "-o", out});
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ggdiff(args, dir, 300);
}

TEST(PartFiles, UnreadPartFileIsRefusedBeforeLoading) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    for (const char* flag : {"--t5xxl", "--clip_g", "--llm", "--clip_vision"}) {
        const std::string out = dir + "/out.png";
        const RunResult r = run_sd1(dir, out, {flag, fixture_path(), "-v"});
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        EXPECT_TRUE(contains(r.err, std::string(flag) + " " + fixture_path() +
                                        ": SD1 models have no part that reads it"))
            << r.describe();
        EXPECT_TRUE(contains(r.err, "leave it out")) << r.describe();
        EXPECT_FALSE(contains(r.err + r.out, " weights, ")) << "weights were read\n"
                                                            << r.describe();
        EXPECT_FALSE(fs::exists(out));
    }
}

TEST(PartFiles, QwenImageRefusesAClipFile) {
    ASSERT_TRUE(fs::is_regular_file(qwen_fixture("qwen_tiny_dit")))
        << "run through ctest: the fixture tests make the Qwen fixtures";
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    std::vector<std::string> args = qwen_model_args(false);
    args.insert(args.end(), {"--clip_l", fixture_path(), "-p", "x", "-o", dir + "/out.png"});
    const RunResult r = run_ggdiff(args, dir, 120);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--clip_l")) << r.describe();
    EXPECT_TRUE(contains(r.err, "Qwen Image models have no part that reads it")) << r.describe();
    EXPECT_FALSE(fs::exists(dir + "/out.png"));
}

TEST(PartFiles, Sd1ReadsClipL) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    // The fixture's own encoder given as --clip_l: the same image as without it.
    ASSERT_TRUE(run_sd1(dir, dir + "/plain.png", {}).succeeded());
    const RunResult same = run_sd1(dir, dir + "/clip_l.png", {"--clip_l", fixture_path()});
    ASSERT_TRUE(same.succeeded()) << same.describe();
    const ImageDiff d = compare_images(dir + "/clip_l.png", dir + "/plain.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_EQ(d.max_abs, 0) << "mean " << d.mean_abs;
    // Another encoder (SD2's OpenCLIP, 1024 wide) is read too, so it cannot drive SD1's UNet.
    const std::string sd2 = sd2_fixture();
    ASSERT_FALSE(sd2.empty());
    const RunResult other = run_sd1(dir, dir + "/other.png", {"--clip_l", sd2});
    EXPECT_TRUE(other.failed_cleanly()) << other.describe();
    EXPECT_TRUE(contains(other.err,
                         "text encoder width 1024 does not match the UNet's context "
                         "width 768"))
        << other.describe();
}

}  // namespace
}  // namespace ggdiff::e2e
