// Step caching (--cache-mode, --cache-option, --scm-mask, --scm-policy) through the CLI on
// the SD1 fixture: ucache and spectrum skip the steps the reference skips and land within
// the tolerance of its images (../shared/golden/sd1_extras cases ucache and spectrum), the
// DiT-only modes say they do not apply and give the uncached image bit for bit, and bad
// options fail before any compute.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

std::string extras_dir() {
    return e2e::shared_dir() + "/golden/sd1_extras";
}

class StepCacheCli : public ::testing::Test {
  protected:
    void SetUp() override { dir_ = e2e::fresh_dir(); }

    // ggdiff on the SD1 fixture with `args`, writing `name`.png; the run's result.
    RunResult generate(const std::vector<std::string>& args, const std::string& name) {
        std::vector<std::string> full = e2e::model_args();
        full.insert(full.end(), args.begin(), args.end());
        full.insert(full.end(), {"-o", out(name)});
        return e2e::run_ggdiff(full, dir_, 300);
    }
    std::string out(const std::string& name) const { return dir_ + "/" + name + ".png"; }

    // A run expected to fail before any compute, its error saying each of `words`.
    void expect_error(const std::vector<std::string>& args, const std::vector<std::string>& words) {
        RunResult r = generate(args, "never");
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        for (const std::string& w : words)
            EXPECT_TRUE(contains(r.err, w)) << w << "\n" << r.describe();
        EXPECT_FALSE(fs::exists(out("never")));
    }

    std::string dir_;
};

// The sd1_extras case `id` without its --cache-mode/--cache-option pair (the uncached run).
std::vector<std::string> uncached(const std::string& id) {
    std::vector<std::string> a = e2e::suite_case_args(extras_dir(), id);
    a = e2e::with_flag_value(a, "--cache-mode", "");
    return e2e::with_flag_value(a, "--cache-option", "");
}

TEST_F(StepCacheCli, UCacheAndSpectrumMatchTheReference) {
    ASSERT_TRUE(e2e::prerequisites_ok());
    const double tol = e2e::suite_tolerance(extras_dir());
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"ucache", "UCache skipped 5/8 steps"}, {"spectrum", "Spectrum skipped 5/8 steps"}};
    for (const auto& [id, says] : cases) {
        SCOPED_TRACE(id);
        const std::vector<std::string> args = e2e::suite_case_args(extras_dir(), id);
        ASSERT_FALSE(args.empty()) << "no case " << id << " in " << extras_dir();
        RunResult r = generate(args, id);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        EXPECT_TRUE(contains(r.out + r.err, says)) << r.describe();
        const e2e::ImageDiff d = e2e::compare_images(out(id), extras_dir() + "/" + id + ".png");
        ASSERT_TRUE(d.ok) << d.error;
        EXPECT_LT(d.mean_abs, tol) << "against the reference image " << id << ".png";
        std::cout << "[ step cache ] " << id << " vs reference: mean abs " << d.mean_abs << "\n";
    }
    // The cache really changes the image (the reference moves it by about 10.7).
    RunResult plain = generate(uncached("ucache"), "plain");
    ASSERT_TRUE(plain.succeeded()) << plain.describe();
    const e2e::ImageDiff moved = e2e::compare_images(out("ucache"), out("plain"));
    ASSERT_TRUE(moved.ok) << moved.error;
    EXPECT_GT(moved.mean_abs, 3.0) << "ucache left the image as it was";
}

TEST_F(StepCacheCli, DitOnlyModesOnAUNetSayNotSupportedAndChangeNothing) {
    ASSERT_TRUE(e2e::prerequisites_ok());
    RunResult plain = generate(uncached("ucache"), "plain");
    ASSERT_TRUE(plain.succeeded()) << plain.describe();
    // (dbcache and taylorseer take cache-dit's path: tests/sampling/step_cache_test.cpp)
    for (const char* mode : {"easycache", "cache-dit"}) {
        SCOPED_TRACE(mode);
        std::vector<std::string> args = uncached("ucache");
        args.insert(args.end(), {"--cache-mode", mode, "--cache-option", "threshold=100"});
        RunResult r = generate(args, mode);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        EXPECT_TRUE(contains(r.out + r.err, "not supported for this model type")) << r.describe();
        EXPECT_FALSE(contains(r.out + r.err, "skipped")) << r.describe();
        const e2e::ImageDiff d = e2e::compare_images(out(mode), out("plain"));
        ASSERT_TRUE(d.ok) << d.error;
        EXPECT_EQ(d.max_abs, 0) << mode << " changed the image";
    }
}

TEST_F(StepCacheCli, BadOptionsFailBeforeAnyCompute) {
    ASSERT_TRUE(e2e::prerequisites_ok());
    const std::vector<std::string> base = uncached("ucache");
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> a = base;
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    };
    expect_error(with({"--cache-mode", "fastcache"}), {"fastcache", "ucache"});
    expect_error(with({"--cache-mode", "ucache", "--cache-option", "threshold=abc"}),
                 {"--cache-option", "threshold", "not a number"});
    expect_error(with({"--cache-mode", "ucache", "--cache-option", "speed=2"}),
                 {"unknown key 'speed'"});
    expect_error(with({"--cache-mode", "ucache", "--cache-option", "start=0.9,end=0.2"}),
                 {"start < end"});
    expect_error(with({"--cache-mode", "spectrum", "--cache-option", "window=0"}),
                 {"window must be >= 1"});
    expect_error(with({"--scm-mask", "1,0,2"}), {"--scm-mask", "'2'"});
    expect_error(with({"--scm-policy", "sometimes"}), {"sometimes"});
}

}  // namespace
