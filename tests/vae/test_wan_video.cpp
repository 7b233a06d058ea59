// The Wan 2.1 VAE on video (causal 3-D decode and encode, chunk by chunk with host caches)
// against an independent float64 numpy reference (tests/tools/wan_vae_reference.py) on a tiny
// random-weight VAE in the real block layout (tests/fixtures/wan_vae_tiny.tensors).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../support/wan_vae_diffusers.h"
#include "io/tensor_index.h"
#include "models/vae/wan_vae.h"
#include "pipeline/parts/wan_autoencoder.h"
#include "pipeline/placement_setup.h"
#include "runtime/kernel_choices.h"
#include "sampling/rng.h"
#include "vae_test_support.h"

namespace {

using ggdiff::HostTensor;
using ggdiff::Result;
using ggdiff::models::WanVaeConfig;
namespace fs = std::filesystem;

const std::string kPrefix = "first_stage_model.";

// With the CPU kernels (f32 convolutions) the chunked graphs must match the float64
// reference closely; plain ggml convolutions round their im2col input to F16.
constexpr double kTolKernels = 1e-4;
constexpr double kTolGgml = 5e-3;
constexpr double kTolF16 = 2e-2;  // F16 kernels as well

vae_test::Shapes tiny_shapes(const std::string& list) {
    vae_test::Shapes out;
    std::ifstream f(std::string(GGDIFF_SOURCE_DIR) + "/tests/fixtures/" + list);
    std::string line;
    while (std::getline(f, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream ss(line);
        std::string name, dims;
        if (!(ss >> name >> dims)) continue;
        std::vector<int64_t> shape;
        std::istringstream ds(dims);
        for (std::string d; std::getline(ds, d, ',');) shape.push_back(std::stoll(d));
        out.push_back({kPrefix + name, shape});
    }
    return out;
}

// A safetensors file (F16) with these tensors; the data is a hole of zeros (for detection).
fs::path write_safetensors(const std::string& file, const vae_test::Shapes& tensors) {
    const fs::path dir = fs::path(GGDIFF_TEST_TMP);
    fs::create_directories(dir);
    const fs::path path = dir / file;
    std::string header = "{";
    uint64_t offset = 0;
    for (const auto& [name, shape] : tensors) {
        uint64_t n = 2;
        std::string dims;
        for (int64_t d : shape) {
            n *= static_cast<uint64_t>(d);
            dims += (dims.empty() ? "" : ",") + std::to_string(d);
        }
        if (header.size() > 1) header += ",";
        header += "\"" + name + "\":{\"dtype\":\"F16\",\"shape\":[" + dims +
                  "],\"data_offsets\":[" + std::to_string(offset) + "," +
                  std::to_string(offset + n) + "]}";
        offset += n;
    }
    header += "}";
    header.append((8 - header.size() % 8) % 8, ' ');
    {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        const uint64_t len = header.size();
        for (int i = 0; i < 8; ++i) f.put(static_cast<char>((len >> (8 * i)) & 0xff));
        f << header;
    }
    fs::resize_file(path, 8 + header.size() + offset);
    return path;
}

// A safetensors file (F32) holding these weights.
fs::path write_weights(const std::string& file,
                       const std::map<std::string, vae_test::HostWeight>& weights) {
    const fs::path path = fs::path(GGDIFF_TEST_TMP) / file;
    fs::create_directories(path.parent_path());
    std::string header = "{";
    uint64_t offset = 0;
    for (const auto& [name, w] : weights) {
        std::string dims;
        for (int64_t d : w.shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
        const uint64_t n = w.data.size() * sizeof(float);
        if (header.size() > 1) header += ",";
        header += "\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + dims +
                  "],\"data_offsets\":[" + std::to_string(offset) + "," +
                  std::to_string(offset + n) + "]}";
        offset += n;
    }
    header += "}";
    header.append((8 - header.size() % 8) % 8, ' ');
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    const uint64_t len = header.size();
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>((len >> (8 * i)) & 0xff));
    f << header;
    for (const auto& [name, w] : weights) {
        f.write(reinterpret_cast<const char*>(w.data.data()),
                static_cast<std::streamsize>(w.data.size() * sizeof(float)));
    }
    return path;
}

// A tiny VAE of tests/fixtures: its tensor list, random weights and detected config.
struct TinyVae {
    vae_test::Shapes shapes;
    std::map<std::string, vae_test::HostWeight> weights;
    WanVaeConfig cfg;
    std::string error;
};

const TinyVae& tiny_vae(const std::string& list, uint64_t seed) {
    static std::map<std::string, TinyVae> made;
    auto it = made.find(list);
    if (it != made.end()) return it->second;
    TinyVae& m = made[list];
    m.shapes = tiny_shapes(list);
    m.weights = vae_test::random_weights(m.shapes, seed);
    // Outputs of a useful size (as the shared qwen_vae fixture's gain on decoder.head.2):
    // the random heads alone make images of about 0.02.
    for (const char* head : {"decoder.head.2.weight", "encoder.head.2.weight"}) {
        for (float& v : m.weights.at(kPrefix + head).data) v *= 30.0f;
    }
    ggdiff::TensorIndex index;
    const ggdiff::Status st =
        index.add(write_safetensors(list + ".safetensors", m.shapes).string());
    if (!st.ok()) {
        m.error = st.message();
        return m;
    }
    auto cfg = ggdiff::models::detect_wan_vae(index, kPrefix);
    if (cfg.ok()) {
        m.cfg = *cfg;
    } else {
        m.error = cfg.status().message();
    }
    return m;
}

// Runs chunk graphs on the CPU backend (optionally on the CPU kernels); counts the runs.
ggdiff::models::WanGraphRun chunk_runner(const TinyVae& m, bool kernels, int* runs = nullptr,
                                         bool f16 = false, bool circular = false) {
    const auto* weights = &m.weights;
    return [weights, kernels, runs, f16, circular](const ggdiff::models::WanGraphBuild& build) {
        if (runs) ++*runs;
        std::vector<const HostTensor*> hosts;
        auto make = [&](ggml_context* ctx, ggdiff::nn::Weights* w,
                        const std::vector<ggml_tensor*>& ins) {
            ggdiff::KernelChoices choices;
            choices.circular_x = choices.circular_y = circular;
            ggdiff::KernelChoiceScope scope(ctx, choices);
            ggdiff::nn::Ctx c{ctx, w};
            size_t next = 0;
            return build(c, [&](const HostTensor& t) -> ggml_tensor* {
                if (ins.empty()) {
                    hosts.push_back(&t);
                    int64_t d[4] = {t.dim(0), t.dim(1), t.dim(2), t.dim(3)};
                    return ggml_new_tensor(ctx, GGML_TYPE_F32, 4, d);
                }
                return ins[next++];
            });
        };
        {
            // A dry build learns the inputs the graph declares.
            ggml_init_params p = {ggml_tensor_overhead() * 40000, nullptr, true};
            ggml_context* ctx = ggml_init(p);
            vae_test::HostWeights w(*weights, f16);
            make(ctx, &w, {});
            ggml_free(ctx);
        }
        return vae_test::run_graph_multi(*weights, hosts, make, kernels, f16);
    };
}

Result<std::vector<float>> run_wan_reference(const TinyVae& m, const std::string& name,
                                             const HostTensor& input, const char* mode,
                                             size_t count, bool circular = false) {
    return vae_test::run_reference_script(
        fs::path(GGDIFF_TEST_TMP) / name, m.weights, input,
        std::string("{\"mode\": \"") + mode + "\", \"prefix\": \"" + kPrefix +
            "\", \"circular\": " + (circular ? "true" : "false") + "}",
        count, "wan_vae_reference.py");
}

double tolerance() {
    return ggdiff::cpu::kernels_available() ? kTolKernels : kTolGgml;
}

class WanVideo : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(m_.error, "");
        ASSERT_EQ(m_.shapes.size(), 194u);
        cfg_ = &m_.cfg;
    }
    const TinyVae& m_ = tiny_vae("wan_vae_tiny.tensors", 30);
    const WanVaeConfig* cfg_ = nullptr;
    ggdiff::models::WanGraphRun runner(bool kernels, int* runs = nullptr) {
        return chunk_runner(m_, kernels, runs);
    }
    Result<std::vector<float>> reference(const std::string& name, const HostTensor& input,
                                         const char* mode, size_t count) {
        return run_wan_reference(m_, name, input, mode, count);
    }
};

#define REQUIRE_PYTHON()                                                                   \
    do {                                                                                   \
        if (!vae_test::python_numpy_available()) GTEST_SKIP() << "python3 + numpy needed"; \
    } while (0)

TEST(WanVideoFrames, Counts) {
    EXPECT_EQ(ggdiff::models::wan_video_frames(1), 1);
    EXPECT_EQ(ggdiff::models::wan_video_frames(2), 5);
    EXPECT_EQ(ggdiff::models::wan_video_frames(21), 81);
    EXPECT_EQ(ggdiff::models::wan_video_frames(0), 0);
    EXPECT_EQ(ggdiff::models::wan_latent_frames(1), 1);
    EXPECT_EQ(ggdiff::models::wan_latent_frames(9), 3);
    EXPECT_EQ(ggdiff::models::wan_latent_frames(81), 21);
    EXPECT_EQ(ggdiff::models::wan_latent_frames(6), 0);
    EXPECT_EQ(ggdiff::models::wan_latent_frames(0), 0);
}

TEST_F(WanVideo, DetectsTemporalResamplers) {
    std::vector<std::string> up, down;
    for (const auto& b : cfg_->decoder) {
        if (b.temporal) up.push_back(b.prefix);
    }
    for (const auto& b : cfg_->encoder) {
        if (b.temporal) down.push_back(b.prefix);
    }
    EXPECT_EQ(up, (std::vector<std::string>{kPrefix + "decoder.upsamples.3.",
                                            kPrefix + "decoder.upsamples.7."}));
    EXPECT_EQ(down, (std::vector<std::string>{kPrefix + "encoder.downsamples.5.",
                                              kPrefix + "encoder.downsamples.8."}));
    EXPECT_EQ(cfg_->downscale(), 8);
}

class WanVideoDecode : public WanVideo, public ::testing::WithParamInterface<int> {};

TEST_P(WanVideoDecode, MatchesReference) {
    REQUIRE_PYTHON();
    const int t = GetParam();
    // Non-square; VAE-space latent frames along dim 3.
    const HostTensor z = vae_test::random_tensor({4, 3, 16, t}, 40 + t);
    int runs = 0;
    auto got = ggdiff::models::wan_decode_video(*cfg_, z, runner(true, &runs));
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(runs, t);  // one graph per latent frame
    EXPECT_EQ(got->ne, (std::vector<int64_t>{32, 24, 3, ggdiff::models::wan_video_frames(t)}));
    auto ref = reference("wan_decode_t" + std::to_string(t), z, "decode", got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const vae_test::Diff d = vae_test::compare(got->data, *ref);
    const double tol = tolerance();
    EXPECT_LT(d.rel(), tol) << "max abs " << d.max_abs << " of " << d.max_ref;
    EXPECT_GT(d.max_ref, 0.1);

    // The frames differ (the temporal layers act): the last frame is not the first.
    if (t > 1) {
        const int64_t per = 32 * 24 * 3;
        double diff = 0;
        for (int64_t i = 0; i < per; ++i) {
            diff = std::max(diff, static_cast<double>(std::fabs(
                                      got->data[i] - got->data[got->data.size() - per + i])));
        }
        EXPECT_GT(diff, 1e-2);
    }
}

INSTANTIATE_TEST_SUITE_P(LatentFrames, WanVideoDecode, ::testing::Values(1, 2, 3));

// The same on plain ggml ops (concat, pad, views: what a GPU backend runs).
TEST_F(WanVideo, DecodeOnGgmlOpsMatchesReference) {
    REQUIRE_PYTHON();
    const HostTensor z = vae_test::random_tensor({3, 4, 16, 3}, 50);
    auto got = ggdiff::models::wan_decode_video(*cfg_, z, runner(false));
    ASSERT_TRUE(got.ok()) << got.status().message();
    auto ref = reference("wan_decode_ggml", z, "decode", got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const vae_test::Diff d = vae_test::compare(got->data, *ref);
    EXPECT_LT(d.rel(), kTolGgml) << "max abs " << d.max_abs << " of " << d.max_ref;
}

// F16 kernels (as checkpoints store them; the temporal taps are views of them).
TEST_F(WanVideo, DecodeF16WeightsMatchesReference) {
    REQUIRE_PYTHON();
    const HostTensor z = vae_test::random_tensor({4, 4, 16, 2}, 51);
    auto got = ggdiff::models::wan_decode_video(*cfg_, z, chunk_runner(m_, true, nullptr, true));
    ASSERT_TRUE(got.ok()) << got.status().message();
    auto ref = reference("wan_decode_f16", z, "decode", got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const vae_test::Diff d = vae_test::compare(got->data, *ref);
    EXPECT_LT(d.rel(), kTolF16) << "max abs " << d.max_abs << " of " << d.max_ref;
}

// Seamless tiling on both axes: space wraps, and the causal padding in front of a chunk wraps
// around its frames in time (as the reference engine pads a 3-D convolution).
TEST_F(WanVideo, CircularMatchesReference) {
    REQUIRE_PYTHON();
    const HostTensor z = vae_test::random_tensor({4, 3, 16, 3}, 52);
    auto got =
        ggdiff::models::wan_decode_video(*cfg_, z, chunk_runner(m_, true, nullptr, false, true));
    ASSERT_TRUE(got.ok()) << got.status().message();
    auto ref = run_wan_reference(m_, "wan_decode_circ", z, "decode", got->data.size(), true);
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    vae_test::Diff d = vae_test::compare(got->data, *ref);
    EXPECT_LT(d.rel(), tolerance()) << "max abs " << d.max_abs << " of " << d.max_ref;
    // Not the zero-padded decode.
    auto plain = run_wan_reference(m_, "wan_decode_circ0", z, "decode", got->data.size());
    ASSERT_TRUE(plain.ok()) << plain.status().message();
    EXPECT_GT(vae_test::compare(got->data, *plain).max_abs, 1e-2);

    const HostTensor x = vae_test::random_tensor({32, 24, 3, 5}, 53, 0.5f);
    auto enc =
        ggdiff::models::wan_encode_video(*cfg_, x, chunk_runner(m_, true, nullptr, false, true));
    ASSERT_TRUE(enc.ok()) << enc.status().message();
    auto eref = run_wan_reference(m_, "wan_encode_circ", x, "encode", enc->data.size(), true);
    ASSERT_TRUE(eref.ok()) << eref.status().message();
    d = vae_test::compare(enc->data, *eref);
    EXPECT_LT(d.rel(), tolerance()) << "max abs " << d.max_abs << " of " << d.max_ref;
}

class WanVideoEncode : public WanVideo, public ::testing::WithParamInterface<int> {};

TEST_P(WanVideoEncode, MatchesReference) {
    REQUIRE_PYTHON();
    const int frames = GetParam();
    const HostTensor x = vae_test::random_tensor({32, 24, 3, frames}, 60 + frames, 0.5f);
    int runs = 0;
    auto got = ggdiff::models::wan_encode_video(*cfg_, x, runner(true, &runs));
    ASSERT_TRUE(got.ok()) << got.status().message();
    const int t = ggdiff::models::wan_latent_frames(frames);
    EXPECT_EQ(runs, t);  // frame 0, then 4 frames per graph
    EXPECT_EQ(got->ne, (std::vector<int64_t>{4, 3, 16, t}));
    auto ref = reference("wan_encode_f" + std::to_string(frames), x, "encode", got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const vae_test::Diff d = vae_test::compare(got->data, *ref);
    const double tol = tolerance();
    EXPECT_LT(d.rel(), tol) << "max abs " << d.max_abs << " of " << d.max_ref;
    EXPECT_GT(d.max_ref, 0.1);
}

INSTANTIATE_TEST_SUITE_P(VideoFrames, WanVideoEncode, ::testing::Values(1, 5, 9));

TEST_F(WanVideo, EncodeRejectsFrameCounts) {
    const HostTensor x = vae_test::random_tensor({32, 24, 3, 6}, 70);
    auto got = ggdiff::models::wan_encode_video(*cfg_, x, runner(true));
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.status().message().find("1 + 4 n frames"), std::string::npos);
}

// The single-frame (image) graphs are unchanged: one frame through build_wan_decode /
// build_wan_encode is the causal network on a one-frame video.
TEST_F(WanVideo, SingleFrameGraphsMatchReference) {
    REQUIRE_PYTHON();
    const HostTensor z = vae_test::random_tensor({4, 3, 16, 1}, 80);
    auto dec = vae_test::run_graph_multi(
        m_.weights, {&z},
        [&](ggml_context* ctx, ggdiff::nn::Weights* w, const std::vector<ggml_tensor*>& in) {
            ggdiff::nn::Ctx c{ctx, w};
            return std::vector<ggml_tensor*>{ggdiff::models::build_wan_decode(c, *cfg_, in[0])};
        },
        true);
    ASSERT_TRUE(dec.ok()) << dec.status().message();
    auto ref = reference("wan_image_decode", z, "decode", (*dec)[0].data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const double tol = tolerance();
    const vae_test::Diff d = vae_test::compare((*dec)[0].data, *ref);
    EXPECT_LT(d.rel(), tol) << "max abs " << d.max_abs << " of " << d.max_ref;

    const HostTensor x = vae_test::random_tensor({32, 24, 3, 1}, 81, 0.5f);
    auto enc = vae_test::run_graph_multi(
        m_.weights, {&x},
        [&](ggml_context* ctx, ggdiff::nn::Weights* w, const std::vector<ggml_tensor*>& in) {
            ggdiff::nn::Ctx c{ctx, w};
            return std::vector<ggml_tensor*>{ggdiff::models::build_wan_encode(c, *cfg_, in[0])};
        },
        true);
    ASSERT_TRUE(enc.ok()) << enc.status().message();
    auto eref = reference("wan_image_encode", x, "encode", (*enc)[0].data.size());
    ASSERT_TRUE(eref.ok()) << eref.status().message();
    const vae_test::Diff e = vae_test::compare((*enc)[0].data, *eref);
    EXPECT_LT(e.rel(), tol) << "max abs " << e.max_abs << " of " << e.max_ref;
}

// A Wan VAE stored with 2-D kernels (the last temporal tap; no time_conv): a video decodes
// frame by frame, each later frame repeated 4 times; encoding reads every 4th frame.
TEST_F(WanVideo, FlatVaeDecodesFramesAlone) {
    std::map<std::string, vae_test::HostWeight> flat;
    vae_test::Shapes shapes;
    for (const auto& [name, w] : m_.weights) {
        if (name.find("time_conv") != std::string::npos) continue;
        vae_test::HostWeight f = w;
        if (w.shape.size() == 5) {
            const int64_t o = w.shape[0], i = w.shape[1], kt = w.shape[2];
            const int64_t area = w.shape[3] * w.shape[4];
            f.shape = {o, i, w.shape[3], w.shape[4]};
            f.data.assign(static_cast<size_t>(o * i * area), 0.0f);
            for (int64_t r = 0; r < o * i; ++r) {
                std::copy_n(w.data.begin() + (r * kt + kt - 1) * area, area,
                            f.data.begin() + r * area);
            }
        }
        shapes.push_back({name, f.shape});
        flat[name] = std::move(f);
    }
    ggdiff::TensorIndex index;
    ASSERT_TRUE(index.add(write_safetensors("wan_vae_flat.safetensors", shapes).string()).ok());
    auto cfg = ggdiff::models::detect_wan_vae(index, kPrefix);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_TRUE(cfg->flat);
    EXPECT_FALSE(cfg_->flat);
    TinyVae fm;
    fm.weights = flat;
    fm.cfg = *cfg;

    const HostTensor z = vae_test::random_tensor({4, 3, 16, 2}, 130);
    auto got = ggdiff::models::wan_decode_video(fm.cfg, z, chunk_runner(fm, true));
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ(got->ne, (std::vector<int64_t>{32, 24, 3, 5}));
    // Each latent frame through the single-frame graph of the 3-D weights.
    const int64_t per = 32 * 24 * 3;
    for (int64_t t = 0; t < 2; ++t) {
        HostTensor zt({4, 3, 16, 1});
        std::copy_n(z.data.begin() + t * zt.numel(), zt.numel(), zt.data.begin());
        auto one = vae_test::run_graph_multi(
            m_.weights, {&zt},
            [&](ggml_context* ctx, ggdiff::nn::Weights* w, const std::vector<ggml_tensor*>& in) {
                ggdiff::nn::Ctx c{ctx, w};
                return std::vector<ggml_tensor*>{ggdiff::models::build_wan_decode(c, *cfg_, in[0])};
            },
            true);
        ASSERT_TRUE(one.ok()) << one.status().message();
        for (int64_t f = (t == 0 ? 0 : 1); f < (t == 0 ? 1 : 5); ++f) {
            const std::vector<float> frame(got->data.begin() + f * per,
                                           got->data.begin() + (f + 1) * per);
            const vae_test::Diff d = vae_test::compare(frame, (*one)[0].data);
            EXPECT_LT(d.rel(), 1e-5) << "frame " << f;
        }
    }

    // Encode 5 frames: frames 0 and 1 alone.
    const HostTensor x = vae_test::random_tensor({32, 24, 3, 5}, 131, 0.5f);
    auto enc = ggdiff::models::wan_encode_video(fm.cfg, x, chunk_runner(fm, true));
    ASSERT_TRUE(enc.ok()) << enc.status().message();
    ASSERT_EQ(enc->ne, (std::vector<int64_t>{4, 3, 16, 2}));
    for (int64_t t = 0; t < 2; ++t) {
        HostTensor xt({32, 24, 3, 1});
        std::copy_n(x.data.begin() + t * xt.numel(), xt.numel(), xt.data.begin());
        auto one = vae_test::run_graph_multi(
            m_.weights, {&xt},
            [&](ggml_context* ctx, ggdiff::nn::Weights* w, const std::vector<ggml_tensor*>& in) {
                ggdiff::nn::Ctx c{ctx, w};
                return std::vector<ggml_tensor*>{ggdiff::models::build_wan_encode(c, *cfg_, in[0])};
            },
            true);
        ASSERT_TRUE(one.ok()) << one.status().message();
        const int64_t n = 4 * 3 * 16;
        const std::vector<float> lat(enc->data.begin() + t * n, enc->data.begin() + (t + 1) * n);
        const vae_test::Diff d = vae_test::compare(lat, (*one)[0].data);
        EXPECT_LT(d.rel(), 1e-5) << "latent frame " << t;
    }
}

// --- Wan 2.2 (TI2V 5B layout) -------------------------------------------------------

class Wan22Video : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(m_.error, "");
        ASSERT_EQ(m_.shapes.size(), 196u);
    }
    const TinyVae& m_ = tiny_vae("wan22_vae_tiny.tensors", 31);
};

TEST_F(Wan22Video, Detects) {
    const WanVaeConfig& cfg = m_.cfg;
    EXPECT_TRUE(cfg.wan22());
    EXPECT_EQ(cfg.patch, 2);
    EXPECT_EQ(cfg.z_dim, 48);
    EXPECT_EQ(cfg.image_channels, 3);
    EXPECT_EQ(cfg.encoder_channels, 3);
    EXPECT_EQ(cfg.downscale(), 16);
    EXPECT_EQ(cfg.mean.size(), 48u);
    EXPECT_FLOAT_EQ(cfg.mean[0], -0.2289f);
    EXPECT_FLOAT_EQ(cfg.std[47], 0.7744f);
    ASSERT_EQ(cfg.decoder_groups.size(), 4u);
    ASSERT_EQ(cfg.encoder_groups.size(), 4u);
    // Decoder: x2 in time and space, x2 in time and space, x2 in space, no resampling.
    const int dec[4][3] = {{2, 2, 1}, {2, 2, 1}, {1, 2, 1}, {1, 1, 0}};
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(cfg.decoder_groups[i].factor_t, dec[i][0]) << i;
        EXPECT_EQ(cfg.decoder_groups[i].factor_s, dec[i][1]) << i;
        EXPECT_EQ(cfg.decoder_groups[i].shortcut, dec[i][2] == 1) << i;
        EXPECT_EQ(cfg.decoder_groups[i].count, i < 3 ? 4u : 3u) << i;
    }
    // Encoder: /2 in space, /2 in time and space (twice), none; every group has a shortcut.
    const int enc[4][2] = {{1, 2}, {2, 2}, {2, 2}, {1, 1}};
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(cfg.encoder_groups[i].factor_t, enc[i][0]) << i;
        EXPECT_EQ(cfg.encoder_groups[i].factor_s, enc[i][1]) << i;
        EXPECT_TRUE(cfg.encoder_groups[i].shortcut) << i;
    }
}

class Wan22VideoDecode : public Wan22Video, public ::testing::WithParamInterface<int> {};

TEST_P(Wan22VideoDecode, MatchesReference) {
    REQUIRE_PYTHON();
    const int t = GetParam();
    const HostTensor z = vae_test::random_tensor({3, 2, 48, t}, 90 + t);
    int runs = 0;
    auto got = ggdiff::models::wan_decode_video(m_.cfg, z, chunk_runner(m_, true, &runs));
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(runs, t);
    EXPECT_EQ(got->ne, (std::vector<int64_t>{48, 32, 3, ggdiff::models::wan_video_frames(t)}));
    auto ref =
        run_wan_reference(m_, "wan22_decode_t" + std::to_string(t), z, "decode", got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const vae_test::Diff d = vae_test::compare(got->data, *ref);
    EXPECT_LT(d.rel(), tolerance()) << "max abs " << d.max_abs << " of " << d.max_ref;
    EXPECT_GT(d.max_ref, 0.1);
}

INSTANTIATE_TEST_SUITE_P(LatentFrames, Wan22VideoDecode, ::testing::Values(1, 2, 3));

class Wan22VideoEncode : public Wan22Video, public ::testing::WithParamInterface<int> {};

TEST_P(Wan22VideoEncode, MatchesReference) {
    REQUIRE_PYTHON();
    const int frames = GetParam();
    const HostTensor x = vae_test::random_tensor({48, 32, 3, frames}, 100 + frames, 0.5f);
    auto got = ggdiff::models::wan_encode_video(m_.cfg, x, chunk_runner(m_, true));
    ASSERT_TRUE(got.ok()) << got.status().message();
    const int t = ggdiff::models::wan_latent_frames(frames);
    EXPECT_EQ(got->ne, (std::vector<int64_t>{3, 2, 48, t}));
    auto ref = run_wan_reference(m_, "wan22_encode_f" + std::to_string(frames), x, "encode",
                                 got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const vae_test::Diff d = vae_test::compare(got->data, *ref);
    EXPECT_LT(d.rel(), tolerance()) << "max abs " << d.max_abs << " of " << d.max_ref;
    EXPECT_GT(d.max_ref, 0.1);
}

INSTANTIATE_TEST_SUITE_P(VideoFrames, Wan22VideoEncode, ::testing::Values(1, 5, 9));

TEST_F(Wan22Video, EncodeRejectsHalfPatches) {
    const HostTensor x = vae_test::random_tensor({33, 32, 3, 1}, 112);
    auto got = ggdiff::models::wan_encode_video(m_.cfg, x, chunk_runner(m_, true));
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.status().message().find("2x2 patches"), std::string::npos)
        << got.status().message();
}

// On plain ggml ops, and through the single-frame (image) builders.
TEST_F(Wan22Video, GgmlOpsAndImageGraphsMatchReference) {
    REQUIRE_PYTHON();
    const HostTensor z = vae_test::random_tensor({2, 3, 48, 2}, 110);
    auto got = ggdiff::models::wan_decode_video(m_.cfg, z, chunk_runner(m_, false));
    ASSERT_TRUE(got.ok()) << got.status().message();
    auto ref = run_wan_reference(m_, "wan22_decode_ggml", z, "decode", got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    vae_test::Diff d = vae_test::compare(got->data, *ref);
    EXPECT_LT(d.rel(), kTolGgml) << "max abs " << d.max_abs << " of " << d.max_ref;

    const HostTensor x = vae_test::random_tensor({32, 48, 3, 1}, 111, 0.5f);
    auto enc = vae_test::run_graph_multi(
        m_.weights, {&x},
        [&](ggml_context* ctx, ggdiff::nn::Weights* w, const std::vector<ggml_tensor*>& in) {
            ggdiff::nn::Ctx c{ctx, w};
            return std::vector<ggml_tensor*>{ggdiff::models::build_wan_encode(c, m_.cfg, in[0])};
        },
        true);
    ASSERT_TRUE(enc.ok()) << enc.status().message();
    EXPECT_EQ((*enc)[0].ne, (std::vector<int64_t>{2, 3, 48, 1}));
    auto eref = run_wan_reference(m_, "wan22_image_encode", x, "encode", (*enc)[0].data.size());
    ASSERT_TRUE(eref.ok()) << eref.status().message();
    d = vae_test::compare((*enc)[0].data, *eref);
    EXPECT_LT(d.rel(), tolerance()) << "max abs " << d.max_abs << " of " << d.max_ref;
}

// --- the family part ---------------------------------------------------------------

// WanAutoencoder on a checkpoint file: diffusion-space latents with channel c of frame t in
// plane c * T + t; as a video VAE the planes are one video, as an image VAE each frame is
// decoded alone.
TEST_F(WanVideo, AutoencoderVideoAndImageModes) {
    REQUIRE_PYTHON();
    ggdiff::TensorIndex index;
    ASSERT_TRUE(index.add(write_weights("wan_vae_tiny_f32.safetensors", m_.weights).string()).ok());
    ggdiff::ModelOptions options;
    ggdiff::EnginePlacement placement;
    const ggdiff::FamilyContext ctx{options, index, placement, -1, 2, "", nullptr};
    auto video = ggdiff::WanAutoencoder::create(ctx, placement.vae, *cfg_, true);
    ASSERT_TRUE(video.ok()) << video.status().message();
    auto image = ggdiff::WanAutoencoder::create(ctx, placement.vae, *cfg_, false);
    ASSERT_TRUE(image.ok()) << image.status().message();

    const int64_t t = 2, plane = 4 * 3;
    const HostTensor latent = vae_test::random_tensor({4, 3, 16 * t, 1}, 120);
    // The same latent in VAE space, frames along dim 3.
    HostTensor z({4, 3, 16, t});
    for (int64_t f = 0; f < t; ++f) {
        for (int64_t c = 0; c < 16; ++c) {
            for (int64_t i = 0; i < plane; ++i) {
                z.data[(f * 16 + c) * plane + i] =
                    latent.data[(c * t + f) * plane + i] * cfg_->std[c] + cfg_->mean[c];
            }
        }
    }
    auto got = (*video)->decode(latent);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->ne, (std::vector<int64_t>{32, 24, 3, 5}));
    auto ref = reference("wan_part_video", z, "decode", got->data.size());
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    vae_test::Diff d = vae_test::compare(got->data, *ref);
    EXPECT_LT(d.rel(), tolerance()) << "max abs " << d.max_abs << " of " << d.max_ref;

    // Image mode: frame 1 decoded alone is the one-frame video of latent frame 1.
    auto frames = (*image)->decode(latent);
    ASSERT_TRUE(frames.ok()) << frames.status().message();
    EXPECT_EQ(frames->ne, (std::vector<int64_t>{32, 24, 3, 2}));
    HostTensor z1({4, 3, 16, 1});
    std::copy(z.data.begin() + 16 * plane, z.data.end(), z1.data.begin());
    auto ref1 = reference("wan_part_image", z1, "decode", frames->data.size() / 2);
    ASSERT_TRUE(ref1.ok()) << ref1.status().message();
    const std::vector<float> second(frames->data.begin() + frames->data.size() / 2,
                                    frames->data.end());
    d = vae_test::compare(second, *ref1);
    EXPECT_LT(d.rel(), tolerance()) << "max abs " << d.max_abs << " of " << d.max_ref;

    // Encode a 5-frame video: 2 latent frames, back in diffusion space and plane layout.
    const HostTensor x = vae_test::random_tensor({32, 24, 3, 5}, 121, 0.5f);
    auto rng = ggdiff::sampling::make_rng(ggdiff::sampling::RngKind::Cpu, 1);
    auto enc = (*video)->encode(x, *rng);
    ASSERT_TRUE(enc.ok()) << enc.status().message();
    EXPECT_EQ(enc->ne, (std::vector<int64_t>{4, 3, 32, 1}));
    auto eref = reference("wan_part_encode", x, "encode", enc->data.size());
    ASSERT_TRUE(eref.ok()) << eref.status().message();
    std::vector<float> want(eref->size());
    for (int64_t f = 0; f < 2; ++f) {
        for (int64_t c = 0; c < 16; ++c) {
            for (int64_t i = 0; i < plane; ++i) {
                want[(c * 2 + f) * plane + i] =
                    ((*eref)[(f * 16 + c) * plane + i] - cfg_->mean[c]) / cfg_->std[c];
            }
        }
    }
    d = vae_test::compare(enc->data, want);
    EXPECT_LT(d.rel(), tolerance()) << "max abs " << d.max_abs << " of " << d.max_ref;
    // A video of 6 frames is no Wan video.
    const HostTensor bad = vae_test::random_tensor({32, 24, 3, 6}, 122);
    EXPECT_FALSE((*video)->encode(bad, *rng).ok());
}

// Decodes `latent` and encodes `video` with the VAE of each index (and with `image_too`, also
// decodes with the VAE built for single images); both indexes must give the same numbers.
void expect_same_outputs(const ggdiff::TensorIndex& a, const ggdiff::TensorIndex& b,
                         const ggdiff::models::WanVaeConfig& cfg, const HostTensor& latent,
                         const HostTensor& video, bool image_too) {
    ggdiff::ModelOptions options;
    ggdiff::EnginePlacement placement;
    std::vector<std::vector<float>> outputs[2];
    for (int k = 0; k < 2; ++k) {
        const ggdiff::FamilyContext ctx{options, k == 0 ? a : b, placement, -1, 2, "", nullptr};
        for (bool as_video : {true, false}) {
            if (!as_video && !image_too) continue;
            auto vae = ggdiff::WanAutoencoder::create(ctx, placement.vae, cfg, as_video);
            ASSERT_TRUE(vae.ok()) << vae.status().message();
            auto got = (*vae)->decode(latent);
            ASSERT_TRUE(got.ok()) << got.status().message();
            outputs[k].push_back(got->data);
            if (!as_video) continue;
            auto rng = ggdiff::sampling::make_rng(ggdiff::sampling::RngKind::Cpu, 1);
            auto enc = (*vae)->encode(video, *rng);
            ASSERT_TRUE(enc.ok()) << enc.status().message();
            outputs[k].push_back(enc->data);
        }
    }
    ASSERT_EQ(outputs[0].size(), image_too ? 3u : 2u);
    for (size_t i = 0; i < outputs[0].size(); ++i) {
        ASSERT_FALSE(outputs[0][i].empty());
        EXPECT_EQ(outputs[0][i], outputs[1][i]) << "output " << i;
    }
}

// The same VAE stored in diffusers AutoencoderKLWan names (a WanPipeline's
// vae/diffusion_pytorch_model.safetensors, given as --vae) indexes to the same tensors, is
// read as the same network and decodes (video and image) and encodes the same, exactly.
TEST_F(WanVideo, DiffusersNamesLoadTheSameVae) {
    std::map<std::string, vae_test::HostWeight> renamed;
    for (const auto& [name, w] : m_.weights)
        renamed[wan_vae_test::to_diffusers(name.substr(kPrefix.size()))] = w;
    ASSERT_EQ(renamed.size(), m_.weights.size());
    ASSERT_TRUE(renamed.count("decoder.up_blocks.1.resnets.0.conv_shortcut.weight"));
    ggdiff::TensorIndex original, diffusers;
    ASSERT_TRUE(
        original.add(write_weights("wan_vae_tiny_f32.safetensors", m_.weights).string()).ok());
    const ggdiff::Status st =
        diffusers.add(write_weights("wan_vae_tiny_diffusers.safetensors", renamed).string(),
                      ggdiff::prefix_for_role("vae"));
    ASSERT_TRUE(st.ok()) << st.message();

    ASSERT_EQ(diffusers.size(), original.size());
    for (const ggdiff::TensorInfo& t : original.tensors()) {
        const ggdiff::TensorInfo* d = diffusers.find(t.name);
        ASSERT_NE(d, nullptr) << t.name;
        EXPECT_EQ(d->shape, t.shape) << t.name;
        std::vector<float> a, b;
        ASSERT_TRUE(original.read_f32(t, a).ok());
        ASSERT_TRUE(diffusers.read_f32(*d, b).ok());
        EXPECT_EQ(a, b) << t.name;
    }
    ASSERT_TRUE(ggdiff::models::is_wan_vae(diffusers, kPrefix));
    auto cfg = ggdiff::models::detect_wan_vae(diffusers, kPrefix);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    ASSERT_EQ(cfg->decoder.size(), cfg_->decoder.size());
    ASSERT_EQ(cfg->encoder.size(), cfg_->encoder.size());
    for (size_t i = 0; i < cfg->decoder.size(); ++i) {
        EXPECT_EQ(cfg->decoder[i].prefix, cfg_->decoder[i].prefix);
        EXPECT_EQ(cfg->decoder[i].temporal, cfg_->decoder[i].temporal) << i;
        EXPECT_EQ(cfg->decoder[i].shortcut, cfg_->decoder[i].shortcut) << i;
    }
    EXPECT_EQ(cfg->taps, cfg_->taps);
    EXPECT_TRUE(cfg->has_encoder);

    expect_same_outputs(original, diffusers, *cfg, vae_test::random_tensor({4, 3, 16 * 2, 1}, 130),
                        vae_test::random_tensor({32, 24, 3, 5}, 131, 0.5f), true);
}

// The Wan 2.2 VAE in diffusers AutoencoderKLWan names (is_residual: down_blocks.N.resnets.M,
// .downsampler, up_blocks.N.upsampler; a Wan2.2-TI2V-5B-Diffusers vae/ folder) indexes to the
// same tensors, is read as the same groups, and decodes and encodes the same, exactly.
TEST_F(Wan22Video, DiffusersNamesLoadTheSameVae) {
    std::map<std::string, vae_test::HostWeight> renamed;
    for (const auto& [name, w] : m_.weights)
        renamed[wan_vae_test::to_diffusers22(name.substr(kPrefix.size()))] = w;
    ASSERT_EQ(renamed.size(), m_.weights.size());
    ASSERT_TRUE(renamed.count("decoder.up_blocks.0.upsampler.time_conv.weight"));
    ASSERT_TRUE(renamed.count("encoder.down_blocks.2.downsampler.resample.1.weight"));
    ggdiff::TensorIndex original, diffusers;
    ASSERT_TRUE(
        original.add(write_weights("wan22_vae_tiny_f32.safetensors", m_.weights).string()).ok());
    const ggdiff::Status st =
        diffusers.add(write_weights("wan22_vae_tiny_diffusers.safetensors", renamed).string(),
                      ggdiff::prefix_for_role("vae"));
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(diffusers.size(), original.size());
    for (const ggdiff::TensorInfo& t : original.tensors()) {
        const ggdiff::TensorInfo* d = diffusers.find(t.name);
        ASSERT_NE(d, nullptr) << t.name;
        EXPECT_EQ(d->shape, t.shape) << t.name;
    }
    ASSERT_TRUE(ggdiff::models::is_wan_vae(diffusers, kPrefix));
    auto cfg = ggdiff::models::detect_wan_vae(diffusers, kPrefix);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_TRUE(cfg->wan22());
    ASSERT_EQ(cfg->decoder_groups.size(), m_.cfg.decoder_groups.size());
    ASSERT_EQ(cfg->encoder_groups.size(), m_.cfg.encoder_groups.size());
    for (size_t i = 0; i < cfg->decoder_groups.size(); ++i) {
        EXPECT_EQ(cfg->decoder_groups[i].count, m_.cfg.decoder_groups[i].count) << i;
        EXPECT_EQ(cfg->decoder_groups[i].factor_t, m_.cfg.decoder_groups[i].factor_t) << i;
        EXPECT_EQ(cfg->encoder_groups[i].factor_s, m_.cfg.encoder_groups[i].factor_s) << i;
    }
    EXPECT_EQ(cfg->taps, m_.cfg.taps);

    expect_same_outputs(original, diffusers, *cfg, vae_test::random_tensor({3, 2, 48 * 2, 1}, 140),
                        vae_test::random_tensor({48, 32, 3, 5}, 141, 0.5f), false);
}

}  // namespace
