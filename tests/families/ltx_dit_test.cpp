// The LTX-2 audio-video DiT without the pipeline, on a tiny configuration (video 64 wide in 4
// gated heads of 16, audio 32 wide in 2 heads, 2 blocks, connectors 64 / 32 wide with 8
// registers): sizes read from the weights and the errors that name a missing tensor; the
// positions as the reference builds them (video cell centres in seconds / pixels, causal audio
// steps, the frequency grid and its per-head split); output shapes of video and audio; a block
// whose weights are all zero passes both streams through; the text reaches the output; the
// whole DiT against an independent float64 numpy forward (tests/tools/ltx_dit_reference.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>

#include "../io/io_test_util.h"
#include "families/ltx/denoiser.h"
#include "families/ltx/dit.h"
#include "families/ltx/latents.h"
#include "runtime/module_runner.h"

namespace ggdiff::models {
namespace {

using testing::FakeTensor;

const std::string kDit = "model.diffusion_model.";
constexpr int64_t kV = 64, kVHeads = 4, kA = 32, kAHeads = 2, kIn = 16, kCtx = 64, kACtx = 32,
                  kRegs = 8, kBlocks = 2;

using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

void attn(Shapes& t, const std::string& p, int64_t q, int64_t c, int64_t inner, int64_t heads) {
    for (const char* n : {"to_q", "to_k", "to_v"}) {
        t.push_back({p + n + ".weight", {inner, std::string(n) == "to_q" ? q : c}});
        t.push_back({p + n + ".bias", {inner}});
    }
    t.push_back({p + "to_out.0.weight", {q, inner}});
    t.push_back({p + "to_out.0.bias", {q}});
    t.push_back({p + "q_norm.weight", {inner}});
    t.push_back({p + "k_norm.weight", {inner}});
    t.push_back({p + "to_gate_logits.weight", {heads, q}});
    t.push_back({p + "to_gate_logits.bias", {heads}});
}

void ff(Shapes& t, const std::string& p, int64_t d) {
    t.push_back({p + "net.0.proj.weight", {4 * d, d}});
    t.push_back({p + "net.0.proj.bias", {4 * d}});
    t.push_back({p + "net.2.weight", {d, 4 * d}});
    t.push_back({p + "net.2.bias", {d}});
}

void adaln(Shapes& t, const std::string& p, int64_t d, int64_t rows) {
    t.push_back({p + "emb.timestep_embedder.linear_1.weight", {d, 256}});
    t.push_back({p + "emb.timestep_embedder.linear_1.bias", {d}});
    t.push_back({p + "emb.timestep_embedder.linear_2.weight", {d, d}});
    t.push_back({p + "emb.timestep_embedder.linear_2.bias", {d}});
    t.push_back({p + "linear.weight", {rows * d, d}});
    t.push_back({p + "linear.bias", {rows * d}});
}

Shapes dit_shapes(bool cross_adaln) {
    Shapes t = {{"patchify_proj.weight", {kV, kIn}},
                {"patchify_proj.bias", {kV}},
                {"audio_patchify_proj.weight", {kA, 128}},
                {"audio_patchify_proj.bias", {kA}},
                {"proj_out.weight", {kIn, kV}},
                {"proj_out.bias", {kIn}},
                {"audio_proj_out.weight", {128, kA}},
                {"audio_proj_out.bias", {128}},
                {"scale_shift_table", {2, kV}},
                {"audio_scale_shift_table", {2, kA}}};
    const int64_t rows = cross_adaln ? 9 : 6;
    adaln(t, "adaln_single.", kV, rows);
    adaln(t, "audio_adaln_single.", kA, rows);
    if (cross_adaln) {
        adaln(t, "prompt_adaln_single.", kV, 2);
        adaln(t, "audio_prompt_adaln_single.", kA, 2);
    }
    adaln(t, "av_ca_video_scale_shift_adaln_single.", kV, 4);
    adaln(t, "av_ca_a2v_gate_adaln_single.", kV, 1);
    adaln(t, "av_ca_audio_scale_shift_adaln_single.", kA, 4);
    adaln(t, "av_ca_v2a_gate_adaln_single.", kA, 1);
    for (int i = 0; i < kBlocks; ++i) {
        const std::string b = "transformer_blocks." + std::to_string(i) + ".";
        attn(t, b + "attn1.", kV, kV, kV, kVHeads);
        attn(t, b + "attn2.", kV, kCtx, kV, kVHeads);
        attn(t, b + "audio_attn1.", kA, kA, kA, kAHeads);
        attn(t, b + "audio_attn2.", kA, kACtx, kA, kAHeads);
        attn(t, b + "audio_to_video_attn.", kV, kA, kA, kAHeads);
        attn(t, b + "video_to_audio_attn.", kA, kV, kA, kAHeads);
        ff(t, b + "ff.", kV);
        ff(t, b + "audio_ff.", kA);
        t.push_back({b + "scale_shift_table", {rows, kV}});
        t.push_back({b + "audio_scale_shift_table", {rows, kA}});
        t.push_back({b + "scale_shift_table_a2v_ca_audio", {5, kA}});
        t.push_back({b + "scale_shift_table_a2v_ca_video", {5, kV}});
        if (cross_adaln) {
            t.push_back({b + "prompt_scale_shift_table", {2, kV}});
            t.push_back({b + "audio_prompt_scale_shift_table", {2, kA}});
        }
    }
    for (const auto& [name, d, heads] :
         {std::tuple<std::string, int64_t, int64_t>{"video_embeddings_connector.", kCtx, 4},
          {"audio_embeddings_connector.", kACtx, 2}}) {
        t.push_back({name + "learnable_registers", {kRegs, d}});
        attn(t, name + "transformer_1d_blocks.0.attn1.", d, d, d, heads);
        ff(t, name + "transformer_1d_blocks.0.ff.", d);
    }
    return t;
}

std::vector<float> values(const std::string& name, const std::vector<int64_t>& shape) {
    uint32_t seed = 5;
    for (char ch : name) seed = seed * 31u + static_cast<uint8_t>(ch);
    std::vector<float> v = testing::pattern(testing::numel(shape), seed);
    const bool norm = name.find("norm.weight") != std::string::npos;
    const double scale = norm ? 0.1
                         : shape.size() == 1 || name.find("table") != std::string::npos ||
                                 name.find("registers") != std::string::npos
                             ? 0.3
                             : 1.0 / std::sqrt(static_cast<double>(shape[1]));
    for (float& x : v)
        x = norm ? 1.0f + static_cast<float>(x * scale) : static_cast<float>(x * scale);
    return v;
}

struct Spec {
    bool cross_adaln = false;
    std::string drop;
    std::string zero_prefix;  // tensors starting with it are all zero
};

std::string write_dit(const std::string& dir, const Spec& s, const std::string& tag) {
    std::vector<FakeTensor> tensors;
    for (const auto& [name, shape] : dit_shapes(s.cross_adaln)) {
        if (name == s.drop) continue;
        std::vector<float> v = values(name, shape);
        if (!s.zero_prefix.empty() && name.rfind(s.zero_prefix, 0) == 0)
            std::fill(v.begin(), v.end(), 0.0f);
        tensors.push_back({name, "F32", shape, testing::to_bytes(v)});
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

// The tiny model's inputs: a 3x2 latent of 2 frames, 5 audio steps, 7 text tokens.
struct Sample {
    HostTensor x = wave({3, 2, 2, kIn}, 0.37f);
    HostTensor audio = wave({16, 5, 8, 1}, 0.21f);
    HostTensor text = wave({kCtx + kACtx, 7, 1}, 0.11f);
};

double max_abs_diff(const HostTensor& a, const HostTensor& b) {
    double m = a.data.size() == b.data.size() ? 0.0 : 1e30;
    for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i)
        m = std::max(m, static_cast<double>(std::fabs(a.data[i] - b.data[i])));
    return m;
}

class LtxDit : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = testing::test_dir(std::string("ltx_dit_") +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }
    TensorIndex open(const Spec& s, const std::string& tag) {
        TensorIndex index;
        Status st = index.add(write_dit(dir_, s, tag), kDit);
        EXPECT_TRUE(st.ok()) << st.message();
        return index;
    }
    std::string dir_;
};

TEST_F(LtxDit, DetectsSizesFromTheWeights) {
    for (bool cross : {false, true}) {
        Spec s;
        s.cross_adaln = cross;
        const TensorIndex index = open(s, cross ? "cross" : "plain");
        auto cfg = detect_ltx_dit(index);
        ASSERT_TRUE(cfg.ok()) << cfg.status().message();
        EXPECT_EQ(cfg->in_channels, kIn);
        EXPECT_EQ(cfg->out_channels, kIn);
        EXPECT_EQ(cfg->hidden, kV);
        EXPECT_EQ(cfg->heads, kVHeads);
        EXPECT_EQ(cfg->head_dim, kV / kVHeads);
        EXPECT_EQ(cfg->audio_hidden, kA);
        EXPECT_EQ(cfg->audio_heads, kAHeads);
        EXPECT_EQ(cfg->audio_head_dim, kA / kAHeads);
        EXPECT_EQ(cfg->context, kCtx);
        EXPECT_EQ(cfg->audio_context, kACtx);
        EXPECT_EQ(cfg->layers, kBlocks);
        EXPECT_TRUE(cfg->gated);
        EXPECT_EQ(cfg->cross_adaln, cross);
        EXPECT_EQ(cfg->coeff(), cross ? 9 : 6);
        EXPECT_TRUE(cfg->video_connector.present);
        EXPECT_EQ(cfg->video_connector.hidden, kCtx);
        EXPECT_EQ(cfg->video_connector.heads, 4);
        EXPECT_EQ(cfg->video_connector.registers, kRegs);
        EXPECT_EQ(cfg->video_connector.layers, 1);
        EXPECT_EQ(cfg->audio_connector.hidden, kACtx);
        EXPECT_EQ(cfg->audio_connector.heads, 2);
    }
}

TEST_F(LtxDit, ErrorsNameTheTensor) {
    for (const std::string drop :
         {"transformer_blocks.1.video_to_audio_attn.to_k.weight",
          "transformer_blocks.0.scale_shift_table_a2v_ca_audio", "audio_patchify_proj.weight",
          "video_embeddings_connector.learnable_registers"}) {
        Spec s;
        s.drop = drop;
        const TensorIndex index = open(s, "drop");
        auto cfg = detect_ltx_dit(index);
        ASSERT_FALSE(cfg.ok()) << drop;
        EXPECT_NE(cfg.status().message().find(kDit + drop), std::string::npos)
            << cfg.status().message();
    }
}

TEST(LtxDitPositions, AsTheReferenceBuildsThem) {
    // Video: frame t's centre in seconds (causal: frame 0 covers pixel frames 0..1), cell centres
    // in pixels; each divided by 20 s / 2048 px.
    const std::vector<float> v = ltx_video_coords(2, 1, 2, 24.0f);
    ASSERT_EQ(v.size(), 12u);
    EXPECT_FLOAT_EQ(v[0], 0.5f / 24.0f / 20.0f);
    EXPECT_FLOAT_EQ(v[1], 16.0f / 2048.0f);
    EXPECT_FLOAT_EQ(v[2], 16.0f / 2048.0f);
    EXPECT_FLOAT_EQ(v[5], 48.0f / 2048.0f);       // column 1
    EXPECT_FLOAT_EQ(v[6], 5.0f / 24.0f / 20.0f);  // frame 1: pixel frames 1..9
    // A keyframe appended after 2 frames (--end-img of a 9-frame video) spans pixel frames 8..9,
    // one pixel frame long; the frames before it are placed as without it.
    LtxKeyframes key;
    key.count = 1;
    key.pixel = 8;
    const std::vector<float> k = ltx_video_coords(2, 1, 3, 24.0f, key);
    ASSERT_EQ(k.size(), 18u);
    for (size_t i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(k[i], v[i]) << i;
    EXPECT_FLOAT_EQ(k[12], 8.5f / 24.0f / 20.0f);
    EXPECT_FLOAT_EQ(k[13], 16.0f / 2048.0f);
    EXPECT_FLOAT_EQ(k[17], 48.0f / 2048.0f);
    // Audio: 4 mel frames of 10 ms per step, causal.
    const std::vector<float> a = ltx_audio_seconds(3);
    EXPECT_FLOAT_EQ(a[0], 0.005f);
    EXPECT_FLOAT_EQ(a[1], 0.03f);
    EXPECT_FLOAT_EQ(a[2], 0.07f);
    // Frequencies theta^(i/(n-1)) pi/2 times (2 coord - 1), axes interleaved, zero padding
    // first, split into heads: dim 16 over 3 axes -> 2 frequencies, 2 padding angles.
    const LtxRope r = ltx_rope({0.25f, 0.5f, 1.0f}, 3, 16, 2);
    ASSERT_EQ(r.cos.data.size(), 8u);
    const float pi2 = 1.5707963f;
    const float want[8] = {
        0.0f, 0.0f, pi2 * -0.5f, 0.0f, pi2 * 1.0f, 10000.0f * pi2 * -0.5f, 0.0f, 10000.0f * pi2};
    for (int i = 0; i < 8; ++i) {
        EXPECT_NEAR(r.cos.data[i], std::cos(want[i]), 5e-3) << i;
        EXPECT_NEAR(r.sin.data[i], std::sin(want[i]), 5e-3) << i;
    }
    EXPECT_EQ(r.cos.dim(0), 4);  // pairs per head
    EXPECT_EQ(r.cos.dim(1), 2);  // heads
    // Connectors fill short texts up to 1024 tokens with registers and skip long ones.
    LtxConnectorConfig cc;
    cc.present = true;
    cc.registers = 128;
    EXPECT_EQ(ltx_connector_length(cc, 7), 1024);
    EXPECT_EQ(ltx_connector_length(cc, 1023), 1024);
    EXPECT_EQ(ltx_connector_length(cc, 1024), 0);
    cc.registers = 100;
    EXPECT_EQ(ltx_connector_length(cc, 7), 1100);
}

struct DitRun {
    HostTensor video, audio;
};

DitRun run_dit(const TensorIndex& index, const LtxDitConfig& cfg, const HostTensor& x,
               const HostTensor* audio, const HostTensor& context, float sigma) {
    const int64_t w = x.dim(0), h = x.dim(1), f = x.dim(2);
    const LtxRope vr = ltx_video_rope(cfg, w, h, f, 24.0f);
    const int64_t steps = audio ? audio->dim(1) : 0;
    const LtxRope ar = ltx_audio_rope(cfg, std::max<int64_t>(steps, 1), false);
    const LtxRope at = ltx_audio_rope(cfg, std::max<int64_t>(steps, 1), true);
    const LtxRope vt = ltx_video_time_rope(cfg, w, h, f, 24.0f);
    const int64_t l = context.dim(1);
    const LtxRope vc =
        ltx_connector_rope(cfg.video_connector, ltx_connector_length(cfg.video_connector, l));
    const LtxRope ac =
        ltx_connector_rope(cfg.audio_connector, ltx_connector_length(cfg.audio_connector, l));
    HostTensor s({1}, sigma);
    ModuleDevices where;
    ModuleRunner m(index, -1, where, 2, "LTX DiT");
    auto build = [&](GraphBuilder& gb) {
        LtxDitInputs in;
        in.video = gb.input(x);
        in.audio = audio ? gb.input(*audio) : nullptr;
        in.sigma = gb.input(s);
        in.context = gb.input(context);
        in.video_cos = gb.input(vr.cos);
        in.video_sin = gb.input(vr.sin);
        if (audio) {
            in.audio_cos = gb.input(ar.cos);
            in.audio_sin = gb.input(ar.sin);
            in.atime_cos = gb.input(at.cos);
            in.atime_sin = gb.input(at.sin);
            in.vtime_cos = gb.input(vt.cos);
            in.vtime_sin = gb.input(vt.sin);
            in.aconn_cos = gb.input(ac.cos);
            in.aconn_sin = gb.input(ac.sin);
        }
        in.vconn_cos = gb.input(vc.cos);
        in.vconn_sin = gb.input(vc.sin);
        const LtxDitOutputs o = build_ltx_dit(gb.nn(), cfg, in);
        std::vector<ggml_tensor*> out = {o.video};
        if (o.audio) out.push_back(o.audio);
        return out;
    };
    DitRun r;
    Status st = m.prepare(build);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok()) return r;
    auto out = m.run(build);
    EXPECT_TRUE(out.ok()) << out.status().message();
    if (!out.ok()) return r;
    r.video = (*out)[0];
    if (out->size() > 1) r.audio = (*out)[1];
    return r;
}

TEST_F(LtxDit, ShapesAndTheTextReachTheOutput) {
    {  // LTX-2.3's layout: cross-attention AdaLN
        Spec s;
        s.cross_adaln = true;
        const TensorIndex index = open(s, "model");
        auto cfg = detect_ltx_dit(index);
        ASSERT_TRUE(cfg.ok()) << cfg.status().message();
        const Sample in;
        const HostTensor &x = in.x, &audio = in.audio, &text = in.text;
        const DitRun a = run_dit(index, *cfg, x, &audio, text, 0.7f);
        EXPECT_EQ(a.video.dim(0), 3);
        EXPECT_EQ(a.video.dim(1), 2);
        EXPECT_EQ(a.video.dim(2), 2);
        EXPECT_EQ(a.video.dim(3), kIn);
        EXPECT_EQ(a.audio.dim(0), 16);
        EXPECT_EQ(a.audio.dim(1), 5);
        EXPECT_EQ(a.audio.dim(2), 8);
        for (float v : a.video.data) ASSERT_TRUE(std::isfinite(v));
        const DitRun b =
            run_dit(index, *cfg, x, &audio, wave({kCtx + kACtx, 7, 1}, 0.11f, 1.0f), 0.7f);
        EXPECT_GT(max_abs_diff(a.video, b.video), 1e-3) << "the text does not reach the video";
        EXPECT_GT(max_abs_diff(a.audio, b.audio), 1e-3) << "the text does not reach the audio";
        const DitRun c = run_dit(index, *cfg, x, &audio, text, 0.3f);
        EXPECT_GT(max_abs_diff(a.video, c.video), 1e-3) << "sigma does not reach the video";
        // Without audio the video stream runs alone (no audio-video attention).
        const DitRun d = run_dit(index, *cfg, x, nullptr, text, 0.7f);
        EXPECT_EQ(d.video.data.size(), a.video.data.size());
        EXPECT_TRUE(d.audio.data.empty());
        EXPECT_GT(max_abs_diff(a.video, d.video), 1e-4) << "the audio does not reach the video";
    }
}

void write_f32(const std::string& path, const HostTensor& t) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(t.data.data()),
            static_cast<std::streamsize>(t.data.size() * sizeof(float)));
}

TEST_F(LtxDit, MatchesTheNumpyForward) {
    for (bool cross : {true, false}) {
        Spec s;
        s.cross_adaln = cross;
        const std::string weights = write_dit(dir_, s, cross ? "cross" : "plain");
        TensorIndex index;
        ASSERT_TRUE(index.add(weights, kDit).ok());
        auto cfg = detect_ltx_dit(index);
        ASSERT_TRUE(cfg.ok()) << cfg.status().message();
        const Sample in;
        const HostTensor &x = in.x, &audio = in.audio, &text = in.text;
        write_f32(dir_ + "/x.f32", x);
        write_f32(dir_ + "/audio.f32", audio);
        write_f32(dir_ + "/text.f32", text);
        {
            std::ofstream f(dir_ + "/inputs.json");
            f << "{\"video\": \"" << dir_ << "/x.f32\", \"video_shape\": [" << kIn
              << ", 2, 2, 3], \"audio\": \"" << dir_
              << "/audio.f32\", \"audio_shape\": [8, 5, 16], "
              << "\"context\": \"" << dir_ << "/text.f32\", \"context_shape\": [7, " << kCtx + kACtx
              << "], \"sigma\": 0.7, \"fps\": 24}";
        }
        const std::string out_path = dir_ + "/reference.f32";
        const std::string cmd = "/usr/bin/python3 " GGDIFF_SOURCE_DIR
                                "/tests/tools/ltx_dit_reference.py " +
                                weights + " " + dir_ + "/inputs.json " + out_path;
        ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
        const DitRun r = run_dit(index, *cfg, x, &audio, text, 0.7f);
        std::vector<float> ref(r.video.data.size() + r.audio.data.size());
        {
            std::ifstream f(out_path, std::ios::binary);
            f.read(reinterpret_cast<char*>(ref.data()),
                   static_cast<std::streamsize>(ref.size() * 4));
            ASSERT_TRUE(f.good());
        }
        double vmax = 0.0, vscale = 0.0, amax = 0.0, ascale = 0.0;
        for (size_t i = 0; i < r.video.data.size(); ++i) {
            vmax = std::max(vmax, static_cast<double>(std::fabs(r.video.data[i] - ref[i])));
            vscale = std::max(vscale, static_cast<double>(std::fabs(ref[i])));
        }
        const size_t off = r.video.data.size();
        for (size_t i = 0; i < r.audio.data.size(); ++i) {
            amax = std::max(amax, static_cast<double>(std::fabs(r.audio.data[i] - ref[off + i])));
            ascale = std::max(ascale, static_cast<double>(std::fabs(ref[off + i])));
        }
        std::printf(
            "video within %.2e (largest %.3f), audio within %.2e (largest %.3f); video[0] "
            "%.6f vs numpy %.6f\n",
            vmax, vscale, amax, ascale, r.video.data[0], ref[0]);
        EXPECT_LT(vmax, 2e-3 * vscale) << "cross-attention AdaLN " << cross;
        EXPECT_LT(amax, 2e-3 * ascale) << "cross-attention AdaLN " << cross;
    }
}

// The denoiser adapter: the packed latent unpacked, the DiT run, the velocities packed back
// (zero tail) give what the DiT gives on the parts, at every step (the connectors run once per
// text, their outputs kept until the next request's layout).
TEST_F(LtxDit, DenoiserPacksWhatTheDitGives) {
    Spec s;
    s.cross_adaln = true;
    const TensorIndex index = open(s, "model");
    auto cfg = detect_ltx_dit(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    const Sample in;
    const HostTensor &x = in.x, &audio = in.audio, &text = in.text;
    const DitRun want = run_dit(index, *cfg, x, &audio, text, 0.7f);
    HostTensor video = x;
    video.ne = {3, 2, kIn * 2, 1};
    const HostTensor packed = ltx_pack(video, 2, audio);
    ModuleDevices where;
    LtxDenoiser d(std::make_unique<ModuleRunner>(index, -1, where, 2, "DiT"), *cfg);
    ASSERT_TRUE(d.prepare().ok());
    d.set_layout({2, 5, 24.0f, {}});
    Conditioning c;
    c.context = text;
    DenoiseBatch b;
    b.x = packed;
    b.timesteps = {0.7f};
    b.cond = {&c};
    // The compute buffer a probe measures (auto-fit), with the connectors in the graph.
    auto probed = [&]() -> uint64_t {
        ComputeProbe probe;
        EXPECT_TRUE(d.run(b).ok());
        return probe.bytes().empty() ? 0 : probe.bytes().begin()->second;
    };
    const uint64_t first_step = probed();
    EXPECT_GT(first_step, 0u);
    EXPECT_EQ(d.connected_texts(), 0u);  // a probe's zeros are not kept
    auto got = d.run(b);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ(got->ne, packed.ne);
    EXPECT_EQ(probed(), first_step);  // still the first step's graph, whatever is kept
    HostTensor want_video = want.video;
    want_video.ne = {3, 2, kIn * 2, 1};
    const HostTensor want_packed = ltx_pack(want_video, 2, want.audio);
    EXPECT_LT(max_abs_diff(*got, want_packed), 1e-5);
    EXPECT_EQ(d.connected_texts(), 1u);

    // Later steps start from the text's connector outputs; another text gets its own.
    auto packed_want = [&](const HostTensor& context, float sigma) {
        const DitRun r = run_dit(index, *cfg, x, &audio, context, sigma);
        HostTensor v = r.video;
        v.ne = {3, 2, kIn * 2, 1};
        return ltx_pack(v, 2, r.audio);
    };
    b.timesteps = {0.4f};
    got = d.run(b);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_LT(max_abs_diff(*got, packed_want(text, 0.4f)), 1e-5);
    EXPECT_EQ(d.connected_texts(), 1u);
    Conditioning other;
    other.context = text;
    for (float& v : other.context.data) v = 0.5f - v;
    b.cond = {&other};
    got = d.run(b);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_LT(max_abs_diff(*got, packed_want(other.context, 0.4f)), 1e-5);
    EXPECT_EQ(d.connected_texts(), 2u);

    d.set_layout({2, 4, 24.0f, {}});  // a layout the latent does not have
    EXPECT_EQ(d.connected_texts(), 0u);
    EXPECT_FALSE(d.run(b).ok());
}

TEST_F(LtxDit, ZeroWeightBlockPassesItsInputs) {
    Spec s;
    s.zero_prefix = "transformer_blocks.0.";
    const TensorIndex index = open(s, "zero");
    auto cfg = detect_ltx_dit(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    const HostTensor vx = wave({kV, 6, 1}, 0.3f), ax = wave({kA, 4, 1}, 0.2f);
    const HostTensor vctx = wave({kCtx, 5, 1}, 0.1f), actx = wave({kACtx, 5, 1}, 0.15f);
    const LtxRope vr = ltx_video_rope(*cfg, 3, 2, 1, 24.0f);
    const LtxRope ar = ltx_audio_rope(*cfg, 4, false), at = ltx_audio_rope(*cfg, 4, true);
    const LtxRope vt = ltx_video_time_rope(*cfg, 3, 2, 1, 24.0f);
    HostTensor sigma({1}, 0.5f);
    ModuleDevices where;
    ModuleRunner m(index, -1, where, 2, "LTX block");
    auto build = [&](GraphBuilder& gb) {
        const LtxTimeMods t = build_ltx_time_mods(gb.nn(), *cfg, gb.input(sigma), true);
        LtxBlockInputs in;
        in.vx = gb.input(vx);
        in.ax = gb.input(ax);
        in.v_context = gb.input(vctx);
        in.a_context = gb.input(actx);
        in.t = &t;
        in.video_cos = gb.input(vr.cos);
        in.video_sin = gb.input(vr.sin);
        in.audio_cos = gb.input(ar.cos);
        in.audio_sin = gb.input(ar.sin);
        in.vtime_cos = gb.input(vt.cos);
        in.vtime_sin = gb.input(vt.sin);
        in.atime_cos = gb.input(at.cos);
        in.atime_sin = gb.input(at.sin);
        auto [v0, a0] = build_ltx_block(gb.nn(), *cfg, 0, in);
        auto [v1, a1] = build_ltx_block(gb.nn(), *cfg, 1, in);
        return std::vector<ggml_tensor*>{v0, a0, v1, a1};
    };
    ASSERT_TRUE(m.prepare(build).ok());
    auto out = m.run(build);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_LT(max_abs_diff((*out)[0], vx), 1e-6);
    EXPECT_LT(max_abs_diff((*out)[1], ax), 1e-6);
    EXPECT_GT(max_abs_diff((*out)[2], vx), 1e-3);  // a block with weights changes them
    EXPECT_GT(max_abs_diff((*out)[3], ax), 1e-3);
}

}  // namespace
}  // namespace ggdiff::models
