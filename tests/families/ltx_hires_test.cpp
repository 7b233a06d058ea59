// LTX-2's Family::latent_upscaler (families/ltx/hires.h) on a tiny temporal x2 upscaler of 8
// channels and video VAE statistics far from 0 / 1: the packed latent of a 64x64x9 request
// becomes the one of 64x64x17 whose video part is the module's upscale of the un-normalized
// latent, normalized again, and whose audio keeps the first pass's 15 steps then zeros up to
// 27; output() gives the request's new size and frames; files that are not upscalers, or of
// another channel count, are refused by name.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "../io/io_test_util.h"
#include "../vae/vae_test_support.h"
#include "families/ltx/hires.h"
#include "families/ltx/latent_upscaler.h"
#include "families/ltx/latents.h"
#include "io/tensor_index.h"
#include "ltx_vae_support.h"

namespace ggdiff {
namespace {

constexpr int64_t kC = 8;

vae_test::Shapes temporal_upscaler_shapes() {
    vae_test::Shapes s;
    auto conv3 = [&](const std::string& p, int64_t in, int64_t out) {
        s.push_back({p + "weight", {out, in, 3, 3, 3}});
        s.push_back({p + "bias", {out}});
    };
    auto norm = [&](const std::string& p) {
        s.push_back({p + "weight", {32}});
        s.push_back({p + "bias", {32}});
    };
    auto block = [&](const std::string& p) {
        conv3(p + "conv1.", 32, 32);
        norm(p + "norm1.");
        conv3(p + "conv2.", 32, 32);
        norm(p + "norm2.");
    };
    conv3("initial_conv.", kC, 32);
    norm("initial_norm.");
    block("res_blocks.0.");
    conv3("upsampler.0.", 32, 64);
    block("post_upsample_res_blocks.0.");
    conv3("final_conv.", 32, kC);
    return s;
}

struct Files {
    std::map<std::string, vae_test::HostWeight> weights;
    std::string upscaler, vae, vae4;
    std::vector<float> mean, std;
};

// Written for each test, in a folder of its own: ctest runs the tests in parallel.
Files files() {
    Files out;
    const std::string dir =
        testing::test_dir(std::string("ltx_hires_") +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    out.weights = vae_test::random_weights(temporal_upscaler_shapes(), 91);
    std::vector<testing::FakeTensor> fake;
    for (auto& [name, w] : out.weights) {
        if (name.find("norm") != std::string::npos && name.find(".weight") != std::string::npos) {
            for (float& v : w.data) v += 1.0f;
        }
        fake.push_back({name, "F32", w.shape, testing::to_bytes(w.data)});
    }
    out.upscaler = dir + "/up_t2.safetensors";
    testing::write_safetensors(out.upscaler, fake);
    // Statistics far from identity: the upscaler must see z * std + mean.
    auto stats = [&](int64_t n, const std::string& path) {
        std::vector<float> mean(static_cast<size_t>(n)), sd(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            mean[static_cast<size_t>(i)] = -1.5f + 0.4f * static_cast<float>(i);
            sd[static_cast<size_t>(i)] = 0.5f + 0.3f * static_cast<float>(i);
        }
        const std::string p = "first_stage_model.per_channel_statistics.";
        testing::write_safetensors(path,
                                   {{p + "mean-of-means", "F32", {n}, testing::to_bytes(mean)},
                                    {p + "std-of-means", "F32", {n}, testing::to_bytes(sd)}});
        return std::make_pair(mean, sd);
    };
    out.vae = dir + "/vae.safetensors";
    std::tie(out.mean, out.std) = stats(kC, out.vae);
    out.vae4 = dir + "/vae4.safetensors";
    stats(4, out.vae4);
    return out;
}

Result<ltx::LatentUpscalerLoader> loader(const TensorIndex& index) {
    static const ModelOptions options;
    static const EnginePlacement placement;
    FamilyContext ctx{options, index, placement, -1, 1, std::string(), nullptr};
    return ltx::ltx_latent_upscalers(ctx, "first_stage_model.");
}

GenerateOptions request(int frames) {
    GenerateOptions o;
    o.video_frames = frames;
    o.fps = 16;
    return o;
}

TEST(LtxHires, TemporalUpscaleOfThePackedLatent) {
    const Files f = files();
    TensorIndex index;
    ASSERT_TRUE(index.add(f.vae).ok());
    auto load = loader(index);
    ASSERT_TRUE(load.ok()) << load.status().message();
    auto up = (*load)(f.upscaler);
    ASSERT_TRUE(up.ok()) << up.status().message();
    LatentUpscaler& u = **up;
    EXPECT_EQ(u.name(), "up_t2");
    int w = 64, h = 96, frames = 9;
    u.output(w, h, frames);
    EXPECT_EQ(w, 64);
    EXPECT_EQ(h, 96);
    EXPECT_EQ(frames, 17);
    ASSERT_TRUE(u.prepare().ok());

    // 64x64x9 at 16 fps: 2x2 latent pixels, 2 latent frames, 15 audio steps; 17 frames: 3, 27.
    const GenerateOptions first = request(9), second = request(17);
    const int64_t t1 = 2, t2 = 3, s1 = 15, s2 = 27;
    const int64_t p1 = models::ltx_packed_channels(2, 2, t1, kC, s1);
    const HostTensor packed = vae_test::random_tensor({2, 2, p1 * t1, 1}, 17);
    auto got = u.upscale(first, 64, 64, second, 64, 64, packed.data);
    ASSERT_TRUE(got.ok()) << got.status().message();
    const int64_t p2 = models::ltx_packed_channels(2, 2, t2, kC, s2);
    ASSERT_EQ(got->size(), static_cast<size_t>(2 * 2 * p2 * t2));

    // The same by hand: unpack, un-normalize, the module on the CPU, normalize, pack.
    auto [video, audio] = models::ltx_unpack(packed, kC, t1, s1);
    HostTensor z({2, 2, kC, t1});
    for (int64_t c = 0; c < kC; ++c) {
        for (int64_t t = 0; t < t1; ++t) {
            for (int64_t i = 0; i < 4; ++i) {
                z.data[static_cast<size_t>((t * kC + c) * 4 + i)] =
                    video.data[static_cast<size_t>((c * t1 + t) * 4 + i)] *
                        f.std[static_cast<size_t>(c)] +
                    f.mean[static_cast<size_t>(c)];
            }
        }
    }
    TensorIndex up_index;
    ASSERT_TRUE(up_index.add(f.upscaler).ok());
    auto cfg = ltx::detect_ltx_latent_upscaler(up_index);
    ASSERT_TRUE(cfg.ok());
    auto y = ltx::ltx_upscale_latent(*cfg, z, ltx_test::cpu_runner(&f.weights));
    ASSERT_TRUE(y.ok()) << y.status().message();
    ASSERT_EQ(y->ne, (std::vector<int64_t>{2, 2, kC, t2}));
    HostTensor video2({2, 2, kC * t2, 1});
    for (int64_t c = 0; c < kC; ++c) {
        for (int64_t t = 0; t < t2; ++t) {
            for (int64_t i = 0; i < 4; ++i) {
                video2.data[static_cast<size_t>((c * t2 + t) * 4 + i)] =
                    (y->data[static_cast<size_t>((t * kC + c) * 4 + i)] -
                     f.mean[static_cast<size_t>(c)]) /
                    f.std[static_cast<size_t>(c)];
            }
        }
    }
    HostTensor audio2({16, s2, 8, 1});
    for (int64_t ch = 0; ch < 8; ++ch) {
        for (int64_t s = 0; s < s1; ++s) {
            for (int64_t b = 0; b < 16; ++b) {
                audio2.data[static_cast<size_t>((ch * s2 + s) * 16 + b)] =
                    audio.data[static_cast<size_t>((ch * s1 + s) * 16 + b)];
            }
        }
    }
    const HostTensor want = models::ltx_pack(video2, t2, audio2);
    const vae_test::Diff d = vae_test::compare(*got, want.data);
    EXPECT_LT(d.rel(), 1e-4);
    EXPECT_GT(d.max_ref, 0.5);

    // The wrong first request is refused.
    auto bad = u.upscale(second, 64, 64, second, 64, 64, packed.data);
    EXPECT_FALSE(bad.ok());
}

TEST(LtxHires, OtherFilesAreRefused) {
    const Files f = files();
    TensorIndex index;
    Status added = index.add(f.vae);
    ASSERT_TRUE(added.ok()) << added.message();
    auto load = loader(index);
    ASSERT_TRUE(load.ok()) << load.status().message();
    auto not_up = (*load)(f.vae);
    ASSERT_FALSE(not_up.ok());
    EXPECT_NE(not_up.status().message().find("is not an LTX-2 latent upscaler"), std::string::npos)
        << not_up.status().message();
    EXPECT_NE(not_up.status().message().find(f.vae), std::string::npos);

    TensorIndex index4;
    ASSERT_TRUE(index4.add(f.vae4).ok());
    auto load4 = loader(index4);
    ASSERT_TRUE(load4.ok()) << load4.status().message();
    auto other = (*load4)(f.upscaler);
    ASSERT_FALSE(other.ok());
    EXPECT_NE(other.status().message().find("8 latent channels; the LTX-2 VAE has 4"),
              std::string::npos)
        << other.status().message();

    TensorIndex empty;
    EXPECT_FALSE(loader(empty).ok());
}

}  // namespace
}  // namespace ggdiff
