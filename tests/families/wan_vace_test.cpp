// Wan VACE's control context (families/wan/vace.h) on a fake VAE whose latent frame t holds,
// in channel c, the mean of the video frame it starts at (0 or 4t) plus c / 1000: where the
// inactive (grey) and reactive (control) latents, the mask's ones and the reference image's
// frame land, what missing control frames become, and the extra latent frame -i brings.
#include <gtest/gtest.h>

#include <numeric>

#include "families/wan/vace.h"
#include "sampling/rng.h"

namespace ggdiff {
namespace {

class MeanVae : public Autoencoder {
  public:
    int downscale() const override { return 8; }
    Result<HostTensor> decode(const HostTensor&) override { return Status::Error("unused"); }
    bool can_encode() const override { return true; }
    Result<HostTensor> encode(const HostTensor& video, sampling::Rng&) override {
        const int64_t w = video.dim(0), h = video.dim(1), frames = video.dim(3);
        const int64_t t = 1 + (frames - 1) / 4, frame = w * h * 3;
        HostTensor z({w / 8, h / 8, kChannels * t, 1});
        const int64_t plane = z.dim(0) * z.dim(1);
        for (int64_t f = 0; f < t; ++f) {
            const auto first = video.data.begin() + 4 * f * frame;
            const float mean = std::accumulate(first, first + frame, 0.0f) / frame;
            for (int64_t c = 0; c < kChannels; ++c) {
                std::fill_n(z.data.begin() + (c * t + f) * plane, plane, mean + c / 1000.0f);
            }
        }
        return z;
    }
    void end_phase() override {}
    static constexpr int64_t kChannels = 16;
};

Image flat(int side, uint8_t v) {
    Image img;
    img.width = img.height = side;
    img.channels = 3;
    img.pixels.assign(static_cast<size_t>(side * side * 3), v);
    return img;
}

class WanVace : public ::testing::Test {
  protected:
    void SetUp() override {
        dit_.vace_layers = 15;
        dit_.vace_in_channels = 96;
        o_.video_frames = 5;
        o_.vace_strength = 0.75f;
    }
    Result<VideoConditions> run() {
        auto rng = sampling::make_rng(sampling::RngKind::Cpu, 1);
        return wan_vace_conditions(dit_, &vae_)(o_, 64, 64, 5, *rng);
    }
    // Channel c of latent frame f of the context (every pixel of the plane is the same).
    float at(const VideoConditions& vc, int64_t c, int64_t f) const {
        const int64_t frames = vc.vace_context.dim(2) / dit_.vace_in_channels;
        const int64_t plane = vc.vace_context.dim(0) * vc.vace_context.dim(1);
        return vc.vace_context.data[static_cast<size_t>((c * frames + f) * plane)];
    }
    models::WanConfig dit_;
    MeanVae vae_;
    GenerateOptions o_;
};

// 255 in [-1, 1] is 1, 0 is -1; missing frames are mid grey (0).
TEST_F(WanVace, InactiveIsGreyReactiveIsTheControlVideoMaskIsOnes) {
    o_.control_frames = {flat(64, 255)};
    auto vc = run();
    ASSERT_TRUE(vc.ok()) << vc.status().message();
    ASSERT_EQ(vc->vace_context.ne, (std::vector<int64_t>{8, 8, 96 * 2, 1}));
    EXPECT_EQ(vc->leading_frames, 0);
    EXPECT_FLOAT_EQ(vc->vace_strength, 0.75f);
    EXPECT_TRUE(vc->used_init_image);
    for (int64_t c = 0; c < 16; ++c) {
        EXPECT_NEAR(at(*vc, c, 0), c / 1000.0f, 1e-5);           // grey
        EXPECT_NEAR(at(*vc, 16 + c, 0), 1 + c / 1000.0f, 1e-5);  // the white control frame
        EXPECT_NEAR(at(*vc, 16 + c, 1), c / 1000.0f, 1e-5);      // frame 4: not given, grey
    }
    for (int64_t c = 32; c < 96; ++c) {
        EXPECT_EQ(at(*vc, c, 0), 1.0f);
        EXPECT_EQ(at(*vc, c, 1), 1.0f);
    }
}

// Control frames past the video's are unused; each is resized to the output size.
TEST_F(WanVace, ControlFramesAreResizedAndExtraOnesUnused) {
    for (int i = 0; i < 7; ++i) o_.control_frames.push_back(flat(32, i == 4 ? 0 : 255));
    auto vc = run();
    ASSERT_TRUE(vc.ok()) << vc.status().message();
    EXPECT_NEAR(at(*vc, 16, 0), 1.0f, 1e-5);
    EXPECT_NEAR(at(*vc, 16, 1), -1.0f, 1e-5);  // latent frame 1 starts at video frame 4
}

// -i: the reference image's latent (then zeros) is latent frame 0; the video's follow.
TEST_F(WanVace, ReferenceImageIsOneMoreLeadingFrame) {
    o_.control_frames = {flat(64, 255)};
    o_.init_image = flat(64, 0);
    EXPECT_EQ(wan_vace_latent_frames(o_, 2), 3);
    auto vc = run();
    ASSERT_TRUE(vc.ok()) << vc.status().message();
    ASSERT_EQ(vc->vace_context.ne, (std::vector<int64_t>{8, 8, 96 * 3, 1}));
    EXPECT_EQ(vc->leading_frames, 1);
    for (int64_t c = 0; c < 16; ++c) {
        EXPECT_NEAR(at(*vc, c, 0), -1 + c / 1000.0f, 1e-5);  // the black reference image
        EXPECT_EQ(at(*vc, 16 + c, 0), 0.0f);
        EXPECT_NEAR(at(*vc, c, 1), c / 1000.0f, 1e-5);
        EXPECT_NEAR(at(*vc, 16 + c, 1), 1 + c / 1000.0f, 1e-5);
    }
    for (int64_t c = 32; c < 96; ++c) {
        EXPECT_EQ(at(*vc, c, 0), 0.0f);
        EXPECT_EQ(at(*vc, c, 1), 1.0f);
    }
    o_.init_image.reset();
    EXPECT_EQ(wan_vace_latent_frames(o_, 2), 2);
}

TEST_F(WanVace, UnknownContextWidthIsRefused) {
    dit_.vace_in_channels = 100;
    auto vc = run();
    ASSERT_FALSE(vc.ok());
    EXPECT_NE(vc.status().message().find("100 channels"), std::string::npos)
        << vc.status().message();
}

}  // namespace
}  // namespace ggdiff
