// LTX-2's latent bookkeeping: frame and audio step counts, the audio packed after the video as
// extra channels (zero tail; unpacked unchanged), and the ltx2 sigma schedule (shift from the
// token count, stretched to a terminal sigma of 0.1) as stable-diffusion.cpp computes them.
#include <gtest/gtest.h>

#include <cmath>

#include "families/ltx/latents.h"

namespace ggdiff::models {
namespace {

TEST(LtxLatents, FramesAndAudioSteps) {
    EXPECT_EQ(ltx_latent_frames(33), 5);
    EXPECT_EQ(ltx_latent_frames(1), 1);
    EXPECT_EQ(ltx_latent_frames(8), 1);
    EXPECT_EQ(ltx_latent_frames(9), 2);
    EXPECT_EQ(ltx_audio_steps(33, 24), 35);  // 33 / 24 s * 25 = 34.375
    EXPECT_EQ(ltx_audio_steps(33, 16), 52);  // 51.5625
    EXPECT_EQ(ltx_audio_steps(25, 25), 25);
    // 1280x704, 33 frames: 40 x 22 x 5 = 4400 values per channel; 35 * 128 = 4480 audio
    // values take two extra channels.
    EXPECT_EQ(ltx_packed_channels(40, 22, 5, 128, 35), 130);
    EXPECT_EQ(ltx_packed_channels(40, 22, 5, 128, 34), 129);
    // A 2x2x1 latent needs 4 * 128 / 4 = 128 extra channels for 4 audio steps.
    EXPECT_EQ(ltx_packed_channels(2, 2, 1, 128, 4), 256);
}

TEST(LtxLatents, PackAndUnpack) {
    const int64_t w = 3, h = 2, t = 2, c = 4, steps = 5;
    HostTensor video({w, h, c * t, 1}), audio({16, steps, 8, 1});
    for (size_t i = 0; i < video.data.size(); ++i) video.data[i] = static_cast<float>(i);
    for (size_t i = 0; i < audio.data.size(); ++i) audio.data[i] = -1.0f - static_cast<float>(i);
    const HostTensor packed = ltx_pack(video, t, audio);
    const int64_t extra = (640 + w * h * t - 1) / (w * h * t);  // 54 channels
    ASSERT_EQ(packed.dim(2), (c + extra) * t);
    EXPECT_EQ(packed.data[video.data.size()], -1.0f);  // the audio right after the video
    EXPECT_EQ(packed.data[video.data.size() + 639], -640.0f);
    for (size_t i = video.data.size() + 640; i < packed.data.size(); ++i)
        ASSERT_EQ(packed.data[i], 0.0f) << i;
    auto [v, a] = ltx_unpack(packed, c, t, steps);
    EXPECT_EQ(v.data, video.data);
    EXPECT_EQ(a.data, audio.data);
    EXPECT_EQ(a.dim(0), 16);
    EXPECT_EQ(a.dim(1), steps);
    EXPECT_EQ(a.dim(2), 8);
}

TEST(LtxLatents, Ltx2Schedule) {
    // 4096 tokens: shift exp(2.05); the grid 1, 3/4, 1/2, 1/4, 0 shifted, then stretched so
    // that sigma[3] is 0.1.
    const std::vector<float> s = ltx2_sigmas(4, 4096);
    ASSERT_EQ(s.size(), 5u);
    const double e = std::exp(2.05);
    double raw[4];
    for (int i = 0; i < 4; ++i) {
        const double g = 1.0 - i / 4.0;
        raw[i] = e / (e + (1.0 / g - 1.0));
    }
    const double scale = (1.0 - raw[3]) / (1.0 - 0.1);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(s[i], 1.0 - (1.0 - raw[i]) / scale, 1e-5) << i;
    EXPECT_NEAR(s[0], 1.0, 1e-6);
    EXPECT_NEAR(s[3], 0.1, 1e-5);
    EXPECT_EQ(s[4], 0.0f);
    // 1024 tokens: shift exp(0.95); without the stretch the shifted grid itself.
    Ltx2Schedule plain;
    plain.stretch = false;
    const std::vector<float> p = ltx2_sigmas(2, 1024, plain);
    const double e2 = std::exp(0.95);
    EXPECT_NEAR(p[1], e2 / (e2 + 1.0), 1e-5);
}

}  // namespace
}  // namespace ggdiff::models
