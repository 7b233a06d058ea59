// The CLIP vision tower (--clip_vision, Wan image-to-video): sizes and activation detected from
// the weights (ViT-H/14's from a header-only file of the real shapes), errors that name the
// missing or mis-shaped tensor and a truncated file, small random towers of both activations
// (quick GELU at width 128, exact GELU at width 1024) through ClipVisionEncoder against an
// independent float64 numpy forward (tests/tools/clip_vision_reference.py), the open_clip and
// HF names giving the same hidden states, --type q8_0 weights, the placement the encoder gets,
// and the families refusing the file they do not read.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../io/io_test_util.h"
#include "families/registry.h"
#include "models/te/clip_vision.h"
#include "pipeline/options.h"
#include "pipeline/parts/clip_vision_encoder.h"
#include "pipeline/parts/qwen_vision_encoder.h"
#include "pipeline/placement_setup.h"
#include "runtime/module_runner.h"

namespace ggdiff::models {
namespace {

namespace fs = std::filesystem;
using testing::FakeTensor;

const std::string kRole = "clip_vision.";
const std::string kTower = "clip_vision.vision_model.";
constexpr int64_t kPatch = 14, kGrid = 16, kPositions = kGrid * kGrid + 1;

// The tower's shape: width, layers, MLP width (patch 14 on 224x224, 257 positions).
struct TinySpec {
    int64_t width = 128;
    int64_t layers = 2;
    int64_t mlp = 96;
    enum class Names { Hf, HfPreLayernorm, OpenClip, OpenClipModel } names = Names::Hf;
    std::string drop;                                     // an HF name left out
    std::map<std::string, std::vector<int64_t>> reshape;  // HF names given another shape
};

using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// HF names (after "vision_model.", but "visual_projection.weight") and torch shapes.
Shapes tower_shapes(const TinySpec& s) {
    const int64_t w = s.width;
    Shapes t = {{"embeddings.patch_embedding.weight", {w, 3, kPatch, kPatch}},
                {"embeddings.class_embedding", {w}},
                {"embeddings.position_embedding.weight", {kPositions, w}},
                {"pre_layrnorm.weight", {w}},
                {"pre_layrnorm.bias", {w}}};
    for (int64_t i = 0; i < s.layers; ++i) {
        const std::string b = "encoder.layers." + std::to_string(i) + ".";
        for (const char* n : {"layer_norm1.", "layer_norm2."}) {
            t.push_back({b + n + "weight", {w}});
            t.push_back({b + n + "bias", {w}});
        }
        for (const char* p : {"q_proj.", "k_proj.", "v_proj.", "out_proj."}) {
            t.push_back({b + "self_attn." + p + "weight", {w, w}});
            t.push_back({b + "self_attn." + p + "bias", {w}});
        }
        t.push_back({b + "mlp.fc1.weight", {s.mlp, w}});
        t.push_back({b + "mlp.fc1.bias", {s.mlp}});
        t.push_back({b + "mlp.fc2.weight", {w, s.mlp}});
        t.push_back({b + "mlp.fc2.bias", {w}});
    }
    t.push_back({"post_layernorm.weight", {w}});
    t.push_back({"post_layernorm.bias", {w}});
    t.push_back({"visual_projection.weight", {64, w}});
    return t;
}

// Norm weights near 1, matrices scaled by 1/sqrt(inputs), biases small; by name, so that
// every naming holds the same values.
std::vector<float> values(const std::string& name, const std::vector<int64_t>& shape) {
    uint32_t seed = 7;
    for (char ch : name) seed = seed * 31u + static_cast<uint8_t>(ch);
    std::vector<float> v = testing::pattern(testing::numel(shape), seed);
    const bool norm = name.find("norm") != std::string::npos;
    const bool bias = name.find(".bias") != std::string::npos;
    const bool table = name.find("embeddings.") == 0 && shape.size() < 4;
    const double in = static_cast<double>(testing::numel(shape) / shape[0]);
    for (float& x : v) {
        x = norm    ? 1.0f + 0.2f * x
            : bias  ? 0.1f * x
            : table ? 0.5f * x
                    : static_cast<float>(x * 1.7 / std::sqrt(in));
    }
    return v;
}

// open_clip's name for an HF name ("" for the q/k/v parts of the fused in_proj).
std::string openclip_name(const std::string& hf) {
    static const std::pair<const char*, const char*> kFixed[] = {
        {"embeddings.patch_embedding.weight", "conv1.weight"},
        {"embeddings.class_embedding", "class_embedding"},
        {"embeddings.position_embedding.weight", "positional_embedding"},
        {"pre_layrnorm.", "ln_pre."},
        {"post_layernorm.", "ln_post."},
        {"layer_norm1.", "ln_1."},
        {"layer_norm2.", "ln_2."},
        {"self_attn.out_proj.", "attn.out_proj."},
        {"mlp.fc1.", "mlp.c_fc."},
        {"mlp.fc2.", "mlp.c_proj."},
        {"encoder.layers.", "transformer.resblocks."},
    };
    if (hf.find("_proj.") != std::string::npos && hf.find("out_proj") == std::string::npos)
        return "";
    std::string n = hf;
    for (const auto& [from, to] : kFixed) {
        const size_t at = n.find(from);
        if (at != std::string::npos) n.replace(at, std::string(from).size(), to);
    }
    return "visual." + n;
}

std::string write_tower(const std::string& path, const TinySpec& s) {
    std::vector<FakeTensor> out;
    const bool open_clip =
        s.names == TinySpec::Names::OpenClip || s.names == TinySpec::Names::OpenClipModel;
    const std::string wrap = s.names == TinySpec::Names::OpenClipModel ? "model." : "";
    auto add = [&](const std::string& n, std::vector<int64_t> sh, const std::vector<float>& v) {
        out.push_back({wrap + n, "F32", std::move(sh), testing::to_bytes(v)});
    };
    for (auto [name, shape] : tower_shapes(s)) {
        if (name == s.drop) continue;
        std::vector<float> v = values(name, shape);
        if (auto it = s.reshape.find(name); it != s.reshape.end()) {
            shape = it->second;
            v.assign(static_cast<size_t>(testing::numel(shape)), 0.1f);
        }
        if (name == "visual_projection.weight") {
            // open_clip's projection is the transpose, under another name; HF's is beside
            // the tower.
            add(open_clip ? "visual.proj" : name, {shape[1], shape[0]}, v);
            continue;
        }
        if (!open_clip) {
            std::string n = name;
            if (s.names == TinySpec::Names::HfPreLayernorm && n.rfind("pre_layrnorm", 0) == 0) {
                n.replace(0, 12, "pre_layernorm");
            }
            add("vision_model." + n, shape, v);
            continue;
        }
        const std::string oc = openclip_name(name);
        if (!oc.empty()) {
            add(oc, shape, v);
            continue;
        }
        // q/k/v: one fused in_proj, written once at the q part with all three.
        const size_t at = name.find("self_attn.q_proj.");
        if (at == std::string::npos) continue;
        const std::string kind = name.substr(at + 17);  // weight / bias
        std::vector<float> fused;
        for (const char* p : {"q_proj.", "k_proj.", "v_proj."}) {
            const std::string part = name.substr(0, at) + "self_attn." + p + kind;
            const std::vector<float> pv = values(part, shape);
            fused.insert(fused.end(), pv.begin(), pv.end());
        }
        std::vector<int64_t> sh = shape;
        sh[0] *= 3;
        add("visual.transformer.resblocks." + name.substr(15, name.find('.', 15) - 15) +
                ".attn.in_proj_" + kind,
            sh, fused);
    }
    if (open_clip) {
        // The text tower of a whole open_clip model is left alone.
        add("transformer.resblocks.0.ln_1.weight", {s.width}, values("text", {s.width}));
        add("token_embedding.weight", {10, s.width}, values("tok", {10, s.width}));
    }
    testing::write_safetensors(path, out);
    return path;
}

const char* kPython = "/usr/bin/python3";

bool have_numpy() {
    return std::system((std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0;
}

Image test_image(int w, int h, uint32_t seed) {
    Image img;
    img.width = w;
    img.height = h;
    img.channels = 3;
    for (float x : testing::pattern(int64_t{w} * h * 3, seed)) {
        img.pixels.push_back(static_cast<uint8_t>((x + 1.0f) * 127.5f));
    }
    return img;
}

double max_abs_diff(const HostTensor& a, const HostTensor& b) {
    double m = a.data.size() == b.data.size() ? 0.0 : 1e30;
    for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) {
        m = std::max(m, static_cast<double>(std::fabs(a.data[i] - b.data[i])));
    }
    return m;
}

class ClipVision : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = testing::test_dir(std::string("clip_vision_") +
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
        auto cfg = detect_clip_vision(index, kRole);
        EXPECT_FALSE(cfg.ok()) << tag;
        return cfg.ok() ? "" : cfg.status().message();
    }
    // The encoder on the CPU (null when it cannot be made).
    std::unique_ptr<ClipVisionEncoder> make_encoder(const TensorIndex& index,
                                                    const ClipVisionConfig& cfg,
                                                    int weight_type = -1) {
        ModelOptions options;
        EnginePlacement placement;
        const FamilyContext ctx{options, index, placement, weight_type, 2, "", nullptr};
        auto enc = ClipVisionEncoder::create(ctx, placement.clip_vision, cfg);
        EXPECT_TRUE(enc.ok()) << enc.status().message();
        return enc.ok() ? std::move(*enc) : nullptr;
    }
    // The encoder's output for `img`.
    HostTensor encode(const TensorIndex& index, const ClipVisionConfig& cfg, const Image& img) {
        auto enc = make_encoder(index, cfg);
        if (!enc) return {};
        auto out = enc->encode(img);
        EXPECT_TRUE(out.ok()) << out.status().message();
        enc->end_phase();
        return out.ok() ? *out : HostTensor{};
    }
    // tests/tools/clip_vision_reference.py's hidden states for `img`. Quick GELU as the CPU
    // computes it (ggml_gelu_quick reads an f16 table: 2e-3 off the exact function here, where
    // everything else agrees within 1e-5).
    std::vector<float> numpy_forward(const std::string& file, const Image& img, int64_t heads,
                                     bool quick) {
        const fs::path dir = dir_;
        {
            std::ofstream f(dir / "image.u8", std::ios::binary);
            f.write(reinterpret_cast<const char*>(img.pixels.data()),
                    static_cast<std::streamsize>(img.pixels.size()));
        }
        const std::string cmd =
            std::string(kPython) + " " GGDIFF_SOURCE_DIR "/tests/tools/clip_vision_reference.py " +
            file + " vision_model. " + (dir / "image.u8").string() + " " +
            std::to_string(img.width) + " " + std::to_string(img.height) + " " +
            std::to_string(heads) + (quick ? " quick_f16 " : " erf ") + (dir / "ref.f32").string();
        EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
        std::ifstream rf(dir / "ref.f32", std::ios::binary | std::ios::ate);
        if (!rf) return {};
        std::vector<float> want(static_cast<size_t>(rf.tellg()) / 4);
        rf.seekg(0);
        rf.read(reinterpret_cast<char*>(want.data()),
                static_cast<std::streamsize>(want.size() * 4));
        return want;
    }
    // Runs the tower of `s` through the encoder on a 300x200 image and compares it with numpy.
    void matches_numpy(const TinySpec& s, int64_t heads, bool quick) {
        const std::string file = write_tower(dir_ + "/tower.safetensors", s);
        const TensorIndex index = open(file);
        auto cfg = detect_clip_vision(index, kRole);
        ASSERT_TRUE(cfg.ok()) << cfg.status().message();
        ASSERT_EQ(cfg->heads, heads);
        ASSERT_EQ(cfg->quick_gelu, quick);
        const Image img = test_image(300, 200, 3);
        const HostTensor got = encode(index, *cfg, img);
        ASSERT_EQ(got.ne, (std::vector<int64_t>{s.width, kPositions, 1}));
        const std::vector<float> want = numpy_forward(file, img, heads, quick);
        ASSERT_EQ(want.size(), got.data.size());
        double scale = 0, worst = 0, mean = 0;
        for (size_t i = 0; i < want.size(); ++i) {
            const double d = std::fabs(double(want[i]) - got.data[i]);
            scale = std::max(scale, std::fabs(double(want[i])));
            worst = std::max(worst, d);
            mean += d / double(want.size());
        }
        ASSERT_GT(scale, 0.1);
        std::printf("[ clip vision ] width %lld: max |ref| %.4g, error max %.3g mean %.3g\n",
                    static_cast<long long>(s.width), scale, worst, mean);
        // A rare f16 table boundary that float64 and float32 round differently costs up to
        // 1e-3 at one element (quick GELU; which element depends on the CPU's kernels: 6e-4
        // with one, 1.04e-3 with ggml's zen4 kernels); typical errors are 1e-6, and the mean
        // below stays tight.
        EXPECT_LE(worst, 2e-4 * std::max(1.0, scale));
        EXPECT_LE(mean, 1e-5 * std::max(1.0, scale));

        // The other activation gives other states: the test tells them apart.
        ClipVisionConfig other = *cfg;
        other.quick_gelu = !quick;
        EXPECT_GT(max_abs_diff(got, encode(index, other, img)), 1e-3);
    }
    std::string dir_;
};

TEST_F(ClipVision, DetectsSizesAndActivationFromTheWeights) {
    const TensorIndex index = open(write_tower(dir_ + "/tiny.safetensors", {}));
    ASSERT_TRUE(has_clip_vision(index, kRole));
    EXPECT_FALSE(has_clip_vision(index, "text_encoders.clip_l."));
    auto cfg = detect_clip_vision(index, kRole);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->prefix, kTower);
    EXPECT_EQ(cfg->width, 128);
    EXPECT_EQ(cfg->heads, 2);
    EXPECT_EQ(cfg->layers, 2);
    EXPECT_EQ(cfg->intermediate, 96);
    EXPECT_EQ(cfg->patch, 14);
    EXPECT_EQ(cfg->image_size, 224);
    EXPECT_EQ(cfg->positions, 257);
    EXPECT_TRUE(cfg->quick_gelu);
    EXPECT_EQ(cfg->layer_prefixes().back(), kTower + "encoder.layers.1.");
    // The tower's own prefix finds it too.
    auto again = detect_clip_vision(index, kTower);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->prefix, kTower);
}

// ViT-H/14 as ComfyUI's clip_vision_h.safetensors has it (F16, real shapes), as a file whose
// data is a hole: only sizes are read.
TEST_F(ClipVision, DetectsVitH14) {
    TinySpec s;
    s.width = 1280;
    s.layers = 32;
    s.mlp = 5120;
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    uint64_t off = 0;
    for (auto [name, shape] : tower_shapes(s)) {
        const uint64_t bytes = 2 * static_cast<uint64_t>(testing::numel(shape));
        const std::string n = name == "visual_projection.weight" ? name : "vision_model." + name;
        h[n] = {{"dtype", "F16"}, {"shape", shape}, {"data_offsets", {off, off + bytes}}};
        off += bytes;
    }
    const std::string path = dir_ + "/clip_vision_h.safetensors";
    testing::write_bytes(path, testing::safetensors_file(h.dump(), ""));
    fs::resize_file(path, fs::file_size(path) + off);
    auto cfg = detect_clip_vision(open(path), kRole);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->width, 1280);
    EXPECT_EQ(cfg->heads, 16);
    EXPECT_EQ(cfg->layers, 32);
    EXPECT_EQ(cfg->intermediate, 5120);
    EXPECT_EQ(cfg->image_size, 224);
    EXPECT_EQ(cfg->positions, 257);
    EXPECT_FALSE(cfg->quick_gelu);
}

TEST_F(ClipVision, ErrorsNameTheBadTensor) {
    TinySpec s;
    s.drop = "encoder.layers.1.mlp.fc2.bias";
    EXPECT_EQ(error_of(s, "no_fc2_bias"), "CLIP vision: missing tensor " + kTower + s.drop);
    s = {};
    s.drop = "pre_layrnorm.weight";
    EXPECT_EQ(error_of(s, "no_pre_ln"), "CLIP vision: missing tensor " + kTower + s.drop);
    s = {};
    s.drop = "embeddings.class_embedding";
    EXPECT_EQ(error_of(s, "no_class"), "CLIP vision: missing tensor " + kTower + s.drop);
    s = {};
    s.reshape["encoder.layers.1.self_attn.k_proj.weight"] = {128, 130};
    EXPECT_EQ(error_of(s, "bad_k"), "CLIP vision: tensor " + kTower +
                                        "encoder.layers.1.self_attn.k_proj.weight has shape "
                                        "[128, 130], expected [128, 128]");
    s = {};
    s.reshape["embeddings.position_embedding.weight"] = {250, 128};
    std::string e = error_of(s, "bad_positions");
    EXPECT_NE(e.find(kTower + "embeddings.position_embedding.weight has shape [250, 128]"),
              std::string::npos)
        << e;
    s = {};
    s.reshape["embeddings.patch_embedding.weight"] = {128, 4, 14, 14};
    e = error_of(s, "bad_patch");
    EXPECT_NE(e.find(kTower + "embeddings.patch_embedding.weight has shape [128, 4, 14, 14]"),
              std::string::npos)
        << e;
    s = {};
    s.reshape["embeddings.patch_embedding.weight"] = {100, 3, 14, 14};
    e = error_of(s, "bad_width");
    EXPECT_NE(e.find("width 100 is not a CLIP vision width"), std::string::npos) << e;

    TensorIndex none;
    auto missing = detect_clip_vision(none, kRole);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().message(),
              "CLIP vision: missing tensor " + kTower + "embeddings.patch_embedding.weight");
}

TEST_F(ClipVision, TruncatedFileIsRefused) {
    const std::string path = write_tower(dir_ + "/whole.safetensors", {});
    fs::resize_file(path, fs::file_size(path) - 1000);
    TensorIndex index;
    const Status st = index.add(path, kRole);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("whole.safetensors"), std::string::npos) << st.message();
    std::printf("[ clip vision ] truncated: %s\n", st.message().c_str());
}

TEST_F(ClipVision, QuickGeluTowerMatchesNumpy) {
    if (!have_numpy()) GTEST_SKIP() << kPython << " with numpy is not available";
    matches_numpy({}, 2, true);
}

TEST_F(ClipVision, GeluTowerMatchesNumpy) {
    if (!have_numpy()) GTEST_SKIP() << kPython << " with numpy is not available";
    TinySpec s;
    s.width = 1024;  // exact GELU by width, as the reference engine chooses it
    s.layers = 1;
    s.mlp = 128;
    matches_numpy(s, 16, false);
}

TEST_F(ClipVision, OpenClipAndHfNamesGiveTheSameStates) {
    const Image img = test_image(160, 240, 4);
    HostTensor first;
    for (auto names : {TinySpec::Names::Hf, TinySpec::Names::HfPreLayernorm,
                       TinySpec::Names::OpenClip, TinySpec::Names::OpenClipModel}) {
        TinySpec s;
        s.names = names;
        const int tag = static_cast<int>(names);
        const TensorIndex index =
            open(write_tower(dir_ + "/names" + std::to_string(tag) + ".safetensors", s));
        auto cfg = detect_clip_vision(index, kRole);
        ASSERT_TRUE(cfg.ok()) << tag << ": " << cfg.status().message();
        EXPECT_EQ(cfg->layers, 2) << tag;
        if (names == TinySpec::Names::OpenClip || names == TinySpec::Names::OpenClipModel) {
            // The fused in_proj became three slices; the transposed projection and the text
            // tower keep their names.
            EXPECT_TRUE(index.has(kTower + "encoder.layers.1.self_attn.v_proj.bias")) << tag;
            EXPECT_TRUE(index.has(kTower + "post_layernorm.weight")) << tag;
            EXPECT_TRUE(index.has(kRole + "visual.proj")) << tag;
            EXPECT_TRUE(index.has(kRole + "transformer.resblocks.0.ln_1.weight")) << tag;
            EXPECT_FALSE(index.has(kRole + "visual_projection.weight")) << tag;
        }
        const HostTensor got = encode(index, *cfg, img);
        ASSERT_EQ(got.ne, (std::vector<int64_t>{128, kPositions, 1})) << tag;
        if (first.data.empty()) {
            first = got;
        } else {
            EXPECT_EQ(max_abs_diff(got, first), 0.0) << tag;
        }
    }
}

TEST_F(ClipVision, EncoderRefusesAnEmptyImage) {
    const TensorIndex index = open(write_tower(dir_ + "/tower.safetensors", {}));
    auto cfg = detect_clip_vision(index, kRole);
    ASSERT_TRUE(cfg.ok());
    auto enc = make_encoder(index, *cfg);
    ASSERT_TRUE(enc);
    Image bad;
    bad.width = 4;
    bad.height = 4;
    bad.channels = 3;  // no pixels
    EXPECT_FALSE(enc->encode(bad).ok());
    // A grey image becomes RGB.
    Image grey = test_image(50, 40, 5);
    grey.channels = 1;
    grey.pixels.resize(50 * 40);
    auto g = enc->encode(grey);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(g->ne, (std::vector<int64_t>{128, kPositions, 1}));
}

// --type q8_0: the matrices quantized, the class and position tables and the patch kernel
// kept in f16 (cast to f32 in the graph); the states stay close to the f32 ones.
TEST_F(ClipVision, QuantizedWeightsRun) {
    const TensorIndex index = open(write_tower(dir_ + "/tower.safetensors", {}));
    auto cfg = detect_clip_vision(index, kRole);
    ASSERT_TRUE(cfg.ok());
    const Image img = test_image(224, 224, 6);
    const HostTensor want = encode(index, *cfg, img);
    auto enc = make_encoder(index, *cfg, GGML_TYPE_Q8_0);
    ASSERT_TRUE(enc);
    auto got = enc->encode(img);
    ASSERT_TRUE(got.ok()) << got.status().message();
    double scale = 0;
    for (float v : want.data) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    const double d = max_abs_diff(*got, want);
    std::printf("[ clip vision ] q8_0: max |f32| %.4g, max diff %.3g\n", scale, d);
    EXPECT_GT(d, 0.0);
    EXPECT_LT(d, 0.05 * scale);
}

// The encoder runs where --backend puts clip_vision, else on the text encoders' first device.
TEST(ClipVisionPlacement, OwnEntryElseTheTextEncoders) {
    TensorIndex index;
    auto devices_of = [&](const std::string& backend, const std::string& params) {
        ModelOptions o;
        o.backend = backend;
        o.params_backend = params;
        auto r = resolve_placement(o, index, -1);
        EXPECT_TRUE(r.ok()) << r.status().message();
        return r.ok() ? r->front().clip_vision : ModuleDevices{};
    };
    ModuleDevices d = devices_of("", "");
    EXPECT_EQ(d.module, "clip_vision");
    EXPECT_TRUE(d.devices.empty());
    d = devices_of("te=CPU", "");
    EXPECT_EQ(d.devices, (std::vector<std::string>{"CPU"}));
    EXPECT_EQ(d.module, "clip_vision");
    d = devices_of("te=CPU", "te=disk");
    EXPECT_EQ(d.params, ModuleDevices::Params::Disk);
    d = devices_of("clip_vision=CPU", "");
    EXPECT_EQ(d.devices, (std::vector<std::string>{"CPU"}));
    d = devices_of("", "clip_vision=disk");
    EXPECT_EQ(d.params, ModuleDevices::Params::Disk);
    EXPECT_TRUE(d.devices.empty());
}

// Families that do not list "clip_vision" refuse the file, also those whose other part files
// are not checked.
TEST(ClipVisionPartFile, RefusedByFamiliesThatDoNotReadIt) {
    ModelOptions o;
    o.clip_vision = "clip_vision_h.safetensors";
    FamilyRecipe unchecked{};
    unchecked.id = "x";
    unchecked.display = "X";
    Status st = check_part_files(unchecked, o);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.message(),
              "--clip_vision clip_vision_h.safetensors: X models have no part that reads it (a "
              "CLIP vision encoder for image-to-video models); leave it out");
    FamilyRecipe other = unchecked;
    other.part_files = "diffusion-model,t5xxl,vae";
    EXPECT_FALSE(check_part_files(other, o).ok());
    FamilyRecipe reads = unchecked;
    reads.part_files = "diffusion-model,t5xxl,vae,clip_vision";
    EXPECT_TRUE(check_part_files(reads, o).ok());
    o.clip_vision.clear();
    EXPECT_TRUE(check_part_files(unchecked, o).ok());
    EXPECT_TRUE(check_part_files(other, o).ok());
}

}  // namespace
}  // namespace ggdiff::models
