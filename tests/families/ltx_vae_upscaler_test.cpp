// The LTX-2 latent upscalers (x2 in space, x1.5 rational, x2 in time) on tiny random-weight
// models (8 latent channels, width 32, one residual block each side): detection, output
// sizes, and the result against the reference engine's own upscale of the same weights and
// latent (tests/families/ltx_vae_ref/upscale_*.f32, see the README there).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "../io/io_test_util.h"
#include "../vae/vae_test_support.h"
#include "families/ltx/latent_upscaler.h"
#include "io/tensor_index.h"
#include "ltx_vae_support.h"

namespace ggdiff {
namespace {

using ltx::LtxUpscalerConfig;

// kind: "x2", "x1.5" or "t2".
vae_test::Shapes upscaler_shapes(const std::string& kind) {
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
    conv3("initial_conv.", 8, 32);
    norm("initial_norm.");
    block("res_blocks.0.");
    if (kind == "x2") {
        s.push_back({"upsampler.0.weight", {128, 32, 3, 3}});
        s.push_back({"upsampler.0.bias", {128}});
    } else if (kind == "x1.5") {
        s.push_back({"upsampler.conv.weight", {288, 32, 3, 3}});
        s.push_back({"upsampler.conv.bias", {288}});
    } else {
        conv3("upsampler.0.", 32, 64);
    }
    block("post_upsample_res_blocks.0.");
    conv3("final_conv.", 32, 8);
    return s;
}

struct TinyUpscaler {
    std::map<std::string, vae_test::HostWeight> weights;
    std::vector<testing::FakeTensor> fake;
    LtxUpscalerConfig cfg;
    std::string error;
};

const TinyUpscaler& tiny_upscaler(const std::string& kind) {
    static std::map<std::string, TinyUpscaler> made;
    auto it = made.find(kind);
    if (it != made.end()) return it->second;
    TinyUpscaler& m = made[kind];
    m.weights = vae_test::random_weights(upscaler_shapes(kind), 61 + kind.size());
    for (auto& [name, w] : m.weights) {
        if (name.find("norm") != std::string::npos && name.find(".weight") != std::string::npos) {
            for (float& v : w.data) v += 1.0f;  // GroupNorm scales near 1
        }
        m.fake.push_back({name, "F32", w.shape, testing::to_bytes(w.data)});
    }
    std::string tag = kind;
    for (char& ch : tag) {
        if (ch == '.') ch = '_';
    }
    // One folder per test: ctest runs the tests of this file as parallel processes, and one
    // rewriting a file another has mapped kills that one (SIGBUS).
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& ch : test) {
        if (ch == '/') ch = '_';
    }
    const std::string file =
        testing::test_dir("ltx_upscaler_" + tag + "_" + test) + "/up.safetensors";
    testing::write_safetensors(file, m.fake);
    TensorIndex index;
    Status st = index.add(file);
    if (!st.ok()) {
        m.error = st.message();
    } else if (!ltx::is_ltx_latent_upscaler(index)) {
        m.error = "not detected";
    } else {
        auto cfg = ltx::detect_ltx_latent_upscaler(index);
        if (cfg.ok()) {
            m.cfg = *cfg;
        } else {
            m.error = cfg.status().message();
        }
    }
    return m;
}

TEST(LtxLatentUpscaler, KindAndSizesComeFromTheWeights) {
    const TinyUpscaler& x2 = tiny_upscaler("x2");
    const TinyUpscaler& r = tiny_upscaler("x1.5");
    const TinyUpscaler& t2 = tiny_upscaler("t2");
    ASSERT_EQ(x2.error + r.error + t2.error, "");
    EXPECT_EQ(x2.cfg.kind, LtxUpscalerConfig::Kind::Spatial);
    EXPECT_EQ(x2.cfg.channels, 8);
    EXPECT_EQ(x2.cfg.mid, 32);
    EXPECT_EQ(x2.cfg.blocks, 1);
    EXPECT_EQ(x2.cfg.out_width(5), 10);
    EXPECT_EQ(x2.cfg.out_frames(3), 3);
    EXPECT_EQ(r.cfg.kind, LtxUpscalerConfig::Kind::Rational);
    EXPECT_EQ(r.cfg.num, 3);
    EXPECT_EQ(r.cfg.den, 2);
    EXPECT_EQ(r.cfg.out_width(4), 6);
    EXPECT_EQ(r.cfg.out_height(3), 5);  // ceil(9 / 2)
    EXPECT_EQ(t2.cfg.kind, LtxUpscalerConfig::Kind::Temporal);
    EXPECT_EQ(t2.cfg.out_frames(3), 5);
    EXPECT_EQ(t2.cfg.out_width(5), 5);
}

TEST(LtxLatentUpscaler, WrongChannelsAreRefused) {
    const TinyUpscaler& m = tiny_upscaler("x2");
    ASSERT_EQ(m.error, "");
    auto r =
        ltx::ltx_upscale_latent(m.cfg, HostTensor({3, 2, 16, 1}), ltx_test::cpu_runner(&m.weights));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("8 channels"), std::string::npos);
}

// Known answers of the reference engine (LTXVUpsampler::LatentUpsamplerRunner::compute on
// [W, H, T, C]). With LTX_VAE_REF_DUMP=DIR the test writes upscale_<kind>.safetensors and
// upscale_<kind>.latent.f32 (the latent in [W, H, T, C] order).
class LtxLatentUpscalerReference : public ::testing::TestWithParam<const char*> {};

TEST_P(LtxLatentUpscalerReference, MatchesTheReferenceEngine) {
    const std::string kind = GetParam();
    const TinyUpscaler& m = tiny_upscaler(kind);
    ASSERT_EQ(m.error, "");
    const int64_t W = 4, H = 3, C = 8, T = 3;
    const HostTensor x = vae_test::random_tensor({W, H, C, T}, 700);
    std::string tag = kind;
    for (char& ch : tag) {
        if (ch == '.') ch = '_';
    }
    if (const char* dump = std::getenv("LTX_VAE_REF_DUMP")) {
        testing::write_bytes(
            std::string(dump) + "/upscale_" + tag + ".latent.f32",
            testing::to_bytes(ltx_test::swap_channels_frames(x.data, W * H, C, T)));
        testing::write_safetensors(std::string(dump) + "/upscale_" + tag + ".safetensors", m.fake);
    }
    auto got = ltx::ltx_upscale_latent(m.cfg, x, ltx_test::cpu_runner(&m.weights));
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->ne, (std::vector<int64_t>{m.cfg.out_width(W), m.cfg.out_height(H), C,
                                             m.cfg.out_frames(T)}));
    const std::string file =
        std::string(GGDIFF_SOURCE_DIR) + "/tests/families/ltx_vae_ref/upscale_" + tag + ".f32";
    if (!std::filesystem::exists(file)) GTEST_SKIP() << "no reference output " << file;
    const std::string bytes = testing::read_bytes(file);
    ASSERT_EQ(bytes.size(), got->data.size() * sizeof(float));
    std::vector<float> r(got->data.size());
    std::memcpy(r.data(), bytes.data(), bytes.size());
    // The reference's [W', H', T', C] to ours [W', H', C, T'].
    const std::vector<float> ref =
        ltx_test::swap_channels_frames(r, got->dim(0) * got->dim(1), C, got->dim(3), true);
    const vae_test::Diff d = vae_test::compare(got->data, ref);
    EXPECT_LT(d.rel(), 1e-2);  // the reference rounds convolution inputs to F16
    EXPECT_GT(d.max_ref, 0.1);
}

INSTANTIATE_TEST_SUITE_P(Kinds, LtxLatentUpscalerReference, ::testing::Values("x2", "x1.5", "t2"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                             std::string s = i.param;
                             for (char& ch : s) {
                                 if (ch == '.') ch = '_';
                             }
                             return s;
                         });

}  // namespace
}  // namespace ggdiff
