// The FLUX.2 DiT without the pipeline: sizes detected from the weights (and errors that name
// the missing or mis-shaped tensor), the position ids of text, image and reference tokens,
// and the graph: any latent size comes back at that size, the output depends on the
// timestep, the text and the reference tokens (which do not change its shape), a batch
// equals its items run alone (one reference set shared by the batch), skip-layer numbering,
// guidance_in (dev), the diffusers layout (split q/k/v, (scale, shift) norm_out) giving the
// same output as the BFL one, and the numbers of the golden fixture's DiT against an
// independent float64 numpy forward (tests/tools/flux2_reference.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "../io/io_test_util.h"
#include "families/flux2/denoiser.h"
#include "families/flux2/dit.h"
#include "families/flux2/names.h"
#include "pipeline/options.h"
#include "pipeline/placement_setup.h"
#include "runtime/module_runner.h"

namespace ggdiff::models {
namespace {

namespace fs = std::filesystem;
using testing::FakeTensor;

const std::string kDit = "model.diffusion_model.";
constexpr int64_t kHidden = 256, kHead = 128, kMlp = 48, kCtx = 32, kIn = 16;

// ---------------------------------------------------------------------------------------------
// A tiny FLUX.2 DiT: hidden 256 (2 heads of 128, as the RoPE needs), SwiGLU width 48, text
// width 32, 16 latent channels, `depth` double and `single` single blocks.

struct TinySpec {
    int depth = 2, single = 1;
    bool guidance = false;
    bool diffusers = false;  // the same values in diffusers Flux2Transformer2DModel names
    std::string drop;        // a BFL tensor left out
    std::map<std::string, std::vector<int64_t>> reshape;  // BFL tensors given another shape
};

using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

Shapes bfl_shapes(const TinySpec& s) {
    const int64_t h = kHidden;
    Shapes t = {
        {"img_in.weight", {h, kIn}},
        {"txt_in.weight", {h, kCtx}},
        {"time_in.in_layer.weight", {h, 256}},
        {"time_in.out_layer.weight", {h, h}},
        {"double_stream_modulation_img.lin.weight", {6 * h, h}},
        {"double_stream_modulation_txt.lin.weight", {6 * h, h}},
        {"single_stream_modulation.lin.weight", {3 * h, h}},
        {"final_layer.adaLN_modulation.1.weight", {2 * h, h}},
        {"final_layer.linear.weight", {kIn, h}},
    };
    if (s.guidance) {
        t.push_back({"guidance_in.in_layer.weight", {h, 256}});
        t.push_back({"guidance_in.out_layer.weight", {h, h}});
    }
    for (int i = 0; i < s.depth; ++i) {
        const std::string b = "double_blocks." + std::to_string(i) + ".";
        for (const std::string st : {"img_", "txt_"}) {
            t.push_back({b + st + "attn.qkv.weight", {3 * h, h}});
            t.push_back({b + st + "attn.norm.query_norm.scale", {kHead}});
            t.push_back({b + st + "attn.norm.key_norm.scale", {kHead}});
            t.push_back({b + st + "attn.proj.weight", {h, h}});
            t.push_back({b + st + "mlp.0.weight", {2 * kMlp, h}});
            t.push_back({b + st + "mlp.2.weight", {h, kMlp}});
        }
    }
    for (int i = 0; i < s.single; ++i) {
        const std::string b = "single_blocks." + std::to_string(i) + ".";
        t.push_back({b + "linear1.weight", {3 * h + 2 * kMlp, h}});
        t.push_back({b + "linear2.weight", {h, h + kMlp}});
        t.push_back({b + "norm.query_norm.scale", {kHead}});
        t.push_back({b + "norm.key_norm.scale", {kHead}});
    }
    return t;
}

// Norm scales near 1, everything else small and deterministic (by name, so that the BFL and
// diffusers files hold the same values).
std::vector<float> values(const std::string& name, const std::vector<int64_t>& shape) {
    uint32_t seed = 7;
    for (char ch : name) seed = seed * 31u + static_cast<uint8_t>(ch);
    std::vector<float> v = testing::pattern(testing::numel(shape), seed);
    const bool norm = shape.size() == 1;
    const double scale = norm ? 0.1 : 1.0 / std::sqrt(static_cast<double>(shape[1]));
    for (float& x : v) x = norm ? 1.0f + 0.1f * x : static_cast<float>(x * scale);
    return v;
}

// The diffusers tensors of one BFL tensor (name, shape, values): written out by hand here,
// independently of families/flux2/names.cpp, from diffusers' Flux2Transformer2DModel.
std::vector<FakeTensor> diffusers_form(const std::string& name, const std::vector<int64_t>& shape,
                                       const std::vector<float>& v) {
    auto tensor = [](const std::string& n, std::vector<int64_t> sh, std::vector<float> data) {
        return FakeTensor{n, "F32", std::move(sh), testing::to_bytes(data)};
    };
    auto rows = [&](int64_t first, int64_t count) {
        const int64_t cols = shape[1];
        return std::vector<float>(v.begin() + first * cols, v.begin() + (first + count) * cols);
    };
    const std::map<std::string, std::string> top = {
        {"img_in.weight", "x_embedder.weight"},
        {"txt_in.weight", "context_embedder.weight"},
        {"time_in.in_layer.weight", "time_guidance_embed.timestep_embedder.linear_1.weight"},
        {"time_in.out_layer.weight", "time_guidance_embed.timestep_embedder.linear_2.weight"},
        {"guidance_in.in_layer.weight", "time_guidance_embed.guidance_embedder.linear_1.weight"},
        {"guidance_in.out_layer.weight", "time_guidance_embed.guidance_embedder.linear_2.weight"},
        {"double_stream_modulation_img.lin.weight", "double_stream_modulation_img.linear.weight"},
        {"double_stream_modulation_txt.lin.weight", "double_stream_modulation_txt.linear.weight"},
        {"single_stream_modulation.lin.weight", "single_stream_modulation.linear.weight"},
        {"final_layer.linear.weight", "proj_out.weight"},
    };
    if (auto it = top.find(name); it != top.end()) return {tensor(it->second, shape, v)};
    if (name == "final_layer.adaLN_modulation.1.weight") {  // (shift, scale) -> (scale, shift)
        const int64_t half = shape[0] / 2;
        std::vector<float> swapped = rows(half, half);
        const std::vector<float> shift = rows(0, half);
        swapped.insert(swapped.end(), shift.begin(), shift.end());
        return {tensor("norm_out.linear.weight", shape, swapped)};
    }
    const std::map<std::string, std::string> dbl = {
        {"img_attn.norm.query_norm.scale", "attn.norm_q.weight"},
        {"img_attn.norm.key_norm.scale", "attn.norm_k.weight"},
        {"txt_attn.norm.query_norm.scale", "attn.norm_added_q.weight"},
        {"txt_attn.norm.key_norm.scale", "attn.norm_added_k.weight"},
        {"img_attn.proj.weight", "attn.to_out.0.weight"},
        {"txt_attn.proj.weight", "attn.to_add_out.weight"},
        {"img_mlp.0.weight", "ff.linear_in.weight"},
        {"img_mlp.2.weight", "ff.linear_out.weight"},
        {"txt_mlp.0.weight", "ff_context.linear_in.weight"},
        {"txt_mlp.2.weight", "ff_context.linear_out.weight"},
    };
    const std::map<std::string, std::string> sgl = {
        {"linear1.weight", "attn.to_qkv_mlp_proj.weight"},
        {"linear2.weight", "attn.to_out.weight"},
        {"norm.query_norm.scale", "attn.norm_q.weight"},
        {"norm.key_norm.scale", "attn.norm_k.weight"},
    };
    const size_t dot = name.find('.', name.find('.') + 1);
    const std::string idx = name.substr(name.find('.') + 1, dot - name.find('.') - 1);
    const std::string rest = name.substr(dot + 1);
    if (name.rfind("single_blocks.", 0) == 0) {
        return {tensor("single_transformer_blocks." + idx + "." + sgl.at(rest), shape, v)};
    }
    const std::string b = "transformer_blocks." + idx + ".";
    if (rest == "img_attn.qkv.weight" || rest == "txt_attn.qkv.weight") {
        const bool img = rest[0] == 'i';
        const char* parts[2][3] = {{"attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj"},
                                   {"attn.to_q", "attn.to_k", "attn.to_v"}};
        std::vector<FakeTensor> out;
        const int64_t h = shape[0] / 3;
        for (int j = 0; j < 3; ++j) {
            out.push_back(
                tensor(b + parts[img ? 1 : 0][j] + ".weight", {h, shape[1]}, rows(j * h, h)));
        }
        return out;
    }
    return {tensor(b + dbl.at(rest), shape, v)};
}

std::string write_tiny(const std::string& dir, const TinySpec& s, const std::string& tag) {
    std::vector<FakeTensor> tensors;
    for (auto [name, shape] : bfl_shapes(s)) {
        if (name == s.drop) continue;
        const std::vector<float> v = values(name, shape);
        if (auto it = s.reshape.find(name); it != s.reshape.end()) {
            shape = it->second;
            tensors.push_back({name, "F32", shape,
                               testing::to_bytes(std::vector<float>(testing::numel(shape), 0.1f))});
            continue;
        }
        if (s.diffusers) {
            for (FakeTensor& t : diffusers_form(name, shape, v)) tensors.push_back(std::move(t));
        } else {
            tensors.push_back({name, "F32", shape, testing::to_bytes(v)});
        }
    }
    const std::string path = dir + "/" + tag + ".safetensors";
    testing::write_safetensors(path, tensors);
    return path;
}

HostTensor wave(std::vector<int64_t> ne, float freq, float shift = 0.0f) {
    HostTensor t(std::move(ne));
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = std::sin(freq * i + shift);
    return t;
}

double max_abs_diff(const HostTensor& a, const HostTensor& b) {
    double m = a.data.size() == b.data.size() ? 0.0 : 1e30;
    for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) {
        m = std::max(m, static_cast<double>(std::fabs(a.data[i] - b.data[i])));
    }
    return m;
}

std::vector<int64_t> dims(const HostTensor& t) {
    return {t.dim(0), t.dim(1), t.dim(2), t.dim(3)};
}

TinySpec blocks(int depth, int single, bool guidance) {
    TinySpec s;
    s.depth = depth;
    s.single = single;
    s.guidance = guidance;
    return s;
}

double max_abs(const HostTensor& a) {
    double m = 0.0;
    for (float v : a.data) m = std::max(m, static_cast<double>(std::fabs(v)));
    return m;
}

struct Inputs {
    HostTensor x, t, context, guidance;
    std::vector<HostTensor> refs;
    std::vector<int> skip;
};

// Latent [w, h, C, n], timesteps, text [ctx, L, n].
Inputs inputs(int64_t w, int64_t h, int64_t l, std::vector<float> t, float text_shift = 0.0f,
              int64_t channels = kIn, int64_t ctx = kCtx) {
    const int64_t n = static_cast<int64_t>(t.size());
    Inputs in;
    in.x = wave({w, h, channels, n}, 0.37f);
    in.t = HostTensor({n});
    in.t.data = std::move(t);
    in.context = wave({ctx, l, n}, 0.11f, text_shift);
    in.guidance = HostTensor({n}, 3.5f);
    return in;
}

HostTensor run(const TensorIndex& index, const Flux2Config& cfg, const Inputs& in) {
    ModuleDevices where;
    ModuleRunner m(index, -1, where, 2, "DiT");
    std::vector<Flux2RefSize> sizes;
    for (const HostTensor& r : in.refs) sizes.emplace_back(r.dim(0), r.dim(1));
    const Flux2Positions pe =
        flux2_positions(cfg, in.x.dim(0), in.x.dim(1), in.context.dim(1), sizes);
    auto build = [&](GraphBuilder& gb) {
        std::vector<ggml_tensor*> refs;
        for (const HostTensor& r : in.refs) refs.push_back(gb.input(r));
        return std::vector<ggml_tensor*>{
            build_flux2(gb.nn(), cfg, gb.input(in.x), gb.input(in.t), gb.input(in.context), refs,
                        cfg.guidance_embed ? gb.input(in.guidance) : nullptr, gb.input(pe.cos),
                        gb.input(pe.sin), &in.skip)};
    };
    Status st = m.prepare(build);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok()) return {};
    auto out = m.run(build);
    EXPECT_TRUE(out.ok()) << out.status().message();
    return out.ok() ? (*out)[0] : HostTensor{};
}

class Flux2Dit : public ::testing::Test {
  protected:
    // One folder per test: ctest runs the tests of this suite in parallel.
    void SetUp() override {
        dir_ = testing::test_dir(std::string("flux2_dit_") +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }
    TensorIndex open(const std::string& path) {
        TensorIndex index(ModelLayouts{&kFlux2Layout});
        Status st = index.add(path, kDit);
        EXPECT_TRUE(st.ok()) << st.message();
        return index;
    }
    std::string error_of(const TinySpec& s, const std::string& tag) {
        const TensorIndex index = open(write_tiny(dir_, s, tag));
        auto cfg = detect_flux2(index);
        EXPECT_FALSE(cfg.ok()) << tag;
        return cfg.ok() ? "" : cfg.status().message();
    }
    std::string dir_;
};

TEST_F(Flux2Dit, DetectsSizesFromTheWeights) {
    const TensorIndex index = open(write_tiny(dir_, blocks(3, 2, false), "klein"));
    auto cfg = detect_flux2(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->hidden, kHidden);
    EXPECT_EQ(cfg->head_dim, kHead);
    EXPECT_EQ(cfg->heads, 2);
    EXPECT_EQ(cfg->mlp_hidden, kMlp);
    EXPECT_EQ(cfg->context_dim, kCtx);
    EXPECT_EQ(cfg->in_channels, kIn);
    EXPECT_EQ(cfg->out_channels, kIn);
    EXPECT_EQ(cfg->depth, 3);
    EXPECT_EQ(cfg->depth_single, 2);
    EXPECT_FALSE(cfg->guidance_embed);
    EXPECT_FALSE(cfg->split_qkv);
    EXPECT_FALSE(cfg->final_scale_first);
    EXPECT_EQ(cfg->theta, 2000.0f);
    EXPECT_EQ(cfg->axes_dim, (std::vector<int>{32, 32, 32, 32}));

    const TensorIndex dev = open(write_tiny(dir_, blocks(1, 1, true), "dev"));
    auto dcfg = detect_flux2(dev);
    ASSERT_TRUE(dcfg.ok()) << dcfg.status().message();
    EXPECT_TRUE(dcfg->guidance_embed);

    TinySpec d;
    d.diffusers = true;
    const TensorIndex diff = open(write_tiny(dir_, d, "diffusers"));
    auto fcfg = detect_flux2(diff);
    ASSERT_TRUE(fcfg.ok()) << fcfg.status().message();
    EXPECT_TRUE(fcfg->split_qkv);
    EXPECT_TRUE(fcfg->final_scale_first);
    EXPECT_EQ(fcfg->depth, 2);
    EXPECT_EQ(fcfg->depth_single, 1);
}

TEST_F(Flux2Dit, ErrorsNameTheTensor) {
    TinySpec s;
    s.drop = "double_blocks.0.img_attn.norm.key_norm.scale";
    EXPECT_NE(error_of(s, "no_key_norm").find(kDit + s.drop), std::string::npos);
    s = {};
    s.drop = "double_blocks.1.txt_mlp.2.weight";  // a later block's tensor
    EXPECT_NE(error_of(s, "no_mlp").find(kDit + s.drop), std::string::npos);
    s = {};
    s.drop = "single_stream_modulation.lin.weight";
    EXPECT_NE(error_of(s, "no_mod").find(kDit + s.drop), std::string::npos);
    s = {};
    const std::string l1 = "single_blocks.0.linear1.weight";
    s.reshape[l1] = {3 * kHidden + kMlp, kHidden};  // not 3 x hidden + 2 x MLP
    EXPECT_NE(error_of(s, "bad_linear1").find(kDit + l1), std::string::npos);
    s = {};
    const std::string kn = "double_blocks.0.img_attn.norm.key_norm.scale";
    s.reshape[kn] = {64};
    const std::string e = error_of(s, "head64");
    EXPECT_NE(e.find(kDit + kn), std::string::npos) << e;
    EXPECT_NE(e.find("128"), std::string::npos) << e;
}

TEST(Flux2Positions, TextImageAndReferenceIds) {
    Flux2Config cfg;
    const std::vector<float> ids = flux2_position_ids(cfg, 3, 2, 2, {{2, 1}, {1, 1}});
    ASSERT_EQ(ids.size(), static_cast<size_t>(4 * (2 + 6 + 2 + 1)));
    auto id = [&](size_t t) {
        return std::vector<float>(ids.begin() + 4 * t, ids.begin() + 4 * t + 4);
    };
    EXPECT_EQ(id(0), (std::vector<float>{0, 0, 0, 0}));
    EXPECT_EQ(id(1), (std::vector<float>{0, 0, 0, 1}));
    EXPECT_EQ(id(2 + 5), (std::vector<float>{0, 1, 2, 0}));       // image row 1, column 2
    EXPECT_EQ(id(2 + 6 + 1), (std::vector<float>{10, 0, 1, 0}));  // first reference
    EXPECT_EQ(id(2 + 6 + 2), (std::vector<float>{20, 0, 0, 0}));  // second reference

    const Flux2Positions pe = flux2_positions(cfg, 3, 2, 2, {{2, 1}, {1, 1}});
    ASSERT_EQ(pe.cos.ne, (std::vector<int64_t>{1, 64, 1, 11}));
    auto angle = [&](int64_t t, int64_t pair) {
        return std::atan2(pe.sin.data[t * 64 + pair], pe.cos.data[t * 64 + pair]);
    };
    EXPECT_NEAR(angle(1, 48), 1.0f, 1e-6);  // text axis: first pair turns at omega 1
    EXPECT_NEAR(angle(7, 16), 1.0f, 1e-6);  // row axis
    EXPECT_NEAR(angle(7, 32), 2.0f, 1e-6);  // column axis
    // Index axis of the first reference: position 10, pair 1 turns at 2000^(-2/32).
    EXPECT_NEAR(pe.cos.data[9 * 64 + 1], std::cos(10.0 * std::pow(2000.0, -2.0 / 32.0)), 1e-6);
}

TEST_F(Flux2Dit, AnyLatentSizeAndInputsMatter) {
    const TensorIndex index = open(write_tiny(dir_, {}, "klein"));
    auto cfg = detect_flux2(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    const Inputs base = inputs(7, 5, 3, {0.8f});
    const HostTensor a = run(index, *cfg, base);
    ASSERT_EQ(dims(a), (std::vector<int64_t>{7, 5, kIn, 1}));
    for (float v : a.data) ASSERT_TRUE(std::isfinite(v));
    EXPECT_GT(max_abs(a), 1e-2);
    EXPECT_GT(max_abs_diff(a, run(index, *cfg, inputs(7, 5, 3, {0.3f}))), 1e-3);
    EXPECT_GT(max_abs_diff(a, run(index, *cfg, inputs(7, 5, 3, {0.8f}, 0.7f))), 1e-3);

    Inputs with_ref = base;
    with_ref.refs.push_back(wave({4, 3, kIn, 1}, 0.23f));
    const HostTensor r = run(index, *cfg, with_ref);
    ASSERT_EQ(dims(r), dims(a));  // reference tokens are dropped from the output
    EXPECT_GT(max_abs_diff(a, r), 1e-3);
    Inputs two_refs = with_ref;
    two_refs.refs.push_back(wave({2, 6, kIn, 1}, 0.41f));
    const HostTensor r2 = run(index, *cfg, two_refs);
    ASSERT_EQ(dims(r2), dims(a));
    EXPECT_GT(max_abs_diff(r, r2), 1e-3);

    const HostTensor tiny = run(index, *cfg, inputs(1, 1, 1, {0.5f}));
    EXPECT_EQ(dims(tiny), (std::vector<int64_t>{1, 1, kIn, 1}));
}

// A batch of two (different timesteps and texts, one reference set for both) equals the
// items run alone.
TEST_F(Flux2Dit, BatchEqualsItemsAndSharesTheReferences) {
    const TensorIndex index = open(write_tiny(dir_, {}, "klein"));
    auto cfg = detect_flux2(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    const HostTensor ref = wave({3, 3, kIn, 1}, 0.19f);
    Inputs batch = inputs(4, 3, 5, {0.9f, 0.2f});
    batch.refs = {ref};
    const HostTensor ab = run(index, *cfg, batch);
    ASSERT_EQ(dims(ab), (std::vector<int64_t>{4, 3, kIn, 2}));
    const int64_t item = 4 * 3 * kIn, text = kCtx * 5;
    for (int b = 0; b < 2; ++b) {
        Inputs one = inputs(4, 3, 5, {batch.t.data[b]});
        std::copy(batch.x.data.begin() + b * item, batch.x.data.begin() + (b + 1) * item,
                  one.x.data.begin());
        std::copy(batch.context.data.begin() + b * text,
                  batch.context.data.begin() + (b + 1) * text, one.context.data.begin());
        one.refs = {ref};
        const HostTensor alone = run(index, *cfg, one);
        HostTensor part({4, 3, kIn, 1});
        std::copy(ab.data.begin() + b * item, ab.data.begin() + (b + 1) * item, part.data.begin());
        EXPECT_LT(max_abs_diff(alone, part), 1e-5) << "item " << b;
    }
}

// Skip-layer guidance numbers double blocks 0 .. depth-1, then single blocks from depth.
TEST_F(Flux2Dit, SkippedBlocksPassThrough) {
    const TensorIndex index = open(write_tiny(dir_, blocks(2, 1, false), "klein"));
    auto cfg = detect_flux2(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    const Inputs base = inputs(3, 3, 2, {0.6f});
    const HostTensor a = run(index, *cfg, base);
    Inputs skip_single = base;
    skip_single.skip = {2};
    const HostTensor s = run(index, *cfg, skip_single);
    EXPECT_GT(max_abs_diff(a, s), 1e-3);
    Inputs out_of_range = base;
    out_of_range.skip = {3};  // no such block: nothing skipped
    EXPECT_LT(max_abs_diff(a, run(index, *cfg, out_of_range)), 1e-6);
    // The same network without single block 0 is the full one with block 2 skipped.
    const TensorIndex no_single_idx = open(write_tiny(dir_, blocks(2, 1, false), "klein_copy"));
    auto c2 = detect_flux2(no_single_idx);
    ASSERT_TRUE(c2.ok());
    c2->depth_single = 0;
    EXPECT_LT(max_abs_diff(s, run(no_single_idx, *c2, base)), 1e-6);
}

TEST_F(Flux2Dit, GuidanceEmbeddingOfDev) {
    const TensorIndex index = open(write_tiny(dir_, blocks(1, 1, true), "dev"));
    auto cfg = detect_flux2(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    Inputs a = inputs(3, 2, 2, {0.7f});
    Inputs b = a;
    b.guidance.data = {5.0f};
    EXPECT_GT(max_abs_diff(run(index, *cfg, a), run(index, *cfg, b)), 1e-3);
}

// diffusers' names (q, k, v apart, the final norm in (scale, shift) order) load as the same
// network.
TEST_F(Flux2Dit, DiffusersLayoutGivesTheSameOutput) {
    TinySpec d;
    d.diffusers = true;
    d.guidance = true;
    TinySpec o = d;
    o.diffusers = false;
    const TensorIndex bfl = open(write_tiny(dir_, o, "bfl"));
    const TensorIndex diff = open(write_tiny(dir_, d, "diffusers"));
    auto cb = detect_flux2(bfl);
    auto cd = detect_flux2(diff);
    ASSERT_TRUE(cb.ok() && cd.ok());
    ASSERT_TRUE(cd->split_qkv && cd->final_scale_first && cd->guidance_embed);
    Inputs in = inputs(5, 4, 3, {0.45f});
    in.refs.push_back(wave({2, 2, kIn, 1}, 0.29f));
    const HostTensor a = run(bfl, *cb, in);
    const HostTensor b = run(diff, *cd, in);
    ASSERT_EQ(dims(a), dims(b));
    EXPECT_GT(max_abs(a), 1e-2);
    EXPECT_LT(max_abs_diff(a, b), 1e-5);
}

// The denoiser: contexts stacked on the batch axis, the references given once, the RoPE
// tables remade when the reference sizes change; the same numbers as the graph run directly.
TEST_F(Flux2Dit, DenoiserRunsTheGraphWithReferences) {
    const TensorIndex index = open(write_tiny(dir_, blocks(1, 1, true), "dev"));
    auto cfg = detect_flux2(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    ModelOptions options;
    EnginePlacement placement;
    const FamilyContext ctx{options, index, placement, -1, 2, "", nullptr};
    auto den = Flux2Denoiser::create(ctx, placement.diffusion, *cfg);
    ASSERT_TRUE(den.ok()) << den.status().message();

    Inputs in = inputs(4, 3, 5, {0.9f, 0.2f});
    in.guidance = HostTensor({2}, 4.0f);
    Conditioning c0, c1;
    c0.context = HostTensor({kCtx, 5, 1});
    c1.context = HostTensor({kCtx, 5, 1});
    std::copy(in.context.data.begin(), in.context.data.begin() + kCtx * 5, c0.context.data.begin());
    std::copy(in.context.data.begin() + kCtx * 5, in.context.data.end(), c1.context.data.begin());
    DenoiseBatch b;
    b.x = in.x;
    b.timesteps = in.t.data;
    b.cond = {&c0, &c1};
    b.guidance = 4.0f;
    for (const std::vector<int64_t>& size :
         {std::vector<int64_t>{}, std::vector<int64_t>{2, 3}, std::vector<int64_t>{3, 2}}) {
        in.refs.clear();
        if (!size.empty()) in.refs.push_back(wave({size[0], size[1], kIn, 1}, 0.31f));
        b.refs = &in.refs;
        auto got = (*den)->run(b);
        ASSERT_TRUE(got.ok()) << got.status().message();
        EXPECT_LT(max_abs_diff(*got, run(index, *cfg, in)), 1e-5) << size.size();
    }
    const std::vector<HostTensor> wrong = {HostTensor({2, 2, kIn + 1, 1})};
    b.refs = &wrong;
    auto bad = (*den)->run(b);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("reference latent"), std::string::npos);
    b.refs = nullptr;
    Conditioning narrow;
    narrow.context = HostTensor({kCtx + 1, 5, 1});
    b.cond = {&c0, &narrow};
    bad = (*den)->run(b);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("txt_in"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The golden fixture's DiT (../shared/fixtures/flux2_tiny_dit.tensors, seed 71) against the
// numpy forward, with a batch of two, an odd latent size and a reference image.

const char* kPython = "/usr/bin/python3";

bool have_numpy() {
    return std::system((std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0;
}

template <class T>
void write_raw(const fs::path& p, const std::vector<T>& v) {
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()),
            static_cast<std::streamsize>(v.size() * sizeof(T)));
}

std::vector<float> read_floats(const fs::path& p) {
    std::ifstream f(p, std::ios::binary | std::ios::ate);
    std::vector<float> out(static_cast<size_t>(f.tellg()) / sizeof(float));
    f.seekg(0);
    f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size() * 4));
    return out;
}

std::string shape_json(const std::vector<int64_t>& ggml_ne) {
    std::string s = "[";
    for (size_t i = ggml_ne.size(); i-- > 0;) s += std::to_string(ggml_ne[i]) + (i ? "," : "");
    return s + "]";
}

std::string input_json(const fs::path& dir, const std::string& name, const HostTensor& t) {
    write_raw(dir / (name + ".f32"), t.data);
    return "{\"file\":\"" + (dir / (name + ".f32")).string() + "\",\"shape\":" + shape_json(t.ne) +
           "}";
}

TEST_F(Flux2Dit, GoldenFixtureMatchesNumpy) {
    if (!have_numpy()) GTEST_SKIP() << kPython << " with numpy is not available";
    const fs::path dir = dir_;
    const std::string file = (dir / "flux2_tiny_dit.safetensors").string();
    const std::string make = std::string(kPython) +
                             " " GGDIFF_SHARED_DIR "/tools/make_fixture.py " GGDIFF_SHARED_DIR
                             "/fixtures/flux2_tiny_dit.tensors " +
                             file + " --seed 71 >/dev/null";
    ASSERT_EQ(std::system(make.c_str()), 0) << make;
    const TensorIndex index = open(file);
    auto cfg = detect_flux2(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->hidden, 256);
    EXPECT_EQ(cfg->heads, 2);
    EXPECT_EQ(cfg->mlp_hidden, 768);
    EXPECT_EQ(cfg->context_dim, 384);
    EXPECT_EQ(cfg->in_channels, 128);
    EXPECT_EQ(cfg->depth, 2);
    EXPECT_EQ(cfg->depth_single, 2);

    Inputs in = inputs(5, 3, 6, {0.93f, 0.41f}, 0.0f, 128, 384);
    std::mt19937 g(3);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (float& v : in.x.data) v = nd(g);
    for (float& v : in.context.data) v = nd(g);
    HostTensor ref({2, 4, 128, 1});
    for (float& v : ref.data) v = nd(g);
    in.refs = {ref};
    const HostTensor got = run(index, *cfg, in);
    ASSERT_EQ(dims(got), dims(in.x));

    std::ofstream(dir / "inputs.json")
        << "{\"x\":" << input_json(dir, "x", in.x) << ",\"t\":" << input_json(dir, "t", in.t)
        << ",\"context\":" << input_json(dir, "c", in.context) << ",\"refs\":["
        << input_json(dir, "r0", ref) << "]}\n";
    const std::string cmd =
        std::string(kPython) + " " GGDIFF_SOURCE_DIR "/tests/tools/flux2_reference.py " + file +
        " '' " + (dir / "inputs.json").string() + " " + (dir / "ref.f32").string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const std::vector<float> want = read_floats(dir / "ref.f32");
    ASSERT_EQ(want.size(), got.data.size());
    double scale = 0, worst = 0, mean = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const double d = std::fabs(double(want[i]) - got.data[i]);
        scale = std::max(scale, std::fabs(double(want[i])));
        worst = std::max(worst, d);
        mean += d / double(want.size());
    }
    ASSERT_GT(scale, 0.0);
    std::printf("[ flux2 ] max |ref| %.4g, error max %.3g mean %.3g of scale\n", scale,
                worst / scale, mean / scale);
    EXPECT_LE(worst, 2e-3 * scale);
    EXPECT_LE(mean, 2e-4 * scale);
}

}  // namespace
}  // namespace ggdiff::models
