// Which sigma schedule a request gets without --scheduler (pipeline/generate_plan.h:
// schedule_sigmas), in stable-diffusion.cpp's order: a sampler's own schedule (lcm / tcd: LCM,
// ddim_trailing: simple) before the family's own sigmas (LTX-2's ltx2 schedule), which come
// before discrete; --scheduler before all of them.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "../support/fake_parts.h"
#include "pipeline/family.h"
#include "pipeline/generate_plan.h"
#include "sampling/schedules.h"

namespace ggdiff {
namespace {

class ScheduleChoice : public ::testing::Test {
  protected:
    void SetUp() override {
        family_.text = std::make_unique<fake_parts::FakeText>();
        family_.vae = std::make_unique<fake_parts::FakeVae>();
        family_.param = sampling::Parameterization::flux_flow(2.37f);
        family_.default_sigmas = [](const GenerateOptions&, int, int, int) {
            return std::vector<float>{0.9f, 0.4f, 0.0f};  // the family's own
        };
        plan_.param = family_.param;
    }
    std::vector<float> sigmas(sampling::SamplerKind sampler) {
        plan_.sampler = sampler;
        auto s = schedule_sigmas(options_, family_, plan_, 2, 64, 64);
        EXPECT_TRUE(s.ok()) << s.status().message();
        return s.ok() ? *s : std::vector<float>{};
    }
    std::vector<float> made(sampling::ScheduleKind kind) {
        auto s = sampling::make_sigmas(kind, 2, family_.param);
        EXPECT_TRUE(s.ok()) << s.status().message();
        return s.ok() ? *s : std::vector<float>{};
    }
    Family family_;
    GenerateOptions options_;
    GeneratePlan plan_;
};

TEST_F(ScheduleChoice, TheFamilysSigmasForSamplersWithoutTheirOwn) {
    const std::vector<float> own = {0.9f, 0.4f, 0.0f};
    EXPECT_EQ(sigmas(sampling::SamplerKind::Euler), own);
    EXPECT_EQ(sigmas(sampling::SamplerKind::EulerA), own);
    EXPECT_EQ(sigmas(sampling::SamplerKind::Dpmpp2m), own);
    EXPECT_FALSE(plan_.schedule.has_value());  // no A1111 schedule name for the family's own
}

TEST_F(ScheduleChoice, ASamplersOwnScheduleComesFirst) {
    EXPECT_EQ(sigmas(sampling::SamplerKind::Lcm), made(sampling::ScheduleKind::Lcm));
    EXPECT_EQ(plan_.schedule, sampling::ScheduleKind::Lcm);
    EXPECT_EQ(sigmas(sampling::SamplerKind::Tcd), made(sampling::ScheduleKind::Lcm));
    EXPECT_EQ(sigmas(sampling::SamplerKind::DdimTrailing), made(sampling::ScheduleKind::Simple));
    EXPECT_EQ(plan_.schedule, sampling::ScheduleKind::Simple);
}

TEST_F(ScheduleChoice, SchedulerFlagComesBeforeAll) {
    options_.scheduler = sampling::ScheduleKind::Karras;
    EXPECT_EQ(sigmas(sampling::SamplerKind::Euler), made(sampling::ScheduleKind::Karras));
    EXPECT_EQ(sigmas(sampling::SamplerKind::Lcm), made(sampling::ScheduleKind::Karras));
}

}  // namespace
}  // namespace ggdiff
