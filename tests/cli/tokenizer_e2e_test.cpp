// Where the CLIP vocabulary comes from, end to end on the SD1 fixture: a single file with no
// tokenizer anywhere uses the built-in list; a tokenizer/ folder beside the model and
// --tokenizer (a file, a folder holding merges.txt, or a diffusers folder holding
// tokenizer/) override it. Each gives the golden euler image.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../golden/e2e_support.h"

namespace ggdiff::e2e {
namespace {

const std::vector<std::string> kEulerCase = euler_request(4);

// A folder holding only a link to the fixture: no tokenizer files in it or its parent.
std::string lone_model(const std::string& dir) {
    const std::string model = dir + "/model/sd1.safetensors";
    fs::create_directories(dir + "/model");
    fs::create_symlink(fixture_path(), model);
    EXPECT_FALSE(fs::exists(dir + "/tokenizer"));
    EXPECT_FALSE(fs::exists(dir + "/model/tokenizer"));
    return model;
}

void copy_merges_to(const std::string& folder) {
    fs::create_directories(folder);
    fs::copy_file(merges_path(), folder + "/merges.txt");
}

// Runs the euler case with `extra` arguments and compares it with the golden image.
void expect_golden_euler(const std::vector<std::string>& model_and_tokenizer,
                         const std::string& dir, const std::string& expect_in_log = "") {
    std::vector<std::string> args = model_and_tokenizer;
    args.insert(args.end(), kEulerCase.begin(), kEulerCase.end());
    args.insert(args.end(), {"-v", "-o", dir + "/out.png"});
    const RunResult r = run_ggdiff(args, dir);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    if (!expect_in_log.empty()) {
        EXPECT_TRUE(contains(r.err, "CLIP tokenizer: " + expect_in_log)) << r.describe();
    }
    const ImageDiff d = compare_images(dir + "/out.png", golden_dir() + "/euler.png");
    ASSERT_TRUE(d.ok) << d.error;
    std::printf("[ tokenizer] mean_abs_diff %.3f max_abs_diff %d\n", d.mean_abs, d.max_abs);
    EXPECT_LE(d.mean_abs, manifest_tolerance());
}

TEST(Tokenizer, BuiltInWhenTheCheckpointHasNone) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    expect_golden_euler({"-m", lone_model(dir)}, dir, "built in");
}

TEST(Tokenizer, FolderBesideTheModel) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const std::string model = lone_model(dir);
    copy_merges_to(dir + "/model/tokenizer");
    expect_golden_euler({"-m", model}, dir, dir + "/model/tokenizer");
}

TEST(Tokenizer, FlagWithAFolder) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const std::string model = lone_model(dir);
    copy_merges_to(dir + "/clip");
    expect_golden_euler({"-m", model, "--tokenizer", dir + "/clip"}, dir, dir + "/clip");
}

TEST(Tokenizer, FlagWithADiffusersFolder) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const std::string model = lone_model(dir);
    copy_merges_to(dir + "/sd15/tokenizer");
    expect_golden_euler({"-m", model, "--tokenizer", dir + "/sd15"}, dir, dir + "/sd15/tokenizer");
}

// The folder is really read: a broken list there is an error naming it, not a silent
// fallback to the built-in one.
TEST(Tokenizer, BrokenFolderIsAnError) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const std::string model = lone_model(dir);
    fs::create_directories(dir + "/model/tokenizer");
    std::ofstream(dir + "/model/tokenizer/merges.txt") << "#version: 0.2\nnot-a-merge\n";
    const RunResult r = run_ggdiff(
        {"-m", model, "-p", "x", "-W", "64", "-H", "64", "--steps", "1", "-o", dir + "/out.png"},
        dir, 120);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "tokenizer")) << r.describe();
    EXPECT_FALSE(fs::exists(dir + "/out.png"));
}

}  // namespace
}  // namespace ggdiff::e2e
