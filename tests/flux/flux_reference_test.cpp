// The ggml FLUX DiT and T5 encoder against an independent float64 numpy forward
// (tests/tools/flux_reference.py) on the flux_tiny fixture layouts (deterministic random
// weights from ../shared/tools/make_fixture.py): odd latent sizes (padding and cropping
// around the 2x2 patches), a batch of two with different timesteps and guidance, and a
// full 256-token T5 chunk (every relative-position bucket).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "io/tensor_index.h"
#include "families/flux/dit.h"
#include "models/te/t5.h"
#include "runtime/module_runner.h"

namespace ggdiff {
namespace {

namespace fs = std::filesystem;

const char* kPython = "/usr/bin/python3";

bool have_numpy() {
    return std::system((std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0;
}

// Makes (once per test binary run) the fixture file of a shared tensor list.
std::string fixture(const std::string& list, int seed) {
    const fs::path dir = fs::path(GGDIFF_TEST_TMP);
    fs::create_directories(dir);
    const fs::path out = dir / (list + ".safetensors");
    if (fs::exists(out)) return out.string();
    // ctest runs this binary's tests in parallel processes: each writes its own temporary
    // file and renames it into place (atomic), so none reads another's half-written file.
    const std::string tmp = out.string() + "." + std::to_string(getpid()) + ".tmp";
    const std::string cmd = std::string(kPython) + " " GGDIFF_SHARED_DIR "/tools/make_fixture.py " +
                            GGDIFF_SHARED_DIR "/fixtures/" + list + ".tensors " + tmp + " --seed " +
                            std::to_string(seed) + " >/dev/null";
    if (std::system(cmd.c_str()) != 0) return "";
    fs::rename(tmp, out);
    return out.string();
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

HostTensor random_tensor(std::vector<int64_t> ne, uint32_t seed, float scale = 1.0f) {
    HostTensor t(std::move(ne));
    std::mt19937 g(seed);
    std::normal_distribution<float> d(0.0f, scale);
    for (float& v : t.data) v = d(g);
    return t;
}

std::string shape_json(const std::vector<int64_t>& ggml_ne) {
    std::string s = "[";
    for (size_t i = ggml_ne.size(); i-- > 0;) s += std::to_string(ggml_ne[i]) + (i ? "," : "");
    return s + "]";
}

void expect_close(const std::vector<float>& ref, const std::vector<float>& got, double max_rel,
                  double mean_rel, const char* what) {
    ASSERT_EQ(ref.size(), got.size());
    double scale = 0, worst = 0, mean = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double d = std::fabs(double(ref[i]) - got[i]);
        scale = std::max(scale, std::fabs(double(ref[i])));
        worst = std::max(worst, d);
        mean += d / double(ref.size());
    }
    ASSERT_GT(scale, 0.0);
    std::printf("[ %s ] max |ref| %.4g, error max %.3g mean %.3g of scale\n", what, scale,
                worst / scale, mean / scale);
    EXPECT_LE(worst, max_rel * scale) << what;
    EXPECT_LE(mean, mean_rel * scale) << what;
}

// The DiT in `file` (detected with or without the guidance embedding) on a batch of two at an
// odd latent size against the numpy forward; `tag` names the scratch folder.
void check_dit(const std::string& file, bool guidance_embed, const std::string& tag) {
    TensorIndex index;
    ASSERT_TRUE(index.add(file, "model.diffusion_model.").ok());
    auto cfg = models::detect_flux(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->depth, 2);
    EXPECT_EQ(cfg->depth_single, 2);
    EXPECT_EQ(cfg->heads, 2);
    EXPECT_EQ(cfg->guidance_embed, guidance_embed);

    const int64_t n = 2, w = 7, h = 5, l = 6;
    HostTensor x = random_tensor({w, h, 16, n}, 1);
    HostTensor t({n});
    t.data = {0.93f, 0.41f};
    HostTensor context = random_tensor({cfg->context_dim, l, n}, 2);
    HostTensor y = random_tensor({cfg->vec_in_dim, n}, 3);
    HostTensor g({n});
    g.data = {3.5f, 5.0f};
    const models::FluxPositions pe = models::flux_positions(*cfg, w, h, l);

    ModuleRunner runner(index, -1, ModuleDevices{}, 2, "dit");
    auto build = [&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{models::build_flux(
            gb.nn(), *cfg, gb.input(x), gb.input(t), gb.input(context), gb.input(y),
            guidance_embed ? gb.input(g) : nullptr, gb.input(pe.cos), gb.input(pe.sin))};
    };
    ASSERT_TRUE(runner.prepare(build).ok());
    auto got = runner.run(build);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ((*got)[0].ne, x.ne);

    const fs::path dir = fs::path(GGDIFF_TEST_TMP) / tag;
    fs::create_directories(dir);
    write_raw(dir / "x.f32", x.data);
    write_raw(dir / "t.f32", t.data);
    write_raw(dir / "c.f32", context.data);
    write_raw(dir / "y.f32", y.data);
    write_raw(dir / "g.f32", g.data);
    std::ofstream(dir / "inputs.json")
        << "{\"x\":{\"file\":\"" << (dir / "x.f32").string() << "\",\"shape\":" << shape_json(x.ne)
        << "},\"t\":{\"file\":\"" << (dir / "t.f32").string() << "\",\"shape\":[" << n
        << "]},\"context\":{\"file\":\"" << (dir / "c.f32").string()
        << "\",\"shape\":" << shape_json(context.ne) << "},\"y\":{\"file\":\""
        << (dir / "y.f32").string() << "\",\"shape\":" << shape_json(y.ne)
        << "},\"guidance\":{\"file\":\"" << (dir / "g.f32").string() << "\",\"shape\":[" << n
        << "]}}\n";
    const std::string cmd =
        std::string(kPython) + " " GGDIFF_SOURCE_DIR "/tests/tools/flux_reference.py dit " + file +
        " '' " + (dir / "inputs.json").string() + " " + (dir / "ref.f32").string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    expect_close(read_floats(dir / "ref.f32"), (*got)[0].data, 2e-3, 2e-4, tag.c_str());
}

TEST(FluxReference, DitMatchesNumpyWithPaddingAndBatch) {
    if (!have_numpy()) GTEST_SKIP() << kPython << " with numpy is not available";
    const std::string file = fixture("flux_tiny_dit", 11);
    ASSERT_FALSE(file.empty());
    check_dit(file, true, "dit");
}

// The schnell layout: the same DiT without guidance_in.* (the guidance input is then unused).
TEST(FluxReference, SchnellDitMatchesNumpy) {
    if (!have_numpy()) GTEST_SKIP() << kPython << " with numpy is not available";
    const std::string file = fixture("flux_tiny_dit", 11);
    ASSERT_FALSE(file.empty());
    const std::string schnell = std::string(GGDIFF_TEST_TMP) + "/flux_tiny_schnell.safetensors";
    const std::string cmd = std::string(kPython) +
                            " " GGDIFF_SOURCE_DIR "/tests/tools/flux_layouts.py drop " + schnell +
                            " " + file + " guidance_in.";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    check_dit(schnell, false, "dit_schnell");
}

TEST(FluxReference, T5MatchesNumpyOverAFullChunk) {
    if (!have_numpy()) GTEST_SKIP() << kPython << " with numpy is not available";
    const std::string file = fixture("flux_tiny_t5", 13);
    ASSERT_FALSE(file.empty());
    TensorIndex index;
    ASSERT_TRUE(index.add(file, "text_encoders.t5xxl.").ok());
    auto cfg = models::detect_t5(index, "text_encoders.t5xxl.");
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->width, 64);
    EXPECT_EQ(cfg->heads, 1);
    EXPECT_EQ(cfg->layers, 2);
    EXPECT_EQ(cfg->ff, 128);

    const int64_t tn = 256;
    std::vector<int32_t> tokens(tn);
    std::mt19937 rng(5);
    for (int32_t& id : tokens) id = static_cast<int32_t>(rng() % 32128);
    const std::vector<int32_t> buckets = models::t5_relative_buckets(tn, cfg->buckets, 128);
    ModuleRunner runner(index, -1, ModuleDevices{}, 2, "t5");
    auto build = [&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{models::build_t5(
            gb.nn(), *cfg, gb.input_i32(tokens, {tn, 1}), gb.input_i32(buckets, {tn * tn}))};
    };
    ASSERT_TRUE(runner.prepare(build).ok());
    auto got = runner.run(build);
    ASSERT_TRUE(got.ok()) << got.status().message();

    const fs::path dir = fs::path(GGDIFF_TEST_TMP) / "t5";
    fs::create_directories(dir);
    write_raw(dir / "tokens.i32", tokens);
    std::ofstream(dir / "inputs.json")
        << "{\"tokens\":{\"file\":\"" << (dir / "tokens.i32").string() << "\",\"shape\":[" << tn
        << "],\"int\":true}}\n";
    const std::string cmd =
        std::string(kPython) + " " GGDIFF_SOURCE_DIR "/tests/tools/flux_reference.py t5 " + file +
        " '' " + (dir / "inputs.json").string() + " " + (dir / "ref.f32").string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    // ggml's CPU GELU reads an f16 table (as in stable-diffusion.cpp): ~2e-3 of scale at worst.
    expect_close(read_floats(dir / "ref.f32"), (*got)[0].data, 5e-3, 2e-4, "T5");
}

TEST(FluxReference, T5BucketsFollowTheBidirectionalLogScheme) {
    const std::vector<int32_t> b = models::t5_relative_buckets(300, 32, 128);
    auto at = [&](int q, int k) { return b[static_cast<size_t>(q * 300 + k)]; };
    EXPECT_EQ(at(10, 10), 0);
    EXPECT_EQ(at(10, 13), 16 + 3);  // keys after the query use the upper half
    EXPECT_EQ(at(13, 10), 3);
    EXPECT_EQ(at(0, 8), 16 + 8);  // first logarithmic bucket
    EXPECT_EQ(at(0, 127), 16 + 15);
    EXPECT_EQ(at(299, 0), 15);  // far past max_distance: the last bucket
}

}  // namespace
}  // namespace ggdiff
