// The Qwen2.5-VL vision tower (Qwen Image Edit's reference images): the smart-resize sizes
// worked out by hand from the rule, the CLIP preprocessing, sizes detected from the shared edit
// fixture and errors that name the tensor, the window layout (edge windows smaller, every
// merge unit once), and a small random tower (16 heads, 3 blocks, one of them full attention)
// on a non-square image whose patch grid does not divide into whole windows, against an
// independent float64 numpy forward (tests/tools/qwen_vision_reference.py); the split q/k/v and
// split patch-embedding layouts give the same rows, and the encoder part runs the same graph.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "../io/io_test_util.h"
#include "models/te/qwen_vision.h"
#include "pipeline/options.h"
#include "pipeline/parts/qwen_vision_encoder.h"
#include "pipeline/placement_setup.h"
#include "runtime/module_runner.h"

namespace ggdiff::models {
namespace {

namespace fs = std::filesystem;
using testing::FakeTensor;

const std::string kRole = "text_encoders.llm.";
constexpr int64_t kWidth = 320, kMlp = 64, kOut = 96, kLayers = 3;

TEST(QwenVisionSize, SmartResizeByHand) {
    const QwenVisionConfig cfg;
    // 64x64: round(64/28) = 2 -> 56x56 < 384^2; beta = sqrt(384^2 / 64^2) = 6,
    // ceil(64 * 6 / 28) = ceil(13.71) = 14 -> 392.
    EXPECT_EQ(qwen_vision_size(64, 64, cfg), std::make_pair(392, 392));
    // 96 wide, 64 high: 84x56 < 384^2; beta = sqrt(147456 / 6144) = 4.899; width
    // ceil(96 * 4.899 / 28) = ceil(16.80) = 17 -> 476, height ceil(11.20) = 12 -> 336.
    EXPECT_EQ(qwen_vision_size(96, 64, cfg), std::make_pair(476, 336));
    // 2000x1000: 1988x1008 > 560^2; beta = sqrt(2e6 / 313600) = 2.5254; width
    // floor(2000 / 2.5254 / 28) = floor(28.28) = 28 -> 784, height floor(14.14) = 14 -> 392.
    EXPECT_EQ(qwen_vision_size(2000, 1000, cfg), std::make_pair(784, 392));
    // 10x10: round(10/28) = 0 -> area 0; beta = 38.4, ceil(10 * 38.4 / 28) = 14 -> 392.
    EXPECT_EQ(qwen_vision_size(10, 10, cfg), std::make_pair(392, 392));
    // Already in range: only rounded to multiples of 28 (500 / 28 = 17.86 -> 18 -> 504,
    // 420 / 28 = 15).
    EXPECT_EQ(qwen_vision_size(500, 420, cfg), std::make_pair(504, 420));
}

TEST(QwenVisionPreprocess, NearestCoverCropAndClipNormalization) {
    // 3x2 RGB into 6x6: scale max(2, 3) = 3 -> 9x6, crop columns 1..6; source column
    // floor((x + 1) * 3 / 9), row floor(y * 2 / 6).
    Image img;
    img.width = 3;
    img.height = 2;
    img.channels = 3;
    for (int i = 0; i < 18; ++i) img.pixels.push_back(static_cast<uint8_t>(i * 14));
    const HostTensor t = clip_preprocess(img, 6, 6);
    ASSERT_EQ(t.ne, (std::vector<int64_t>{6, 6, 3}));
    const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
    const float stdv[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    for (int c = 0; c < 3; ++c) {
        for (int y = 0; y < 6; ++y) {
            for (int x = 0; x < 6; ++x) {
                const int sx = (x + 1) * 3 / 9, sy = y * 2 / 6;
                const float v = img.pixels[(sy * 3 + sx) * 3 + c] / 255.0f;
                EXPECT_FLOAT_EQ(t.data[(c * 6 + y) * 6 + x], (v - mean[c]) / stdv[c]);
            }
        }
    }
    // Grey becomes RGB.
    Image grey;
    grey.width = grey.height = 2;
    grey.channels = 1;
    grey.pixels = {0, 255, 255, 0};
    const HostTensor g = clip_preprocess(grey, 2, 2);
    EXPECT_FLOAT_EQ(g.data[1], (1.0f - mean[0]) / stdv[0]);
    EXPECT_FLOAT_EQ(g.data[4 + 1], (1.0f - mean[1]) / stdv[1]);
}

// Windows of 4x4 merge units: a 7x5 merge grid has one full window, a 3x4 one on the right,
// a 4x1 one at the bottom and the 3x1 corner; every merge unit appears once.
TEST(QwenVisionInputs, WindowsCoverTheGridOnce) {
    const QwenVisionConfig cfg;
    auto in = qwen_vision_inputs(cfg, HostTensor({7 * 28, 5 * 28, 3}));
    ASSERT_TRUE(in.ok()) << in.status().message();
    EXPECT_EQ(in->grid_w, 14);
    EXPECT_EQ(in->grid_h, 10);
    EXPECT_EQ(in->outputs(), 35);
    ASSERT_EQ(in->windows.size(), 4u);
    const int64_t want[4][3] = {{0, 1, 64}, {64, 1, 48}, {112, 1, 16}, {128, 1, 12}};
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(in->windows[i].first, want[i][0]) << i;
        EXPECT_EQ(in->windows[i].count, want[i][1]) << i;
        EXPECT_EQ(in->windows[i].patches, want[i][2]) << i;
    }
    std::set<int32_t> seen(in->window_index.begin(), in->window_index.end());
    EXPECT_EQ(seen.size(), 35u);
    for (size_t i = 0; i < in->window_index.size(); ++i) {
        EXPECT_EQ(in->inverse_index[static_cast<size_t>(in->window_index[i])],
                  static_cast<int32_t>(i));
    }
    EXPECT_EQ(in->window_index[16], 4);  // first unit of the right-edge window: row 0, column 4
    EXPECT_EQ(in->cos.ne, (std::vector<int64_t>{40, 1, 140}));
    // Token 64 (window 2, unit (0, 4), patch row 0, column 8): pair 20 (the first column
    // pair) turns by 8 radians, pair 0 (the first row pair) by 0.
    EXPECT_NEAR(in->cos.data[64 * 40 + 20], std::cos(8.0), 1e-5);
    EXPECT_NEAR(in->sin.data[64 * 40 + 0], 0.0, 1e-7);

    EXPECT_FALSE(qwen_vision_inputs(cfg, HostTensor({30, 28, 3})).ok());
    EXPECT_FALSE(qwen_vision_inputs(cfg, HostTensor({28, 28, 4})).ok());
}

// ---------------------------------------------------------------------------------------------
// A small tower: width 320 (16 heads of 20), MLP 64, output 96, 3 blocks.

struct TinySpec {
    bool split_qkv = false;
    bool split_patch = false;
    std::string drop;                                     // a tensor left out (fused names)
    std::map<std::string, std::vector<int64_t>> reshape;  // tensors given another shape
};

using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

Shapes tower_shapes() {
    const int64_t w = kWidth, wide = 4 * kWidth;
    Shapes t = {{"patch_embed.proj.weight", {w, 3, 2, 14, 14}}};
    for (int i = 0; i < kLayers; ++i) {
        const std::string b = "blocks." + std::to_string(i) + ".";
        t.push_back({b + "norm1.weight", {w}});
        t.push_back({b + "norm2.weight", {w}});
        t.push_back({b + "attn.qkv.weight", {3 * w, w}});
        t.push_back({b + "attn.qkv.bias", {3 * w}});
        t.push_back({b + "attn.proj.weight", {w, w}});
        t.push_back({b + "attn.proj.bias", {w}});
        t.push_back({b + "mlp.gate_proj.weight", {kMlp, w}});
        t.push_back({b + "mlp.gate_proj.bias", {kMlp}});
        t.push_back({b + "mlp.up_proj.weight", {kMlp, w}});
        t.push_back({b + "mlp.up_proj.bias", {kMlp}});
        t.push_back({b + "mlp.down_proj.weight", {w, kMlp}});
        t.push_back({b + "mlp.down_proj.bias", {w}});
    }
    t.push_back({"merger.ln_q.weight", {w}});
    t.push_back({"merger.mlp.0.weight", {wide, wide}});
    t.push_back({"merger.mlp.0.bias", {wide}});
    t.push_back({"merger.mlp.2.weight", {kOut, wide}});
    t.push_back({"merger.mlp.2.bias", {kOut}});
    return t;
}

// Norm weights near 1, matrices scaled by 1/sqrt(inputs), biases small; by name, so that
// the fused and split files hold the same values.
std::vector<float> values(const std::string& name, const std::vector<int64_t>& shape) {
    uint32_t seed = 11;
    for (char ch : name) seed = seed * 31u + static_cast<uint8_t>(ch);
    std::vector<float> v = testing::pattern(testing::numel(shape), seed);
    const bool norm =
        name.find("norm") != std::string::npos || name.find("ln_q") != std::string::npos;
    const bool bias = name.find(".bias") != std::string::npos;
    const double in = static_cast<double>(testing::numel(shape) / shape[0]);
    for (float& x : v) {
        x = norm ? 1.0f + 0.2f * x : bias ? 0.1f * x : static_cast<float>(x * 1.7 / std::sqrt(in));
    }
    return v;
}

std::string write_tower(const std::string& path, const TinySpec& s) {
    std::vector<FakeTensor> out;
    auto add = [&](const std::string& n, std::vector<int64_t> sh, std::vector<float> v) {
        out.push_back({"visual." + n, "F32", std::move(sh), testing::to_bytes(v)});
    };
    for (auto [name, shape] : tower_shapes()) {
        if (name == s.drop) continue;
        std::vector<float> v = values(name, shape);
        if (auto it = s.reshape.find(name); it != s.reshape.end()) {
            add(name, it->second, std::vector<float>(testing::numel(it->second), 0.1f));
            continue;
        }
        const size_t dot = name.rfind("attn.qkv.");
        if (s.split_qkv && dot != std::string::npos) {
            const std::string b = name.substr(0, dot) + "attn.";
            const std::string kind = name.substr(dot + 9);  // weight / bias
            const size_t part = v.size() / 3;
            const char* names[3] = {"q_proj.", "k_proj.", "v_proj."};
            for (int j = 0; j < 3; ++j) {
                std::vector<int64_t> sh = shape;
                sh[0] /= 3;
                add(b + names[j] + kind, sh,
                    std::vector<float>(v.begin() + j * part, v.begin() + (j + 1) * part));
            }
            continue;
        }
        if (s.split_patch && name == "patch_embed.proj.weight") {
            // [w, 3, 2, 14, 14] -> one [w, 3, 14, 14] kernel per time step.
            for (int t = 0; t < 2; ++t) {
                std::vector<float> k;
                for (int64_t o = 0; o < kWidth * 3; ++o) {
                    const auto first = v.begin() + (o * 2 + t) * 196;
                    k.insert(k.end(), first, first + 196);
                }
                add("patch_embed.proj." + std::to_string(t) + ".weight", {kWidth, 3, 14, 14}, k);
            }
            continue;
        }
        add(name, shape, v);
    }
    testing::write_safetensors(path, out);
    return path;
}

const char* kPython = "/usr/bin/python3";

bool have_numpy() {
    return std::system((std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0;
}

class QwenVision : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = testing::test_dir(std::string("qwen_vision_") +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }
    TensorIndex open(const std::string& path) {
        TensorIndex index;
        Status st = index.add(path, kRole);
        EXPECT_TRUE(st.ok()) << st.message();
        return index;
    }
    std::string error_of(const TinySpec& s, const std::string& tag) {
        const TensorIndex index = open(write_tower(dir_ + "/" + tag + ".safetensors", s));
        auto cfg = detect_qwen_vision(index, kRole);
        EXPECT_FALSE(cfg.ok()) << tag;
        return cfg.ok() ? "" : cfg.status().message();
    }
    std::string dir_;
};

HostTensor run_tower(const TensorIndex& index, const QwenVisionConfig& cfg,
                     const HostTensor& pixels) {
    auto in = qwen_vision_inputs(cfg, pixels);
    EXPECT_TRUE(in.ok()) << in.status().message();
    if (!in.ok()) return {};
    ModuleDevices where;
    ModuleRunner m(index, -1, where, 2, "vision");
    auto build = [&](GraphBuilder& gb) {
        const int64_t u = in->outputs();
        return std::vector<ggml_tensor*>{build_qwen_vision(
            gb.nn(), cfg, *in, gb.input(in->patches), gb.input_i32(in->window_index, {u}),
            gb.input_i32(in->inverse_index, {u}), gb.input(in->cos), gb.input(in->sin))};
    };
    Status st = m.prepare(build);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok()) return {};
    auto out = m.run(build);
    EXPECT_TRUE(out.ok()) << out.status().message();
    return out.ok() ? (*out)[0] : HostTensor{};
}

double max_abs_diff(const HostTensor& a, const HostTensor& b) {
    double m = a.data.size() == b.data.size() ? 0.0 : 1e30;
    for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) {
        m = std::max(m, static_cast<double>(std::fabs(a.data[i] - b.data[i])));
    }
    return m;
}

HostTensor image_pixels(int64_t w, int64_t h) {
    HostTensor t({w, h, 3});
    const std::vector<float> v = testing::pattern(t.numel(), 5);
    for (size_t i = 0; i < v.size(); ++i) t.data[i] = 1.8f * v[i];
    return t;
}

TEST_F(QwenVision, DetectsTheSharedEditFixture) {
    // The tower of ../shared/fixtures/qwen_edit_tiny_llm.tensors, as a file of the right
    // names, dtypes and shapes whose data is a hole (only sizes are read).
    std::ifstream list(GGDIFF_SHARED_DIR "/fixtures/qwen_edit_tiny_llm.tensors");
    ASSERT_TRUE(list.good());
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    uint64_t off = 0;
    std::string line;
    while (std::getline(list, line)) {
        if (line.rfind("visual.", 0) != 0) continue;
        std::istringstream ls(line);
        std::string name, dims;
        ls >> name >> dims;
        std::vector<int64_t> shape;
        std::stringstream ds(dims);
        for (std::string d; std::getline(ds, d, ',');) shape.push_back(std::stoll(d));
        const uint64_t bytes = 2 * static_cast<uint64_t>(testing::numel(shape));
        h[name] = {{"dtype", "F16"}, {"shape", shape}, {"data_offsets", {off, off + bytes}}};
        off += bytes;
    }
    const std::string path = dir_ + "/edit_visual.safetensors";
    testing::write_bytes(path, testing::safetensors_file(h.dump(), ""));
    fs::resize_file(path, fs::file_size(path) + off);
    const TensorIndex index = open(path);
    ASSERT_TRUE(has_qwen_vision(index, kRole));
    EXPECT_FALSE(has_qwen_vision(index, "text_encoders.t5xxl."));
    auto cfg = detect_qwen_vision(index, kRole);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->prefix, kRole + "visual.");
    EXPECT_EQ(cfg->layers, 8);
    EXPECT_EQ(cfg->mlp, 256);
    EXPECT_EQ(cfg->out_dim, 3584);
    EXPECT_EQ(cfg->width, 1280);
    EXPECT_EQ(cfg->heads, 16);
    EXPECT_FALSE(cfg->split_qkv);
    EXPECT_FALSE(cfg->split_patch_embed);
    EXPECT_TRUE(cfg->full_attention(7));
    EXPECT_FALSE(cfg->full_attention(6));
    // The tower's own prefix finds it too.
    auto again = detect_qwen_vision(index, kRole + "visual.");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->prefix, cfg->prefix);
}

TEST_F(QwenVision, DetectsLayoutsAndNamesBadTensors) {
    TinySpec split;
    split.split_qkv = split.split_patch = true;
    const TensorIndex index = open(write_tower(dir_ + "/split.safetensors", split));
    auto cfg = detect_qwen_vision(index, kRole);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_TRUE(cfg->split_qkv);
    EXPECT_TRUE(cfg->split_patch_embed);
    EXPECT_EQ(cfg->width, kWidth);
    EXPECT_EQ(cfg->layers, kLayers);
    EXPECT_EQ(cfg->mlp, kMlp);
    EXPECT_EQ(cfg->out_dim, kOut);

    const std::string v = kRole + "visual.";
    TinySpec s;
    s.drop = "blocks.1.mlp.up_proj.bias";
    EXPECT_NE(error_of(s, "no_up_bias").find("missing tensor " + v + s.drop), std::string::npos);
    s = {};
    s.drop = "merger.ln_q.weight";
    EXPECT_NE(error_of(s, "no_ln_q").find(v + s.drop), std::string::npos);
    s = {};
    s.drop = "patch_embed.proj.weight";
    EXPECT_NE(error_of(s, "no_patch").find(v + s.drop), std::string::npos);
    s = {};
    s.reshape["blocks.2.attn.qkv.weight"] = {3 * kWidth, kWidth + 1};
    const std::string e = error_of(s, "bad_qkv");
    EXPECT_NE(e.find(v + "blocks.2.attn.qkv.weight"), std::string::npos) << e;
    EXPECT_NE(e.find("[960, 320]"), std::string::npos) << e;
    s = {};
    s.reshape["patch_embed.proj.weight"] = {kWidth, 3, 2, 16, 16};
    EXPECT_NE(error_of(s, "bad_patch").find(v + "patch_embed.proj.weight"), std::string::npos);

    TensorIndex none;
    auto missing = detect_qwen_vision(none, kRole);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.status().message().find(v + "patch_embed.proj.weight"), std::string::npos);
}

// 196x140 pixels: 14x10 patches, 7x5 merge units, so the right and bottom windows are cut.
TEST_F(QwenVision, TowerMatchesNumpy) {
    if (!have_numpy()) GTEST_SKIP() << kPython << " with numpy is not available";
    const std::string file = write_tower(dir_ + "/tower.safetensors", {});
    const TensorIndex index = open(file);
    auto cfg = detect_qwen_vision(index, kRole);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    cfg->full_attention_blocks = {1};
    const HostTensor pixels = image_pixels(196, 140);
    const HostTensor got = run_tower(index, *cfg, pixels);
    ASSERT_EQ(got.ne, (std::vector<int64_t>{kOut, 35}));

    const fs::path dir = dir_;
    {
        std::ofstream f(dir / "pixels.f32", std::ios::binary);
        f.write(reinterpret_cast<const char*>(pixels.data.data()),
                static_cast<std::streamsize>(pixels.data.size() * 4));
    }
    const std::string cmd = std::string(kPython) +
                            " " GGDIFF_SOURCE_DIR "/tests/tools/qwen_vision_reference.py " + file +
                            " visual. " + (dir / "pixels.f32").string() + " 196 140 1 " +
                            (dir / "ref.f32").string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream rf(dir / "ref.f32", std::ios::binary | std::ios::ate);
    std::vector<float> want(static_cast<size_t>(rf.tellg()) / 4);
    rf.seekg(0);
    rf.read(reinterpret_cast<char*>(want.data()), static_cast<std::streamsize>(want.size() * 4));
    ASSERT_EQ(want.size(), got.data.size());
    double scale = 0, worst = 0, mean = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const double d = std::fabs(double(want[i]) - got.data[i]);
        scale = std::max(scale, std::fabs(double(want[i])));
        worst = std::max(worst, d);
        mean += d / double(want.size());
    }
    ASSERT_GT(scale, 0.1);
    std::printf("[ vision ] max |ref| %.4g, error max %.3g mean %.3g of scale\n", scale,
                worst / scale, mean / scale);
    // The error is ggml_gelu's (the reference's GELU): on the CPU it reads an f16 table
    // (about 3e-4 max, 7e-5 mean of scale here; an exact tanh GELU gives under 1e-6).
    EXPECT_LE(worst, 1e-3 * scale);
    EXPECT_LE(mean, 1e-4 * scale);

    // Windowed attention matters: all blocks full attention gives other rows.
    QwenVisionConfig all_full = *cfg;
    all_full.full_attention_blocks = {0, 1, 2};
    EXPECT_GT(max_abs_diff(got, run_tower(index, all_full, pixels)), 1e-3 * scale);
}

TEST_F(QwenVision, SplitLayoutsGiveTheSameRows) {
    TinySpec split;
    split.split_qkv = split.split_patch = true;
    const TensorIndex fused = open(write_tower(dir_ + "/fused.safetensors", {}));
    const TensorIndex apart = open(write_tower(dir_ + "/split.safetensors", split));
    auto cf = detect_qwen_vision(fused, kRole);
    auto cs = detect_qwen_vision(apart, kRole);
    ASSERT_TRUE(cf.ok() && cs.ok());
    const HostTensor pixels = image_pixels(140, 84);
    const HostTensor a = run_tower(fused, *cf, pixels);
    const HostTensor b = run_tower(apart, *cs, pixels);
    ASSERT_EQ(a.ne, (std::vector<int64_t>{kOut, 15}));
    EXPECT_LT(max_abs_diff(a, b), 1e-4);
}

TEST_F(QwenVision, EncoderResizesAndRunsTheTower) {
    const TensorIndex index = open(write_tower(dir_ + "/tower.safetensors", {}));
    auto cfg = detect_qwen_vision(index, kRole);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    ModelOptions options;
    EnginePlacement placement;
    const FamilyContext ctx{options, index, placement, -1, 2, "", nullptr};
    auto enc = QwenVisionEncoder::create(ctx, placement.te, *cfg);
    ASSERT_TRUE(enc.ok()) << enc.status().message();
    Image img;
    img.width = 96;
    img.height = 64;
    img.channels = 4;
    const std::vector<float> v = testing::pattern(96 * 64 * 4, 9);
    for (float x : v) img.pixels.push_back(static_cast<uint8_t>((x + 1.0f) * 127.5f));
    auto got = (*enc)->encode(img);
    ASSERT_TRUE(got.ok()) << got.status().message();
    // 96x64 -> 476x336: 17x12 merge units.
    ASSERT_EQ(got->ne, (std::vector<int64_t>{kOut, 204, 1}));
    const HostTensor want = run_tower(index, *cfg, clip_preprocess(img, 476, 336));
    EXPECT_LT(max_abs_diff(*got, want), 1e-5);
    (*enc)->end_phase();

    Image bad;
    bad.width = 4;
    bad.height = 4;
    bad.channels = 3;  // no pixels
    EXPECT_FALSE((*enc)->encode(bad).ok());
}

}  // namespace
}  // namespace ggdiff::models
