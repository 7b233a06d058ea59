// The ggml UNet against an independent numpy forward (tests/tools/unet_reference.py) on
// deterministic random weights: a tiny SD1-style net, an SD2-style net (linear
// projections, 64-wide heads, depth-2 transformers, one context for a batch of two) and
// the real SD1 layout at model_channels 32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../support/scratch.h"
#include "unet_test_support.h"

namespace ggdiff::unet_test {
namespace {

using models::UNetConfig;
namespace fs = std::filesystem;

const char* kPython = "/usr/bin/python3";
const std::string kPrefix = "model.diffusion_model.";

bool have_numpy() {
    const std::string cmd = std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
}

std::string list(const std::vector<int>& v) {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
    os << "]";
    return os.str();
}

void write_config(const std::string& path, const UNetConfig& cfg) {
    std::ofstream f(path);
    f << "{\"prefix\":\"" << kPrefix << "\",\"model_channels\":" << cfg.model_channels
      << ",\"channel_mult\":" << list(cfg.channel_mult)
      << ",\"num_res_blocks\":" << cfg.num_res_blocks
      << ",\"transformer_depth\":" << list(cfg.transformer_depth)
      << ",\"middle_depth\":" << cfg.middle_depth << ",\"num_heads\":" << cfg.num_heads
      << ",\"head_dim\":" << cfg.head_dim << "}\n";
}

std::vector<float> read_floats(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    std::vector<float> out(static_cast<size_t>(f.tellg()) / sizeof(float));
    f.seekg(0);
    f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size() * 4));
    return out;
}

struct Case {
    std::string name;
    UNetConfig cfg;
    int64_t batch, latent, tokens, context_batch;
    int64_t latent_h = 0;  // 0: square (latent x latent); else a latent x latent_h latent
};

// Runs both implementations and compares element-wise against the output's scale.
void compare_with_reference(const Case& k) {
    if (!have_numpy()) GTEST_SKIP() << kPython << " with numpy is not available";
    const fs::path dir = scratch::fresh((fs::path(GGDIFF_TEST_TMP) / k.name).string());

    TensorMap tensors = random_weights(unet_layout(k.cfg, kPrefix), 1234);
    UNetInputs in;
    const int64_t lw = k.latent, lh = k.latent_h > 0 ? k.latent_h : k.latent;
    in.x = random_tensor({k.batch, k.cfg.in_channels, lh, lw}, 7);
    in.timesteps = Tensor{{k.batch}, {}};
    for (int64_t i = 0; i < k.batch; ++i) in.timesteps.data.push_back(i == 0 ? 999.0f : 261.5f);
    in.context = random_tensor({k.context_batch, k.tokens, k.cfg.context_dim}, 8);

    TensorMap file = tensors;
    file["x"] = in.x;
    file["timesteps"] = in.timesteps;
    file["context"] = in.context;
    const std::string weights = (dir / "weights.safetensors").string();
    const std::string config = (dir / "config.json").string();
    const std::string out = (dir / "reference.f32").string();
    ASSERT_TRUE(write_safetensors(weights, file).ok());
    write_config(config, k.cfg);
    const std::string cmd = std::string(kPython) +
                            " " GGDIFF_SOURCE_DIR "/tests/tools/unet_reference.py " + weights +
                            " " + config + " " + out;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const std::vector<float> ref = read_floats(out);

    int nodes = 0;
    auto got = run_unet(k.cfg, tensors, in, kPrefix, &nodes);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ(got->ne, (std::vector<int64_t>{lw, lh, k.cfg.out_channels, k.batch}));
    ASSERT_EQ(ref.size(), got->data.size());
    {  // kept next to the reference output for looking into a failure
        std::ofstream f(dir / "ggml.f32", std::ios::binary);
        f.write(reinterpret_cast<const char*>(got->data.data()),
                static_cast<std::streamsize>(got->data.size() * sizeof(float)));
    }

    // ggml_conv_2d runs every convolution through an f16 im2col (and so an f16 kernel),
    // as sd.cpp does with f16 checkpoints; that rounding, compounded over ~15-40 convs,
    // leaves ~1.5e-3 (max) and ~3e-4 (mean) of the output scale against the float64
    // reference. A wrong layer, order or constant moves results by 1e-2..1 of scale.
    double scale = 0.0, worst = 0.0, mean = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double d = std::fabs(static_cast<double>(ref[i]) - got->data[i]);
        scale = std::max(scale, std::fabs(static_cast<double>(ref[i])));
        worst = std::max(worst, d);
        mean += d / static_cast<double>(ref.size());
    }
    ASSERT_GT(scale, 0.0);
    std::printf("[ %s ] %d nodes, max |ref| %.4g, error max %.3g mean %.3g of scale\n",
                k.name.c_str(), nodes, scale, worst / scale, mean / scale);
    EXPECT_LE(worst, 4e-3 * scale);
    EXPECT_LE(mean, 6e-4 * scale);
}

TEST(UNetReference, TinySd1Style) {
    UNetConfig cfg;
    cfg.model_channels = 32;
    cfg.time_embed_dim = 128;
    cfg.channel_mult = {1, 2};
    cfg.num_res_blocks = 1;
    cfg.transformer_depth = {1, 0};
    cfg.middle_depth = 1;
    cfg.context_dim = 64;
    cfg.num_heads = 8;
    cfg.head_dim = -1;
    compare_with_reference({"tiny_sd1", cfg, 2, 8, 5, 2});
}

TEST(UNetReference, Sd2StyleLinearProjBroadcastContext) {
    UNetConfig cfg;
    cfg.model_channels = 64;
    cfg.time_embed_dim = 256;
    cfg.channel_mult = {1, 2};
    cfg.num_res_blocks = 2;
    cfg.transformer_depth = {0, 2};
    cfg.middle_depth = 1;
    cfg.context_dim = 96;
    cfg.num_heads = -1;
    cfg.head_dim = 64;
    cfg.linear_proj = true;
    cfg.out_channels = 8;
    compare_with_reference({"sd2_style", cfg, 2, 8, 7, 1});
}

TEST(UNetReference, Sd1LayoutModelChannels32) {
    UNetConfig cfg;  // the defaults are SD1's, but for the width
    cfg.model_channels = 32;
    cfg.time_embed_dim = 128;
    compare_with_reference({"sd1_mc32", cfg, 1, 16, 77, 1});
}

// A latent whose sides are not divisible by the UNet's down factor (8 for SD1's four
// levels): 9 -> 5 -> 3 -> 2 and 17 -> 9 -> 5 -> 3 on the way down, so each upsampling
// resizes to its skip connection's size instead of doubling (e.g. 72x136 pixels).
TEST(UNetReference, Sd1LayoutOddLatentSize) {
    UNetConfig cfg;
    cfg.model_channels = 32;
    cfg.time_embed_dim = 128;
    Case k{"sd1_mc32_odd", cfg, 1, 9, 77, 1};
    k.latent_h = 17;
    compare_with_reference(k);
}

}  // namespace
}  // namespace ggdiff::unet_test
