// Without --scheduler a sampler runs on its own default schedule (lcm for lcm and tcd, simple
// for ddim_trailing): the image equals the one made with that --scheduler given explicitly,
// differs from the discrete schedule, and the metadata names the schedule that ran. The
// choice itself is unit tested in tests/sampling (sampler_api_test.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../golden/e2e_support.h"
#include "image/infotext.h"

namespace ggdiff::e2e {
namespace {

struct ScheduleCase {
    const char* sampler;
    const char* schedule;  // its default schedule, as --scheduler spells it
    const char* label;     // ... and as the metadata's "Schedule type" names it
};

std::string case_name(const ::testing::TestParamInfo<ScheduleCase>& info) {
    return info.param.sampler;
}

class DefaultSchedule : public ::testing::TestWithParam<ScheduleCase> {};

// One small generation with `extra` appended; the image path, or "" after a test failure.
std::string generate(const std::string& dir, const std::string& name, const ScheduleCase& c,
                     const std::vector<std::string>& extra) {
    std::vector<std::string> args = model_args();
    const std::string out = dir + "/" + name + ".png";
    args.insert(args.end(),
                {"-p", "a red circle", "-W", "64", "-H", "64", "--steps", "3", "--cfg-scale", "1",
                 "-s", "11", "--sampling-method", c.sampler, "-o", out});
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult r = run_ggdiff(args, dir, 300);
    EXPECT_TRUE(r.succeeded()) << r.describe();
    return r.succeeded() ? out : std::string();
}

std::string schedule_in_metadata(const std::string& path) {
    auto text = read_image_parameters(path);
    if (!text.ok()) return "(unreadable: " + text.status().message() + ")";
    auto info = parse_infotext(*text);
    if (!info.ok()) return "(unparsable: " + info.status().message() + ")";
    return info->schedule;
}

TEST_P(DefaultSchedule, EqualsTheExplicitScheduleAndIsNamedInTheMetadata) {
    const ScheduleCase& c = GetParam();
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const std::string implicit = generate(dir, "default", c, {});
    const std::string explicit_ = generate(dir, "explicit", c, {"--scheduler", c.schedule});
    const std::string discrete = generate(dir, "discrete", c, {"--scheduler", "discrete"});
    ASSERT_FALSE(implicit.empty() || explicit_.empty() || discrete.empty());

    const ImageDiff same = compare_images(implicit, explicit_);
    ASSERT_TRUE(same.ok) << same.error;
    EXPECT_EQ(same.max_abs, 0) << "mean " << same.mean_abs;
    const ImageDiff other = compare_images(implicit, discrete);
    ASSERT_TRUE(other.ok) << other.error;
    EXPECT_GT(other.max_abs, 0) << "the default schedule gave the discrete schedule's image";

    EXPECT_EQ(schedule_in_metadata(implicit), c.label);
    EXPECT_EQ(schedule_in_metadata(explicit_), c.label);
    EXPECT_EQ(schedule_in_metadata(discrete), "Uniform");
}

INSTANTIATE_TEST_SUITE_P(Samplers, DefaultSchedule,
                         ::testing::Values(ScheduleCase{"lcm", "lcm", "LCM"},
                                           ScheduleCase{"tcd", "lcm", "LCM"},
                                           ScheduleCase{"ddim_trailing", "simple", "Simple"}),
                         case_name);

}  // namespace
}  // namespace ggdiff::e2e
