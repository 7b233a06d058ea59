// The LTX-2 video VAE decoder on a tiny random-weight VAE in the real block layout (a residual
// group, then x2 time+space, x2 time and x2 space depth-to-space upsamplers with residual
// groups between, 4x4 output patches): block detection from the weights, frame counts, the
// temporal tiling windows, and the whole-sequence and tiled decodes against an independent
// float64 numpy forward (tests/tools/ltx_vae_reference.py), with and without timestep
// conditioning.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "../io/io_test_util.h"
#include "../vae/vae_test_support.h"
#include "families/ltx/video_vae.h"
#include "io/tensor_index.h"
#include "ltx_vae_support.h"

namespace ggdiff {
namespace {

using ltx::LtxTemporalTiling;
using ltx::LtxVideoVaeConfig;

// The tiny decoder's tensors (torch shapes) under `prefix`: 8 latent channels, conv_in to 32,
// up_blocks 0 res x1 (32), 1 compress_all (32 -> 16), 2 res x1 (16), 3 compress_time
// (16 -> 8), 4 res x2 (8), 5 compress_space (8 -> 4), conv_out 4 -> 3*4*4.
// With timestep conditioning and 128 latent channels: conv_in 128 -> 128, one residual group
// and conv_out, no upsamplers (the reference engine sizes the last scale/shift table for 128
// channels whatever the decoder's last width is; real decoders end at 128).
vae_test::Shapes tiny_shapes(const std::string& prefix, bool timestep, int64_t latent = 8) {
    vae_test::Shapes s;
    auto conv = [&](const std::string& p, int64_t in, int64_t out) {
        s.push_back({prefix + p + "conv.weight", {out, in, 3, 3, 3}});
        s.push_back({prefix + p + "conv.bias", {out}});
    };
    auto embedder = [&](const std::string& p, int64_t dim) {
        s.push_back({prefix + p + "linear_1.weight", {dim, 256}});
        s.push_back({prefix + p + "linear_1.bias", {dim}});
        s.push_back({prefix + p + "linear_2.weight", {dim, dim}});
        s.push_back({prefix + p + "linear_2.bias", {dim}});
    };
    auto group = [&](int i, int layers, int64_t ch) {
        const std::string p = "decoder.up_blocks." + std::to_string(i) + ".";
        for (int m = 0; m < layers; ++m) {
            const std::string r = p + "res_blocks." + std::to_string(m) + ".";
            conv(r + "conv1.", ch, ch);
            conv(r + "conv2.", ch, ch);
            if (timestep) s.push_back({prefix + r + "scale_shift_table", {4, ch}});
        }
        if (timestep) embedder(p + "time_embedder.timestep_embedder.", 4 * ch);
    };
    s.push_back({prefix + "per_channel_statistics.mean-of-means", {latent}});
    s.push_back({prefix + "per_channel_statistics.std-of-means", {latent}});
    const bool flat = timestep && latent == 128;
    const int64_t last = flat ? 128 : 4;
    if (flat) {
        conv("decoder.conv_in.", latent, last);
        group(0, 1, last);
    } else {
        conv("decoder.conv_in.", latent, 32);
        group(0, 1, 32);
        conv("decoder.up_blocks.1.conv.", 32, 8 * 16);
        group(2, 1, 16);
        conv("decoder.up_blocks.3.conv.", 16, 2 * 8);
        group(4, 2, 8);
        conv("decoder.up_blocks.5.conv.", 8, 4 * 4);
    }
    conv("decoder.conv_out.", last, 48);
    if (timestep) {
        s.push_back({prefix + "decoder.timestep_scale_multiplier", {1}});
        s.push_back({prefix + "decoder.last_scale_shift_table", {2, last}});
        embedder("decoder.last_time_embedder.timestep_embedder.", 2 * last);
    }
    if (!timestep && latent == 128) {
        // An encoder mirroring the decoder: 4x4 patches, res x1 (16), x2 space (conv 16 -> 8,
        // to 32), res (32), x2 time (conv 32 -> 32, to 64), res (64), x2 both (conv 64 -> 16,
        // to 128), res (128), conv_out 128 -> 129.
        const std::string e = "encoder.down_blocks.";
        auto res = [&](int i, int64_t ch) {
            conv(e + std::to_string(i) + ".res_blocks.0.conv1.", ch, ch);
            conv(e + std::to_string(i) + ".res_blocks.0.conv2.", ch, ch);
        };
        conv("encoder.conv_in.", 48, 16);
        res(0, 16);
        conv(e + "1.conv.", 16, 8);
        res(2, 32);
        conv(e + "3.conv.", 32, 32);
        res(4, 64);
        conv(e + "5.conv.", 64, 16);
        res(6, 128);
        conv("encoder.conv_out.", 128, 129);
    }
    return s;
}

struct TinyLtx {
    std::map<std::string, vae_test::HostWeight> weights;
    LtxVideoVaeConfig cfg;
    std::string prefix;
    std::string file;
    std::string error;
};

// The tiny VAE (8 latent channels; 128: the reference engine's fixed width) with its weights
// in a safetensors file.
const TinyLtx& tiny(bool timestep, int64_t latent = 8) {
    static std::map<std::pair<bool, int64_t>, TinyLtx> made;
    auto it = made.find({timestep, latent});
    if (it != made.end()) return it->second;
    TinyLtx& m = made[{timestep, latent}];
    const vae_test::Shapes shapes = tiny_shapes("vae.", timestep, latent);
    m.weights = vae_test::random_weights(shapes, (timestep ? 71 : 70) + latent);
    vae_test::Rng rng(5);
    for (float& v : m.weights.at("vae.per_channel_statistics.std-of-means").data) {
        v = 0.5f + static_cast<float>(rng.uniform());
    }
    for (float& v : m.weights.at("vae.decoder.conv_out.conv.weight").data) v *= 4.0f;
    if (timestep) m.weights.at("vae.decoder.timestep_scale_multiplier").data = {1000.0f};
    std::vector<testing::FakeTensor> fake;
    for (const auto& [name, w] : m.weights) {
        fake.push_back({name, "F32", w.shape, testing::to_bytes(w.data)});
    }
    // A folder per process: ctest runs these tests side by side, and test_dir empties it.
    const std::string path =
        testing::test_dir(std::string("ltx_vae_") + (timestep ? "ts" : "plain") +
                          std::to_string(latent) + "_" + std::to_string(getpid())) +
        "/vae.safetensors";
    testing::write_safetensors(path, fake);
    m.file = path;
    TensorIndex index;
    Status st = index.add(path);
    if (!st.ok()) {
        m.error = st.message();
        return m;
    }
    if (!ltx::find_ltx_video_vae(index, &m.prefix)) {
        m.error = "no LTX VAE found";
        return m;
    }
    auto cfg = ltx::detect_ltx_video_vae(index, m.prefix);
    if (!cfg.ok()) {
        m.error = cfg.status().message();
        return m;
    }
    m.cfg = *cfg;
    // The index may have renamed the tensors (vae. -> first_stage_model.): follow it.
    if (m.prefix != "vae.") {
        std::map<std::string, vae_test::HostWeight> renamed;
        for (auto& [name, w] : m.weights) renamed[m.prefix + name.substr(4)] = std::move(w);
        m.weights = std::move(renamed);
    }
    return m;
}

models::WanGraphRun runner(const TinyLtx& m, int* runs) {
    return ltx_test::cpu_runner(&m.weights, runs);
}

Result<std::vector<float>> numpy_decode(const TinyLtx& m, const std::string& name,
                                        const HostTensor& z, int tile_frames, int tile_overlap,
                                        size_t count) {
    const std::string config =
        "{\"prefix\": \"" + m.prefix +
        "\", \"decode_timestep\": 0.05, \"tile_frames\": " + std::to_string(tile_frames) +
        ", \"tile_overlap\": " + std::to_string(tile_overlap) + "}";
    return vae_test::run_reference_script(std::filesystem::path(GGDIFF_TEST_TMP) / name, m.weights,
                                          z, config, count, "ltx_vae_reference.py");
}

#define REQUIRE_PYTHON()                                                                   \
    do {                                                                                   \
        if (!vae_test::python_numpy_available()) GTEST_SKIP() << "python3 + numpy needed"; \
    } while (0)

// f32 CPU kernels: close to float64; plain ggml convolutions round their input to F16.
double tolerance() {
    return cpu::kernels_available() ? 1e-4 : 5e-3;
}

TEST(LtxVideoVae, BlocksAndScalesComeFromTheWeights) {
    const TinyLtx& m = tiny(false);
    ASSERT_EQ(m.error, "");
    const LtxVideoVaeConfig& c = m.cfg;
    EXPECT_EQ(c.latent_channels, 8);
    EXPECT_EQ(c.conv_in_width, 32);
    EXPECT_EQ(c.out_width, 4);
    EXPECT_EQ(c.patch, 4);
    EXPECT_FALSE(c.timestep_conditioning);
    EXPECT_FALSE(c.has_encoder);
    ASSERT_EQ(c.up.size(), 6u);
    EXPECT_TRUE(c.up[0].residual_group);
    EXPECT_EQ(c.up[0].layers, 1);
    EXPECT_EQ(c.up[4].layers, 2);
    EXPECT_FALSE(c.up[1].residual_group);
    EXPECT_EQ(c.up[1].factor_t, 2);
    EXPECT_EQ(c.up[1].factor_s, 2);
    EXPECT_EQ(c.up[1].out, 16);
    EXPECT_EQ(c.up[3].factor_t, 2);
    EXPECT_EQ(c.up[3].factor_s, 1);
    EXPECT_EQ(c.up[5].factor_t, 1);
    EXPECT_EQ(c.up[5].factor_s, 2);
    EXPECT_EQ(c.up[5].out, 4);
    EXPECT_EQ(c.time_scale(), 4);
    EXPECT_EQ(c.space_scale(), 16);
    EXPECT_EQ(ltx::ltx_video_frames(c, 1), 1);
    EXPECT_EQ(ltx::ltx_video_frames(c, 3), 9);
    EXPECT_EQ(ltx::ltx_latent_frames(c, 9), 3);
    EXPECT_EQ(ltx::ltx_latent_frames(c, 8), 0);
    EXPECT_TRUE(tiny(true).cfg.timestep_conditioning) << tiny(true).error;
}

TEST(LtxVideoVae, MissingOrMisShapedTensorsAreNamed) {
    const TinyLtx& m = tiny(false);
    ASSERT_EQ(m.error, "");
    std::vector<testing::FakeTensor> fake;
    for (const auto& [name, w] : m.weights) {
        if (name.find("conv_out.conv.weight") != std::string::npos) continue;
        std::vector<int64_t> shape = w.shape;
        fake.push_back({name, "F32", shape, testing::to_bytes(w.data)});
    }
    const std::string path = testing::test_dir("ltx_vae_broken") + "/vae.safetensors";
    testing::write_safetensors(path, fake);
    TensorIndex index;
    ASSERT_TRUE(index.add(path).ok());
    auto cfg = ltx::detect_ltx_video_vae(index, m.prefix);
    ASSERT_FALSE(cfg.ok());
    EXPECT_NE(cfg.status().message().find("decoder.conv_out.conv.weight"), std::string::npos)
        << cfg.status().message();
    std::string prefix = "?";
    EXPECT_FALSE(ltx::find_ltx_video_vae(TensorIndex(), &prefix));
    EXPECT_EQ(prefix, "");
}

TEST(LtxVideoVae, TemporalWindowsFollowTheReference) {
    auto w = ltx::ltx_temporal_windows(5, {true, 4, 1});
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0].first, 0);
    EXPECT_EQ(w[0].count, 4);
    EXPECT_EQ(w[0].overlap, 1);
    EXPECT_EQ(w[1].first, 3);
    EXPECT_EQ(w[1].count, 2);
    EXPECT_EQ(w[1].overlap, 0);
    w = ltx::ltx_temporal_windows(7, {true, 4, 1});
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[1].first, 3);
    EXPECT_EQ(w[1].count, 4);
    w = ltx::ltx_temporal_windows(2, {true, 4, 1});  // one window: overlap dropped
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].count, 2);
    EXPECT_EQ(w[0].overlap, 0);
    w = ltx::ltx_temporal_windows(4, {true, 2, 5});  // overlap >= frames: frames - 1
    ASSERT_EQ(w.size(), 3u);
    EXPECT_EQ(w[1].first, 1);
    EXPECT_EQ(w[2].first, 2);
    EXPECT_EQ(w[2].overlap, 0);
    w = ltx::ltx_temporal_windows(3, {true, 1, 0});
    ASSERT_EQ(w.size(), 3u);
}

struct DecodeCase {
    bool timestep;
    int frames;
    int tile_frames, tile_overlap;  // 0: whole sequence
};

// Test names from the values, not their bytes (padding bytes differ between the listing ctest
// makes and the run, and the test is then not found).
void PrintTo(const DecodeCase& c, std::ostream* os) {
    *os << (c.timestep ? "timestep_" : "plain_") << c.frames << "_" << c.tile_frames << "_"
        << c.tile_overlap;
}

class LtxVideoVaeDecode : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(LtxVideoVaeDecode, MatchesNumpyForward) {
    REQUIRE_PYTHON();
    const DecodeCase p = GetParam();
    const TinyLtx& m = tiny(p.timestep);
    ASSERT_EQ(m.error, "");
    const HostTensor z = vae_test::random_tensor({3, 2, 8, p.frames}, 90 + p.frames);
    LtxTemporalTiling tiling;
    tiling.enabled = p.tile_frames > 0;
    tiling.frames = p.tile_frames;
    tiling.overlap = p.tile_overlap;
    int runs = 0;
    auto got = ltx::ltx_decode_video(m.cfg, z, runner(m, &runs), tiling);
    ASSERT_TRUE(got.ok()) << got.status().message();
    const int want_frames = ltx::ltx_video_frames(m.cfg, p.frames);
    EXPECT_EQ(got->ne, (std::vector<int64_t>{48, 32, 3, want_frames}));
    const size_t windows =
        tiling.enabled && p.frames > 1 ? ltx::ltx_temporal_windows(p.frames, tiling).size() : 1;
    EXPECT_EQ(runs, static_cast<int>(windows));
    const std::string name = std::string("ltx_ref_") + (p.timestep ? "ts_" : "") +
                             std::to_string(p.frames) + "_" + std::to_string(p.tile_frames) + "_" +
                             std::to_string(p.tile_overlap);
    auto ref = numpy_decode(m, name, z, p.tile_frames, p.tile_overlap, got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const vae_test::Diff d = vae_test::compare(got->data, *ref);
    EXPECT_LT(d.rel(), tolerance());
    EXPECT_GT(d.max_ref, 0.1);  // a real signal, not near zero
}

INSTANTIATE_TEST_SUITE_P(Cases, LtxVideoVaeDecode,
                         ::testing::Values(DecodeCase{false, 1, 0, 0}, DecodeCase{false, 3, 0, 0},
                                           DecodeCase{true, 2, 0, 0}, DecodeCase{false, 5, 3, 1},
                                           DecodeCase{true, 4, 2, 1}, DecodeCase{false, 3, 1, 0}));

TEST(LtxVideoVae, TiledDecodeIsCloseToTheWholeDecode) {
    const TinyLtx& m = tiny(false);
    ASSERT_EQ(m.error, "");
    const HostTensor z = vae_test::random_tensor({3, 2, 8, 5}, 7);
    int runs = 0;
    auto whole = ltx::ltx_decode_video(m.cfg, z, runner(m, &runs));
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    auto tiled = ltx::ltx_decode_video(m.cfg, z, runner(m, &runs), {true, 3, 1});
    ASSERT_TRUE(tiled.ok()) << tiled.status().message();
    ASSERT_EQ(whole->ne, tiled->ne);
    double sum = 0, sum_ref = 0;
    for (size_t i = 0; i < whole->data.size(); ++i) {
        sum += std::fabs(whole->data[i] - tiled->data[i]);
        sum_ref += std::fabs(whole->data[i]);
    }
    // The first window's frames before its overlap see the same inputs except at the edge.
    std::printf("[   diff   ] tiled vs whole: mean abs %.4g of mean %.4g\n",
                sum / whole->data.size(), sum_ref / whole->data.size());
    EXPECT_GT(sum, 0.0);
    EXPECT_LT(sum, 0.5 * sum_ref);
}

// Known answers of the reference engine: stable-diffusion.cpp 38a51f81's LTXVideoVAE run by a
// harness outside the repo (tests/families/ltx_vae_ref/README.md) on the same weights (128
// latent channels, the reference's fixed width) and latent. With LTX_VAE_REF_DUMP=DIR the test
// writes the harness's inputs there: <case>.latent.f32 ([W, H, T, C]) and the weights' path.
struct RefCase {
    const char* name;
    bool timestep;
    int frames;
    int tile_frames, tile_overlap;
};

void PrintTo(const RefCase& c, std::ostream* os) {
    *os << c.name;
}

class LtxVideoVaeReference : public ::testing::TestWithParam<RefCase> {};

TEST_P(LtxVideoVaeReference, MatchesTheReferenceEngine) {
    const RefCase p = GetParam();
    const TinyLtx& m = tiny(p.timestep, 128);
    ASSERT_EQ(m.error, "");
    const int64_t W = 2, H = 1, C = 128, T = p.frames;
    const HostTensor z = vae_test::random_tensor({W, H, C, T}, 300 + T);
    if (const char* dump = std::getenv("LTX_VAE_REF_DUMP")) {
        testing::write_bytes(
            std::string(dump) + "/" + p.name + ".latent.f32",
            testing::to_bytes(ltx_test::swap_channels_frames(z.data, W * H, C, T)));
        testing::write_bytes(std::string(dump) + "/" + p.name + ".weights", m.file);
    }
    LtxTemporalTiling tiling;
    tiling.enabled = p.tile_frames > 0;
    tiling.frames = p.tile_frames;
    tiling.overlap = p.tile_overlap;
    int runs = 0;
    auto got = ltx::ltx_decode_video(m.cfg, z, runner(m, &runs), tiling);
    ASSERT_TRUE(got.ok()) << got.status().message();
    const std::string file =
        std::string(GGDIFF_SOURCE_DIR) + "/tests/families/ltx_vae_ref/" + p.name + ".f32";
    if (!std::filesystem::exists(file)) GTEST_SKIP() << "no reference output " << file;
    const std::string bytes = testing::read_bytes(file);
    // The reference's [W', H', T', 3] to ours [W', H', 3, T'].
    ASSERT_EQ(bytes.size(), got->data.size() * sizeof(float));
    std::vector<float> r(got->data.size());
    std::memcpy(r.data(), bytes.data(), bytes.size());
    const std::vector<float> ref =
        ltx_test::swap_channels_frames(r, got->dim(0) * got->dim(1), 3, got->dim(3), true);
    const vae_test::Diff d = vae_test::compare(got->data, ref);
    EXPECT_LT(d.rel(), 1e-2);  // the reference rounds convolution inputs to F16
    EXPECT_GT(d.max_ref, 0.1);
}

INSTANTIATE_TEST_SUITE_P(Cases, LtxVideoVaeReference,
                         ::testing::Values(RefCase{"whole3", false, 3, 0, 0},
                                           RefCase{"ts_whole2", true, 2, 0, 0},
                                           RefCase{"tiled5_3_1", false, 5, 3, 1},
                                           RefCase{"ts_tiled4_2_1", true, 4, 2, 1}),
                         [](const ::testing::TestParamInfo<RefCase>& i) {
                             return std::string(i.param.name);
                         });

// The encoder against the reference engine's encode (LTXVideoVAE::_compute, decode_graph
// false) of a [32, 16, 3, 9] video: ltx_vae_ref/encode9.f32 ([2, 1, 3, 128]). With
// LTX_VAE_REF_DUMP=DIR the test writes encode9.video.f32 ([W, H, T, 3]).
TEST(LtxVideoVae, EncoderMatchesTheReferenceEngine) {
    const TinyLtx& m = tiny(false, 128);
    ASSERT_EQ(m.error, "");
    const LtxVideoVaeConfig& c = m.cfg;
    ASSERT_TRUE(c.has_encoder);
    EXPECT_EQ(c.enc_in_width, 16);
    ASSERT_EQ(c.down.size(), 7u);
    EXPECT_EQ(c.down[1].factor_t * 10 + c.down[1].factor_s, 12);
    EXPECT_EQ(c.down[3].factor_t * 10 + c.down[3].factor_s, 21);
    EXPECT_EQ(c.down[5].factor_t * 10 + c.down[5].factor_s, 22);
    EXPECT_EQ(c.enc_out_width, 128);
    const HostTensor video = vae_test::random_tensor({32, 16, 3, 9}, 900, 0.5f);
    if (const char* dump = std::getenv("LTX_VAE_REF_DUMP")) {
        testing::write_bytes(
            std::string(dump) + "/encode9.video.f32",
            testing::to_bytes(ltx_test::swap_channels_frames(video.data, 32 * 16, 3, 9)));
    }
    int runs = 0;
    auto got = ltx::ltx_encode_video(c, video, runner(m, &runs));
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->ne, (std::vector<int64_t>{2, 1, 128, 3}));
    const std::string file =
        std::string(GGDIFF_SOURCE_DIR) + "/tests/families/ltx_vae_ref/encode9.f32";
    if (!std::filesystem::exists(file)) GTEST_SKIP() << "no reference output " << file;
    const std::string bytes = testing::read_bytes(file);
    ASSERT_EQ(bytes.size(), got->data.size() * sizeof(float));
    std::vector<float> r(got->data.size());
    std::memcpy(r.data(), bytes.data(), bytes.size());
    const vae_test::Diff d =
        vae_test::compare(got->data, ltx_test::swap_channels_frames(r, 2, 128, 3, true));
    EXPECT_LT(d.rel(), 1e-2);  // the reference rounds convolution inputs to F16
    EXPECT_GT(d.max_ref, 0.1);
}

TEST(LtxVideoVae, EncoderRefusesOddSizesAndNeedsItsWeights) {
    const TinyLtx& m = tiny(false, 128);
    ASSERT_EQ(m.error, "");
    int runs = 0;
    auto r = ltx::ltx_encode_video(m.cfg, HostTensor({24, 16, 3, 1}), runner(m, &runs));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("multiple of 16"), std::string::npos)
        << r.status().message();
    r = ltx::ltx_encode_video(tiny(false).cfg, HostTensor({32, 16, 3, 1}), runner(m, &runs));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("no encoder"), std::string::npos);
    EXPECT_EQ(runs, 0);
}

TEST(LtxVideoVae, WrongLatentWidthIsRefused) {
    const TinyLtx& m = tiny(false);
    ASSERT_EQ(m.error, "");
    int runs = 0;
    auto r = ltx::ltx_decode_video(m.cfg, HostTensor({3, 2, 16, 1}), runner(m, &runs));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("8 channels"), std::string::npos);
    EXPECT_EQ(runs, 0);
}

}  // namespace
}  // namespace ggdiff
