// Chroma1-Radiance's pixel ends without the DiT trunk: the layout read from the weights (patch
// size, the "__x0__" / "__32x32__" markers, the half-size img_in_patch kernel, the NeRF sizes)
// with errors that name the tensor, the DCT position table against its formula, and
// img_in_patch and the NeRF head against a direct float64 computation written out here from
// the model's definition (per-patch generated GLU weights L2-normalised per column, RMSNorm,
// 3x3 convolution, x0 -> velocity) on a tiny layout, for a batch of two odd-sized images.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "../io/io_test_util.h"
#include "families/chroma/radiance.h"
#include "runtime/module_runner.h"

namespace ggdiff::models {
namespace {

using testing::FakeTensor;

const std::string kDit = "model.diffusion_model.";
constexpr double kPi = 3.14159265358979323846;

// A tiny Radiance head: hidden 8, 2 colour channels, NeRF width 4, MLP ratio 2, 2 blocks,
// 3x3 position frequencies.
struct Tiny {
    int64_t hidden = 8, channels = 2, nh = 4, ratio = 2, depth = 2, freqs = 3;
    int64_t kernel = 4;  // img_in_patch kernel
    std::vector<std::string> markers;
    std::string drop;                                     // a tensor left out
    std::map<std::string, std::vector<int64_t>> reshape;  // tensors given another shape
};

std::vector<std::pair<std::string, std::vector<int64_t>>> shapes(const Tiny& s) {
    std::vector<std::pair<std::string, std::vector<int64_t>>> t = {
        {"img_in_patch.weight", {s.hidden, s.channels, s.kernel, s.kernel}},
        {"img_in_patch.bias", {s.hidden}},
        {"nerf_image_embedder.embedder.0.weight", {s.nh, s.channels + s.freqs * s.freqs}},
        {"nerf_image_embedder.embedder.0.bias", {s.nh}},
        {"nerf_final_layer_conv.norm.scale", {s.nh}},
        {"nerf_final_layer_conv.conv.weight", {s.channels, s.nh, 3, 3}},
        {"nerf_final_layer_conv.conv.bias", {s.channels}},
    };
    for (int64_t i = 0; i < s.depth; ++i) {
        const std::string b = "nerf_blocks." + std::to_string(i) + ".";
        t.push_back({b + "param_generator.weight", {3 * s.nh * s.nh * s.ratio, s.hidden}});
        t.push_back({b + "param_generator.bias", {3 * s.nh * s.nh * s.ratio}});
        t.push_back({b + "norm.scale", {s.nh}});
    }
    for (const std::string& m : s.markers) t.push_back({m, {}});
    return t;
}

// Deterministic values by name: norm scales near 1, the rest about 1/sqrt(fan in).
std::vector<float> values(const std::string& name, const std::vector<int64_t>& shape) {
    uint32_t seed = 11;
    for (char ch : name) seed = seed * 31u + static_cast<uint8_t>(ch);
    std::vector<float> v = testing::pattern(std::max<int64_t>(1, testing::numel(shape)), seed);
    const bool scale = name.find("norm.scale") != std::string::npos;
    double fan_in = 1.0;
    for (size_t i = 1; i < shape.size(); ++i) fan_in *= static_cast<double>(shape[i]);
    for (float& x : v) {
        x = scale ? 1.0f + 0.2f * x
                  : static_cast<float>(x * (shape.size() > 1 ? 1.5 : 0.3) / std::sqrt(fan_in));
    }
    return v;
}

class ChromaRadiance : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = testing::test_dir(std::string("chroma_radiance_") +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }
    TensorIndex open(const Tiny& s, const std::string& tag) {
        std::vector<FakeTensor> tensors;
        for (auto [name, shape] : shapes(s)) {
            if (name == s.drop) continue;
            if (auto it = s.reshape.find(name); it != s.reshape.end()) shape = it->second;
            tensors.push_back({name, "F32", shape, testing::to_bytes(values(name, shape))});
        }
        const std::string path = dir_ + "/" + tag + ".safetensors";
        testing::write_safetensors(path, tensors);
        TensorIndex index;
        Status st = index.add(path, kDit);
        EXPECT_TRUE(st.ok()) << st.message();
        return index;
    }
    std::string error_of(const Tiny& s, const std::string& tag) {
        const TensorIndex index = open(s, tag);
        auto cfg = detect_radiance(index, kDit);
        EXPECT_FALSE(cfg.ok()) << tag;
        return cfg.ok() ? "" : cfg.status().message();
    }
    std::string dir_;
};

TEST_F(ChromaRadiance, DetectsTheLayout) {
    Tiny s;
    s.kernel = 16;
    auto cfg = detect_radiance(open(s, "plain"), kDit);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->patch, 16);
    EXPECT_FALSE(cfg->fake_patch_x2);
    EXPECT_FALSE(cfg->x0);
    EXPECT_EQ(cfg->channels, 2);
    EXPECT_EQ(cfg->nerf_hidden, 4);
    EXPECT_EQ(cfg->mlp_ratio, 2);
    EXPECT_EQ(cfg->depth, 2);
    EXPECT_EQ(cfg->max_freqs, 3);

    s.markers = {"__x0__"};
    cfg = detect_radiance(open(s, "x0"), kDit);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_TRUE(cfg->x0);
    EXPECT_EQ(cfg->patch, 16);

    s.markers = {};
    s.kernel = 8;  // a 16 patch through an 8x8 kernel on the half-size image
    cfg = detect_radiance(open(s, "half"), kDit);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->patch, 16);
    EXPECT_TRUE(cfg->fake_patch_x2);

    s.markers = {"__32x32__", "__x0__"};
    s.kernel = 16;
    cfg = detect_radiance(open(s, "p32_half"), kDit);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->patch, 32);
    EXPECT_TRUE(cfg->fake_patch_x2);
    EXPECT_TRUE(cfg->x0);

    s.kernel = 32;
    cfg = detect_radiance(open(s, "p32"), kDit);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->patch, 32);
    EXPECT_FALSE(cfg->fake_patch_x2);
}

TEST_F(ChromaRadiance, ErrorsNameTheTensor) {
    Tiny s;
    s.kernel = 16;
    for (const std::string drop :
         {"img_in_patch.weight", "nerf_image_embedder.embedder.0.weight",
          "nerf_blocks.0.param_generator.weight", "nerf_blocks.1.norm.scale",
          "nerf_final_layer_conv.norm.scale", "nerf_final_layer_conv.conv.weight"}) {
        Tiny d = s;
        d.drop = drop;
        EXPECT_NE(error_of(d, "drop").find(kDit + drop), std::string::npos) << drop;
    }
    const std::map<std::string, std::vector<int64_t>> odd = {
        {"img_in_patch.weight", {8, 2, 12, 12}},                    // neither 16 nor 8
        {"nerf_image_embedder.embedder.0.weight", {4, 2 + 10}},     // 10 is not a square
        {"nerf_blocks.1.param_generator.weight", {3 * 16 * 3, 8}},  // another MLP ratio
        {"nerf_blocks.0.param_generator.weight", {3 * 16 * 2, 6}},  // not from the hidden width
        {"nerf_final_layer_conv.conv.weight", {3, 4, 3, 3}},        // not back to 2 channels
    };
    for (const auto& [name, shape] : odd) {
        Tiny d = s;
        d.reshape[name] = shape;
        EXPECT_NE(error_of(d, "odd").find(kDit + name), std::string::npos) << name;
    }
}

TEST_F(ChromaRadiance, DctTableFollowsTheFormula) {
    for (int patch : {16, 32, 3}) {
        const int freqs = 8, features = freqs * freqs;
        const std::vector<float> dct = radiance_dct(patch, freqs);
        ASSERT_EQ(dct.size(), static_cast<size_t>(patch * patch * features));
        double worst = 0.0;
        for (int row = 0; row < patch; ++row) {
            for (int col = 0; col < patch; ++col) {
                for (int fx = 0; fx < freqs; ++fx) {
                    for (int fy = 0; fy < freqs; ++fy) {
                        const double want = std::cos(kPi * fx * col / (patch - 1)) *
                                            std::cos(kPi * fy * row / (patch - 1)) /
                                            (1.0 + fx * fy);
                        const float got = dct[(row * patch + col) * features + fx * freqs + fy];
                        worst = std::max(worst, std::fabs(want - got));
                    }
                }
            }
        }
        EXPECT_LT(worst, 2e-6) << patch;
        // Corner checks: the first pixel has every cosine 1; the last column's first x
        // frequency is cos(pi) = -1, the last row's first y frequency too.
        EXPECT_FLOAT_EQ(dct[1 * freqs + 1], 0.5f);
        EXPECT_NEAR(dct[(patch - 1) * features + 1 * freqs + 0], -1.0f, 1e-6f);
        EXPECT_NEAR(dct[(patch - 1) * patch * features + 0 * freqs + 1], -1.0f, 1e-6f);
    }
}

// ---------------------------------------------------------------------------------------------
// The direct computation. Images are [W, H, C, N] with x fastest; weights torch-ordered.

struct Image {
    int64_t w, h, c, n;
    std::vector<double> v;
    double& at(int64_t x, int64_t y, int64_t ch, int64_t b) {
        return v[((b * c + ch) * h + y) * w + x];
    }
};

struct Direct {
    const Tiny& s;
    int p;
    bool half, x0;
    std::map<std::string, std::vector<float>> weights;

    explicit Direct(const Tiny& tiny, int patch, bool fake_x2, bool predicts_x0)
        : s(tiny), p(patch), half(fake_x2), x0(predicts_x0) {
        for (const auto& [name, shape] : shapes(s)) weights[name] = values(name, shape);
    }
    const std::vector<float>& w(const std::string& n) const { return weights.at(n); }

    // tokens [hidden][patch t][item b], t row-major over the patch grid.
    std::vector<double> patch_in(Image img) const {
        if (half) {  // 2x bilinear downscale at half-pixel centres: the 2x2 mean
            Image small{img.w / 2, img.h / 2, img.c, img.n, {}};
            small.v.assign(static_cast<size_t>(small.w * small.h * small.c * small.n), 0.0);
            for (int64_t b = 0; b < img.n; ++b)
                for (int64_t ch = 0; ch < img.c; ++ch)
                    for (int64_t y = 0; y < small.h; ++y)
                        for (int64_t x = 0; x < small.w; ++x)
                            small.at(x, y, ch, b) = 0.25 * (img.at(2 * x, 2 * y, ch, b) +
                                                            img.at(2 * x + 1, 2 * y, ch, b) +
                                                            img.at(2 * x, 2 * y + 1, ch, b) +
                                                            img.at(2 * x + 1, 2 * y + 1, ch, b));
            img = small;
        }
        const int64_t k = half ? p / 2 : p, gw = img.w / k, gh = img.h / k;
        const std::vector<float>& wt = w("img_in_patch.weight");
        const std::vector<float>& bias = w("img_in_patch.bias");
        std::vector<double> out(static_cast<size_t>(s.hidden * gw * gh * img.n));
        for (int64_t b = 0; b < img.n; ++b)
            for (int64_t t = 0; t < gw * gh; ++t)
                for (int64_t o = 0; o < s.hidden; ++o) {
                    double sum = bias[o];
                    for (int64_t ch = 0; ch < s.channels; ++ch)
                        for (int64_t ky = 0; ky < k; ++ky)
                            for (int64_t kx = 0; kx < k; ++kx)
                                sum += wt[((o * s.channels + ch) * k + ky) * k + kx] *
                                       img.at((t % gw) * k + kx, (t / gw) * k + ky, ch, b);
                    out[(b * gw * gh + t) * s.hidden + o] = sum;
                }
        return out;
    }

    static void rms(double* x, int64_t n, const std::vector<float>& scale) {
        double ss = 0.0;
        for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
        const double r = 1.0 / std::sqrt(ss / n + 1e-6);
        for (int64_t i = 0; i < n; ++i) x[i] *= r * scale[i];
    }

    Image head(const std::vector<double>& tokens, Image& img, const std::vector<double>& t) const {
        const int64_t gw = img.w / p, gh = img.h / p, nh = s.nh, wide = s.ratio * s.nh;
        const int64_t F = s.freqs * s.freqs, in = s.channels + F, K = nh * wide;
        Image feat{img.w, img.h, nh, img.n, {}};
        feat.v.assign(static_cast<size_t>(img.w * img.h * nh * img.n), 0.0);
        const std::vector<float>& ew = w("nerf_image_embedder.embedder.0.weight");
        const std::vector<float>& eb = w("nerf_image_embedder.embedder.0.bias");
        for (int64_t b = 0; b < img.n; ++b) {
            for (int64_t tk = 0; tk < gw * gh; ++tk) {
                const double* tok = &tokens[(b * gw * gh + tk) * s.hidden];
                // The blocks' generated matrices for this patch.
                std::vector<std::vector<double>> gate(s.depth), value(s.depth), down(s.depth);
                for (int64_t i = 0; i < s.depth; ++i) {
                    const std::string n = "nerf_blocks." + std::to_string(i) + ".param_generator.";
                    std::vector<double> prm(static_cast<size_t>(3 * K));
                    for (int64_t o = 0; o < 3 * K; ++o) {
                        double sum = w(n + "bias")[o];
                        for (int64_t j = 0; j < s.hidden; ++j)
                            sum += w(n + "weight")[o * s.hidden + j] * tok[j];
                        prm[o] = sum;
                    }
                    // gate/value [row j < nh][col < wide] = prm[j * wide + col], normalised over j;
                    // down [row < wide][col a < nh] = prm[2K + row * nh + a], normalised over row.
                    auto take = [&](int64_t off, int64_t rows, int64_t cols) {
                        std::vector<double> m(prm.begin() + off, prm.begin() + off + rows * cols);
                        for (int64_t col = 0; col < cols; ++col) {
                            double ss = 0.0;
                            for (int64_t r = 0; r < rows; ++r)
                                ss += m[r * cols + col] * m[r * cols + col];
                            const double d = std::max(std::sqrt(ss), 1e-12);
                            for (int64_t r = 0; r < rows; ++r) m[r * cols + col] /= d;
                        }
                        return m;
                    };
                    gate[i] = take(0, nh, wide);
                    value[i] = take(K, nh, wide);
                    down[i] = take(2 * K, wide, nh);
                }
                for (int64_t q = 0; q < p * p; ++q) {
                    const int64_t row = q / p, col = q % p;
                    const int64_t x = (tk % gw) * p + col, y = (tk / gw) * p + row;
                    std::vector<double> e(static_cast<size_t>(nh));
                    for (int64_t o = 0; o < nh; ++o) {
                        double sum = eb[o];
                        for (int64_t ch = 0; ch < s.channels; ++ch)
                            sum += ew[o * in + ch] * img.at(x, y, ch, b);
                        for (int64_t fx = 0; fx < s.freqs; ++fx)
                            for (int64_t fy = 0; fy < s.freqs; ++fy) {
                                const double code = std::cos(kPi * fx * col / (p - 1)) *
                                                    std::cos(kPi * fy * row / (p - 1)) /
                                                    (1.0 + fx * fy);
                                sum += ew[o * in + s.channels + fx * s.freqs + fy] * code;
                            }
                        e[o] = sum;
                    }
                    for (int64_t i = 0; i < s.depth; ++i) {
                        std::vector<double> xn = e;
                        rms(xn.data(), nh, w("nerf_blocks." + std::to_string(i) + ".norm.scale"));
                        std::vector<double> act(static_cast<size_t>(wide));
                        for (int64_t c = 0; c < wide; ++c) {
                            double g = 0.0, v = 0.0;
                            for (int64_t j = 0; j < nh; ++j) {
                                g += xn[j] * gate[i][j * wide + c];
                                v += xn[j] * value[i][j * wide + c];
                            }
                            act[c] = g / (1.0 + std::exp(-g)) * v;
                        }
                        for (int64_t a = 0; a < nh; ++a) {
                            double sum = 0.0;
                            for (int64_t c = 0; c < wide; ++c) sum += act[c] * down[i][c * nh + a];
                            e[a] += sum;
                        }
                    }
                    rms(e.data(), nh, w("nerf_final_layer_conv.norm.scale"));
                    for (int64_t o = 0; o < nh; ++o) feat.at(x, y, o, b) = e[o];
                }
            }
        }
        Image out{img.w, img.h, s.channels, img.n, {}};
        out.v.assign(static_cast<size_t>(img.w * img.h * s.channels * img.n), 0.0);
        const std::vector<float>& cw = w("nerf_final_layer_conv.conv.weight");
        const std::vector<float>& cb = w("nerf_final_layer_conv.conv.bias");
        for (int64_t b = 0; b < img.n; ++b)
            for (int64_t o = 0; o < s.channels; ++o)
                for (int64_t y = 0; y < img.h; ++y)
                    for (int64_t x = 0; x < img.w; ++x) {
                        double sum = cb[o];
                        for (int64_t i = 0; i < nh; ++i)
                            for (int64_t ky = 0; ky < 3; ++ky)
                                for (int64_t kx = 0; kx < 3; ++kx) {
                                    const int64_t sx = x + kx - 1, sy = y + ky - 1;
                                    if (sx < 0 || sy < 0 || sx >= img.w || sy >= img.h) continue;
                                    sum += cw[((o * nh + i) * 3 + ky) * 3 + kx] *
                                           feat.at(sx, sy, i, b);
                                }
                        out.at(x, y, o, b) = x0 ? (img.at(x, y, o, b) - sum) / t[b] : sum;
                    }
        return out;
    }
};

struct Run {
    HostTensor tokens, out;
};

// img_in_patch alone, and the head on its own tokens (standing in for the DiT's outputs).
Run run_graph(const TensorIndex& index, const RadianceConfig& cfg, int64_t hidden,
              const HostTensor& pixels, const HostTensor& t) {
    ModuleDevices where;
    ModuleRunner m(index, -1, where, 2, "Radiance");
    HostTensor dct({cfg.max_freqs * cfg.max_freqs, int64_t{cfg.patch} * cfg.patch});
    dct.data = radiance_dct(cfg.patch, static_cast<int>(cfg.max_freqs));
    auto build = [&](GraphBuilder& gb) {
        ggml_tensor* px = gb.input(pixels);
        ggml_tensor* tok = radiance_patch_in(gb.nn(), cfg, kDit, hidden, px);
        ggml_tensor* out = radiance_head(gb.nn(), cfg, kDit, hidden, tok, px, gb.input(dct),
                                         cfg.x0 ? gb.input(t) : nullptr);
        return std::vector<ggml_tensor*>{tok, out};
    };
    Status st = m.prepare(build);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok()) return {};
    auto out = m.run(build);
    EXPECT_TRUE(out.ok()) << out.status().message();
    if (!out.ok()) return {};
    return {(*out)[0], (*out)[1]};
}

double max_rel(const HostTensor& got, const std::vector<double>& want) {
    double scale = 1e-3, m = 0.0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    if (got.data.size() != want.size()) return 1e30;
    for (size_t i = 0; i < want.size(); ++i) m = std::max(m, std::fabs(got.data[i] - want[i]));
    return m / scale;
}

// The graph against the direct computation for a tiny layout with patch 4 (a 4x4 kernel, or 2x2
// on the half-size image), given to the graph directly (detection only knows 16 and 32), on a
// batch of two 12x8 images (3x2 patches) at different sigmas.
void compare(const TensorIndex& index, const Tiny& s, bool half, bool x0) {
    RadianceConfig cfg;
    cfg.patch = 4;
    cfg.fake_patch_x2 = half;
    cfg.x0 = x0;
    cfg.channels = s.channels;
    cfg.nerf_hidden = s.nh;
    cfg.mlp_ratio = s.ratio;
    cfg.depth = s.depth;
    cfg.max_freqs = s.freqs;
    const int64_t W = 12, H = 8, N = 2;
    HostTensor pixels({W, H, s.channels, N});
    for (size_t i = 0; i < pixels.data.size(); ++i) {
        pixels.data[i] = std::sin(0.37f * static_cast<float>(i)) + 0.2f * std::cos(1.3f * i);
    }
    HostTensor t({N});
    t.data = {0.8f, 0.35f};
    const Run got = run_graph(index, cfg, s.hidden, pixels, t);
    ASSERT_EQ(got.out.ne, (std::vector<int64_t>{W, H, s.channels, N}));
    ASSERT_EQ(got.tokens.ne, (std::vector<int64_t>{s.hidden, (W / 4) * (H / 4), N}));

    const Direct d(s, cfg.patch, half, x0);
    Image img{W, H, s.channels, N, std::vector<double>(pixels.data.begin(), pixels.data.end())};
    EXPECT_LT(max_rel(got.tokens, d.patch_in(img)), 1e-5);
    // The head from the graph's own tokens, so that both sides start from the same values.
    const std::vector<double> own(got.tokens.data.begin(), got.tokens.data.end());
    const Image want = d.head(own, img, {t.data[0], t.data[1]});
    EXPECT_LT(max_rel(got.out, want.v), 1e-4);
    double spread = 0.0;  // the output is not flat (so the comparison is not vacuous)
    for (double v : want.v) spread = std::max(spread, std::fabs(v - want.v[0]));
    EXPECT_GT(spread, 0.1);
}

TEST_F(ChromaRadiance, HeadMatchesADirectComputation) {
    for (bool half : {false, true}) {
        Tiny s;
        s.kernel = half ? 2 : 4;
        const TensorIndex index = open(s, half ? "half" : "full");
        for (bool x0 : {false, true}) {
            SCOPED_TRACE(std::string(half ? "half-size kernel" : "full kernel") +
                         (x0 ? ", x0" : ""));
            compare(index, s, half, x0);
        }
    }
}

}  // namespace
}  // namespace ggdiff::models
