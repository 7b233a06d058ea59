// Ideogram 4's logit-normal schedule (stable-diffusion.cpp's LogitNormalScheduler) against the
// formula evaluated in double precision with Python's exact normal quantile:
// sigma_i = clamp(sigmoid(mu + 1.75 * z_i), sigmoid(-7.5), sigmoid(9)), z_i the standard normal
// quantile of 1 - i/n, mu = log(image_seq_len / 1024) / 2.
#include <gtest/gtest.h>

#include <vector>

#include "sampling/parameterization.h"
#include "sampling/schedules.h"

namespace ggdiff::sampling {
namespace {

void expect_near(const std::vector<float>& got, const std::vector<double>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-6) << i;
}

TEST(LogitNormalSchedule, MatchesTheFormulaAtSeveralSizes) {
    ScheduleOptions o;
    o.image_seq_len = 16;  // 64x64 with FLUX.2's VAE: mean -2.0794
    expect_near(
        *make_sigmas(ScheduleKind::LogitNormal, 4, Parameterization::flow(1.0f), o),
        {0.9998766054240137, 0.2892386735845234, 0.11111111111111113, 0.03697638014517541, 0.0});
    o.image_seq_len = 1024;  // 512x512: mean 0, symmetric around 1/2
    expect_near(*make_sigmas(ScheduleKind::LogitNormal, 3, Parameterization::flow(1.0f), o),
                {0.9998766054240137, 0.6800002113745729, 0.3199997886254271, 0.0});
    o.image_seq_len = 4096;
    expect_near(*make_sigmas(ScheduleKind::LogitNormal, 5, Parameterization::flow(1.0f), o),
                {0.9998766054240137, 0.8971530341598523, 0.7570373034933011, 0.5621247505363757,
                 0.314386706705255, 0.0});
}

TEST(LogitNormalSchedule, WithoutResolutionAwarenessTheMeanStaysZero) {
    ScheduleOptions o;
    o.image_seq_len = 16;
    o.logit_resolution_aware = false;
    expect_near(logit_normal_sigmas(3, o),
                {0.9998766054240137, 0.6800002113745729, 0.3199997886254271, 0.0});
}

TEST(LogitNormalSchedule, IsNamedAndParsed) {
    EXPECT_EQ(*parse_schedule("logit_normal"), ScheduleKind::LogitNormal);
    EXPECT_EQ(*parse_schedule("logit-normal"), ScheduleKind::LogitNormal);
    EXPECT_STREQ(schedule_name(ScheduleKind::LogitNormal), "logit_normal");
}

}  // namespace
}  // namespace ggdiff::sampling
