// The VAE and TAESD graphs against an independent float64 numpy reference
// (tests/tools/vae_reference.py) on small random-weight models.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "models/vae/taesd.h"
#include "models/vae/vae.h"
#include "vae_test_support.h"

namespace {

using ggdiff::HostTensor;
using ggdiff::models::TaesdConfig;
using ggdiff::models::VaeConfig;
namespace fs = std::filesystem;

const std::string kPrefix = "first_stage_model.";

// Largest error relative to the largest reference magnitude. ggml_conv_2d (Debian ggml
// 0.27) runs im2col in F16 even for F32 kernels, so every conv rounds its input to F16:
// about 1e-3 after a dozen layers, against the float64 reference.
constexpr double kTolF32 = 5e-3;
constexpr double kTolF16 = 2e-2;  // F16 kernels as well

// ch 32, two downsamplings (4x per axis), one resnet per encoder level: exercises
// nin_shortcut (32 -> 64) and levels without one.
VaeConfig tiny_vae() {
    VaeConfig cfg;
    cfg.ch = 32;
    cfg.ch_mult = {1, 2, 2};
    cfg.num_res_blocks = 1;
    cfg.z_channels = 4;
    return cfg;
}

std::string kl_json(const VaeConfig& cfg, const char* mode) {
    std::string mult;
    for (int m : cfg.ch_mult) mult += (mult.empty() ? "" : ", ") + std::to_string(m);
    return std::string("{\"model\": \"kl\", \"mode\": \"") + mode + "\", \"prefix\": \"" + kPrefix +
           "\", \"ch\": " + std::to_string(cfg.ch) + ", \"ch_mult\": [" + mult +
           "], \"num_res_blocks\": " + std::to_string(cfg.num_res_blocks) +
           ", \"z_channels\": " + std::to_string(cfg.z_channels) +
           ", \"has_quant_conv\": " + (cfg.has_quant_conv ? "true" : "false") + "}";
}

fs::path tmp_dir(const std::string& name) {
    return fs::path(GGDIFF_TEST_TMP) / name;
}

std::set<std::string> names_of(const vae_test::Shapes& shapes) {
    std::set<std::string> s;
    for (const auto& [n, shape] : shapes) s.insert(n);
    return s;
}

vae_test::Builder vae_decoder(const VaeConfig& cfg) {
    return [cfg](ggml_tensor* in, ggml_context* ctx, ggdiff::nn::Weights* w) {
        ggdiff::nn::Ctx c{ctx, w};
        return ggdiff::models::build_vae_decode(c, cfg, in, kPrefix);
    };
}

vae_test::Builder vae_encoder(const VaeConfig& cfg) {
    return [cfg](ggml_tensor* in, ggml_context* ctx, ggdiff::nn::Weights* w) {
        ggdiff::nn::Ctx c{ctx, w};
        return ggdiff::models::build_vae_encode(c, cfg, in, kPrefix);
    };
}

#define REQUIRE_PYTHON()                                                                   \
    do {                                                                                   \
        if (!vae_test::python_numpy_available()) GTEST_SKIP() << "python3 + numpy needed"; \
    } while (0)

TEST(VaeGraph, DecodeMatchesReference) {
    REQUIRE_PYTHON();
    const VaeConfig cfg = tiny_vae();
    const auto weights =
        vae_test::random_weights(ggdiff::models::vae_tensor_shapes(cfg, kPrefix), 1);
    // Non-square, batch of two.
    const HostTensor z = vae_test::random_tensor({6, 5, 4, 2}, 7);
    std::set<std::string> used;
    auto got = vae_test::run_graph(weights, z, vae_decoder(cfg), false, &used);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->ne, (std::vector<int64_t>{24, 20, 3, 2}));

    auto ref = vae_test::run_reference(tmp_dir("kl_decode"), weights, z, kl_json(cfg, "decode"),
                                       got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const vae_test::Diff d = vae_test::compare(got->data, *ref);
    EXPECT_LT(d.rel(), kTolF32) << "max abs " << d.max_abs << " of " << d.max_ref;
    EXPECT_GT(d.max_ref, 0.1);  // the output is not trivially small

    // The graph reads exactly the decoder part of the declared tensor list.
    VaeConfig dec_only = cfg;
    dec_only.has_encoder = false;
    EXPECT_EQ(used, names_of(ggdiff::models::vae_tensor_shapes(dec_only, kPrefix)));
}

TEST(VaeGraph, EncodeMatchesReference) {
    REQUIRE_PYTHON();
    const VaeConfig cfg = tiny_vae();
    const auto weights =
        vae_test::random_weights(ggdiff::models::vae_tensor_shapes(cfg, kPrefix), 2);
    const HostTensor x = vae_test::random_tensor({24, 20, 3, 2}, 8, 0.5f);
    std::set<std::string> used;
    auto got = vae_test::run_graph(weights, x, vae_encoder(cfg), false, &used);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->ne, (std::vector<int64_t>{6, 5, 8, 2}));

    auto ref = vae_test::run_reference(tmp_dir("kl_encode"), weights, x, kl_json(cfg, "encode"),
                                       got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const vae_test::Diff d = vae_test::compare(got->data, *ref);
    EXPECT_LT(d.rel(), kTolF32) << "max abs " << d.max_abs << " of " << d.max_ref;
    EXPECT_GT(d.max_ref, 0.1);

    VaeConfig dec_only = cfg;
    dec_only.has_encoder = false;
    std::set<std::string> enc = names_of(ggdiff::models::vae_tensor_shapes(cfg, kPrefix));
    for (const std::string& n : names_of(ggdiff::models::vae_tensor_shapes(dec_only, kPrefix))) {
        enc.erase(n);
    }
    EXPECT_EQ(used, enc);
}

// SD3 / FLUX layout: no quant convs, 16 latent channels, two resnets per level.
TEST(VaeGraph, NoQuantConvMatchesReference) {
    REQUIRE_PYTHON();
    VaeConfig cfg = tiny_vae();
    cfg.ch_mult = {1, 2};
    cfg.num_res_blocks = 2;
    cfg.z_channels = 16;
    cfg.has_quant_conv = false;
    const auto weights =
        vae_test::random_weights(ggdiff::models::vae_tensor_shapes(cfg, kPrefix), 3);
    const HostTensor z = vae_test::random_tensor({5, 7, 16, 1}, 9);
    auto got = vae_test::run_graph(weights, z, vae_decoder(cfg));
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->ne, (std::vector<int64_t>{10, 14, 3, 1}));
    auto ref = vae_test::run_reference(tmp_dir("kl_decode_nq"), weights, z, kl_json(cfg, "decode"),
                                       got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const vae_test::Diff d = vae_test::compare(got->data, *ref);
    EXPECT_LT(d.rel(), kTolF32) << "max abs " << d.max_abs << " of " << d.max_ref;

    const HostTensor x = vae_test::random_tensor({10, 14, 3, 1}, 10, 0.5f);
    auto enc = vae_test::run_graph(weights, x, vae_encoder(cfg));
    ASSERT_TRUE(enc.ok()) << enc.status().message();
    EXPECT_EQ(enc->ne, (std::vector<int64_t>{5, 7, 32, 1}));
    auto eref = vae_test::run_reference(tmp_dir("kl_encode_nq"), weights, x, kl_json(cfg, "encode"),
                                        enc->data.size());
    ASSERT_TRUE(eref.ok()) << eref.status().message();
    const vae_test::Diff de = vae_test::compare(enc->data, *eref);
    EXPECT_LT(de.rel(), kTolF32) << "max abs " << de.max_abs << " of " << de.max_ref;
}

// F16 kernels (as checkpoints store them): im2col then runs in F16, like sd.cpp.
TEST(VaeGraph, DecodeWithF16WeightsIsClose) {
    REQUIRE_PYTHON();
    const VaeConfig cfg = tiny_vae();
    const auto weights =
        vae_test::random_weights(ggdiff::models::vae_tensor_shapes(cfg, kPrefix), 4);
    const HostTensor z = vae_test::random_tensor({4, 4, 4, 1}, 11);
    auto got = vae_test::run_graph(weights, z, vae_decoder(cfg), true);
    ASSERT_TRUE(got.ok()) << got.status().message();
    auto ref = vae_test::run_reference(tmp_dir("kl_decode_f16"), weights, z, kl_json(cfg, "decode"),
                                       got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const vae_test::Diff d = vae_test::compare(got->data, *ref);
    EXPECT_LT(d.rel(), kTolF16) << "max abs " << d.max_abs << " of " << d.max_ref;
}

// --- TAESD ----------------------------------------------------------------------------

TaesdConfig tiny_taesd() {
    TaesdConfig cfg;
    cfg.channels = 16;
    cfg.has_encoder = true;
    return cfg;
}

std::string taesd_json(const TaesdConfig& cfg, const char* mode) {
    return std::string("{\"model\": \"taesd\", \"mode\": \"") + mode +
           "\", \"prefix\": \"taesd.\", \"decoder_offset\": " + std::to_string(cfg.decoder_offset) +
           "}";
}

void check_taesd(const TaesdConfig& cfg, const std::string& tag) {
    const auto weights =
        vae_test::random_weights(ggdiff::models::taesd_tensor_shapes(cfg, "taesd."), 5);
    const HostTensor z = vae_test::random_tensor({5, 4, 4, 2}, 12, 2.0f);
    std::set<std::string> used;
    auto got = vae_test::run_graph(
        weights, z,
        [cfg](ggml_tensor* in, ggml_context* ctx, ggdiff::nn::Weights* w) {
            ggdiff::nn::Ctx c{ctx, w};
            return ggdiff::models::build_taesd_decode(c, cfg, in, "taesd.");
        },
        false, &used);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->ne, (std::vector<int64_t>{40, 32, 3, 2}));
    auto ref = vae_test::run_reference(tmp_dir("taesd_decode" + tag), weights, z,
                                       taesd_json(cfg, "decode"), got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const vae_test::Diff d = vae_test::compare(got->data, *ref);
    EXPECT_LT(d.rel(), kTolF32) << "max abs " << d.max_abs << " of " << d.max_ref;
    EXPECT_GT(d.max_ref, 0.1);

    const HostTensor x = vae_test::random_tensor({32, 24, 3, 1}, 13, 0.5f);
    auto enc = vae_test::run_graph(
        weights, x,
        [cfg](ggml_tensor* in, ggml_context* ctx, ggdiff::nn::Weights* w) {
            ggdiff::nn::Ctx c{ctx, w};
            return ggdiff::models::build_taesd_encode(c, cfg, in, "taesd.");
        },
        false, &used);
    ASSERT_TRUE(enc.ok()) << enc.status().message();
    EXPECT_EQ(enc->ne, (std::vector<int64_t>{4, 3, 4, 1}));
    auto eref = vae_test::run_reference(tmp_dir("taesd_encode" + tag), weights, x,
                                        taesd_json(cfg, "encode"), enc->data.size());
    ASSERT_TRUE(eref.ok()) << eref.status().message();
    const vae_test::Diff de = vae_test::compare(enc->data, *eref);
    EXPECT_LT(de.rel(), kTolF32) << "max abs " << de.max_abs << " of " << de.max_ref;
}

TEST(TaesdGraph, DiffusersLayoutMatchesReference) {
    REQUIRE_PYTHON();
    check_taesd(tiny_taesd(), "");
}

TEST(TaesdGraph, OriginalLayoutMatchesReference) {
    REQUIRE_PYTHON();
    TaesdConfig cfg = tiny_taesd();
    cfg.decoder_offset = 1;
    check_taesd(cfg, "_orig");
}

TEST(VaeConfig, Downscale) {
    VaeConfig cfg;
    EXPECT_EQ(cfg.downscale(), 8);
    EXPECT_EQ(tiny_vae().downscale(), 4);
    EXPECT_EQ(TaesdConfig().downscale(), 8);
}

}  // namespace
