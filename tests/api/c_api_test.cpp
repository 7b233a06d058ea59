// The C API (include/ggdiff.h) as a C caller uses it: options by name, errors as codes
// with a message, a real generation on the SD1 fixture.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "ggdiff.h"

namespace {

const std::string kFixture = GGDIFF_BINARY_DIR "/fixtures/sd1_mc32.safetensors";

struct Options {
    ggdiff_options* o = ggdiff_options_new();
    ~Options() { ggdiff_options_free(o); }
    int set(const char* k, const std::string& v) { return ggdiff_options_set(o, k, v.c_str()); }
};

// The SD1 fixture (built-in CLIP vocabulary); nullptr (and a test failure) if it won't load.
ggdiff_model* load_fixture() {
    Options opts;
    EXPECT_EQ(opts.set("model", kFixture), 0);
    ggdiff_model* model = nullptr;
    EXPECT_EQ(ggdiff_model_load(opts.o, &model), 0) << ggdiff_last_error();
    return model;
}

// A 64x64, 2-step euler request.
void tiny_request(Options& gen, const char* prompt, const char* seed, const char* batch) {
    gen.set("prompt", prompt);
    gen.set("width", "64");
    gen.set("height", "64");
    gen.set("steps", "2");
    gen.set("sampling-method", "euler");
    gen.set("seed", seed);
    gen.set("batch-count", batch);
}

TEST(CApi, VersionAndDevices) {
    EXPECT_STRNE(ggdiff_version(), "");
    char* text = nullptr;
    ASSERT_EQ(ggdiff_list_devices(nullptr, &text), 0) << ggdiff_last_error();
    ASSERT_NE(text, nullptr);
    EXPECT_NE(std::string(text).find("CPU\t"), std::string::npos) << text;
    std::free(text);
}

// What the helper apps use: the default thread count, indexing files without loading them
// (ggdiff-bench --index-only), and the RPC server's refusals (ggdiff-rpc; serving itself is
// tested through the worker in tests/rpc).
TEST(CApi, HelperAppCalls) {
    EXPECT_GE(ggdiff_default_threads(), 1);

    const char* files[] = {kFixture.c_str()};
    int64_t tensors = 0;
    ASSERT_EQ(ggdiff_index_files(files, 1, &tensors), 0) << ggdiff_last_error();
    EXPECT_EQ(tensors, 1130);  // the SD1 fixture's tensor list
    const char* missing[] = {"/nonexistent/x.safetensors"};
    EXPECT_NE(ggdiff_index_files(missing, 1, &tensors), 0);
    EXPECT_NE(std::string(ggdiff_last_error()).find("/nonexistent/x.safetensors"),
              std::string::npos)
        << ggdiff_last_error();

    const char* devices[] = {"NoSuchGPU"};
    bool served = false;
    EXPECT_NE(ggdiff_rpc_serve(
                  "127.0.0.1:1", devices, 1, 1, nullptr,
                  [](const char*, void* user) { *static_cast<bool*>(user) = true; }, &served),
              0);
    EXPECT_NE(std::string(ggdiff_last_error()).find("unknown device \"NoSuchGPU\""),
              std::string::npos)
        << ggdiff_last_error();
    EXPECT_NE(ggdiff_rpc_serve("127.0.0.1:1", nullptr, 0, 0, nullptr, nullptr, nullptr), 0);
    EXPECT_NE(ggdiff_rpc_serve("", nullptr, 0, 1, nullptr, nullptr, nullptr), 0);
    EXPECT_FALSE(served);
}

TEST(CApi, UnknownOptionAndBadValuesAreNamed) {
    Options opts;
    EXPECT_NE(opts.set("no-such-option", "1"), 0);
    EXPECT_NE(std::string(ggdiff_last_error()).find("no-such-option"), std::string::npos);
    EXPECT_NE(opts.set("steps", "abc"), 0);
    EXPECT_NE(std::string(ggdiff_last_error()).find("steps"), std::string::npos);
    EXPECT_NE(opts.set("steps", "0"), 0);
    EXPECT_NE(opts.set("cfg-scale", "nan"), 0);
    EXPECT_NE(opts.set("vae-tiling", "maybe"), 0);
    EXPECT_EQ(opts.set("steps", "4"), 0);
    EXPECT_EQ(ggdiff_options_set(nullptr, "steps", "4") != 0, true);
}

TEST(CApi, LoadErrorsNameTheProblem) {
    Options missing;
    missing.set("model", "/nonexistent/model.safetensors");
    ggdiff_model* m = nullptr;
    EXPECT_NE(ggdiff_model_load(missing.o, &m), 0);
    EXPECT_EQ(m, nullptr);
    EXPECT_NE(std::string(ggdiff_last_error()).find("/nonexistent/model.safetensors"),
              std::string::npos)
        << ggdiff_last_error();

    // A bad placement spec is refused before the (missing) file is looked at.
    Options bad_spec;
    bad_spec.set("model", "/nonexistent/model.safetensors");
    bad_spec.set("backend", "diffusion=NOSUCHDEV");
    EXPECT_NE(ggdiff_model_load(bad_spec.o, &m), 0);
    EXPECT_NE(std::string(ggdiff_last_error()).find("NOSUCHDEV"), std::string::npos)
        << ggdiff_last_error();
}

// Output files are checked before any image exists, and a model says how many images a
// request makes (one per batch item on SD1).
TEST(CApi, OutputChecksBeforeGenerating) {
    std::filesystem::create_directories(GGDIFF_TEST_TMP);
    EXPECT_EQ(ggdiff_image_check_path(GGDIFF_TEST_TMP "/new.png"), 0) << ggdiff_last_error();
    EXPECT_NE(ggdiff_image_check_path(GGDIFF_TEST_TMP "/new.xyz"), 0);
    EXPECT_NE(std::string(ggdiff_last_error()).find("'.xyz'"), std::string::npos)
        << ggdiff_last_error();
    EXPECT_NE(ggdiff_image_check_path("/dev/full"), 0);
    EXPECT_NE(ggdiff_image_check_path("/nonexistent/out.png"), 0);
    EXPECT_NE(ggdiff_image_check_path(nullptr), 0);

    ggdiff_model* model = load_fixture();
    ASSERT_NE(model, nullptr);
    Options gen;
    tiny_request(gen, "x", "1", "3");
    int count = 0;
    EXPECT_EQ(ggdiff_image_count(model, gen.o, &count), 0) << ggdiff_last_error();
    EXPECT_EQ(count, 3);
    EXPECT_NE(ggdiff_image_count(model, gen.o, nullptr), 0);
    ggdiff_model_free(model);
}

int count_calls(const char* phase, int step, int total, double, void* user) {
    auto* seen = static_cast<std::vector<std::string>*>(user);
    seen->push_back(std::string(phase) + " " + std::to_string(step) + "/" + std::to_string(total));
    return 1;
}

int cancel_at_first_step(const char* phase, int, int, double, void*) {
    return std::string(phase).rfind("sampling", 0) == 0 ? 0 : 1;
}

TEST(CApi, GeneratesAndCancels) {
    ggdiff_model* model = load_fixture();
    ASSERT_NE(model, nullptr);
    Options gen;
    tiny_request(gen, "a photograph of an astronaut riding a horse", "5", "2");
    std::vector<std::string> seen;
    ggdiff_image* images = nullptr;
    int n = 0;
    ASSERT_EQ(ggdiff_generate(model, gen.o, count_calls, &seen, &images, &n), 0)
        << ggdiff_last_error();
    ASSERT_EQ(n, 2);
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ(images[i].width, 64);
        EXPECT_EQ(images[i].height, 64);
        EXPECT_EQ(images[i].channels, 3);
        EXPECT_EQ(images[i].seed, 5 + i);
        ASSERT_NE(images[i].parameters, nullptr);
        EXPECT_NE(std::string(images[i].parameters).find("Seed: " + std::to_string(5 + i)),
                  std::string::npos)
            << images[i].parameters;
    }
    bool saw_step = false;
    for (const std::string& s : seen) saw_step |= s.rfind("sampling", 0) == 0;
    EXPECT_TRUE(saw_step);
    ggdiff_images_free(images, n);

    // A progress callback returning 0 cancels with an error, and the model stays usable.
    images = nullptr;
    n = 0;
    EXPECT_EQ(ggdiff_generate(model, gen.o, cancel_at_first_step, nullptr, &images, &n), 1);
    EXPECT_NE(std::string(ggdiff_last_error()).find("cancel"), std::string::npos)
        << ggdiff_last_error();
    EXPECT_EQ(n, 0);

    // An option this model cannot take (a Wan VACE strength for SD1) is only found when
    // generating: GGDIFF_ERROR_INPUT, the caller's error, before any compute.
    {
        Options vace;
        ggdiff_options_free(vace.o);
        vace.o = ggdiff_options_clone(gen.o);
        ASSERT_EQ(vace.set("vace-strength", "0.5"), 0) << ggdiff_last_error();
        seen.clear();
        EXPECT_EQ(ggdiff_generate(model, vace.o, count_calls, &seen, &images, &n),
                  GGDIFF_ERROR_INPUT);
        EXPECT_NE(std::string(ggdiff_last_error()).find("--vace-strength"), std::string::npos)
            << ggdiff_last_error();
        EXPECT_TRUE(seen.empty());
        EXPECT_EQ(n, 0);
    }

    // A bad value is refused when set; the options keep the last good one.
    gen.set("batch-count", "1");
    EXPECT_NE(gen.set("width", "60"), 0);  // not a multiple of 8
    EXPECT_NE(std::string(ggdiff_last_error()).find("60"), std::string::npos);
    EXPECT_EQ(ggdiff_generate(model, gen.o, nullptr, nullptr, &images, &n), 0)
        << ggdiff_last_error();
    ASSERT_EQ(n, 1);
    EXPECT_EQ(images[0].width, 64);
    ggdiff_images_free(images, n);
    ggdiff_model_free(model);
}

}  // namespace

namespace {

struct Collected {
    std::vector<int64_t> seeds;
};

void collect(const ggdiff_image* image, int index, void* user) {
    auto* c = static_cast<Collected*>(user);
    EXPECT_EQ(index, static_cast<int>(c->seeds.size()));
    EXPECT_EQ(image->width, 64);
    EXPECT_NE(image->parameters, nullptr);
    c->seeds.push_back(image->seed);
}

// Cancels during the second image's sampling.
int cancel_second_image(const char* phase, int, int, double, void*) {
    return std::string(phase).rfind("sampling 2/", 0) == 0 ? 0 : 1;
}

TEST(CApi, FinishedImagesSurviveALaterCancel) {
    ggdiff_model* model = load_fixture();
    ASSERT_NE(model, nullptr);
    Options gen;
    tiny_request(gen, "two cats sleeping", "100", "2");
    Collected c;
    EXPECT_NE(ggdiff_generate_each(
                  model, gen.o, cancel_second_image,
                  [](const ggdiff_image* i, int k, void* u) { collect(i, k, u); }, &c),
              0);
    ASSERT_EQ(c.seeds.size(), 1u);  // the first image was handed over before the cancel
    EXPECT_EQ(c.seeds[0], 100);
    ggdiff_model_free(model);
}

}  // namespace

namespace {

// The peak resident set of each phase of the last generation (ggdiff_last_generation_stats).
std::vector<double> phase_peaks_mib(const ggdiff_model* model) {
    char* json = nullptr;
    EXPECT_EQ(ggdiff_last_generation_stats(model, &json), 0) << ggdiff_last_error();
    std::vector<double> out;
    if (!json) return out;
    const std::string text = json;
    std::free(json);
    const std::regex peak(R"re("peak_rss_mib"\s*:\s*([0-9.eE+-]+))re");
    for (std::sregex_iterator it(text.begin(), text.end(), peak), end; it != end; ++it) {
        out.push_back(std::stod((*it)[1].str()));
    }
    return out;
}

// "phase-peaks" makes each phase report its own peak: after the process has once held far more
// than a generation of the built-in model needs, the phases report that whole-run peak without
// the option, and their own, far lower, with it.
TEST(CApi, PhasePeaksOptionMeasuresEachPhaseAlone) {
    {
        std::ofstream clear("/proc/self/clear_refs");
        clear << "5";
        clear.flush();
        if (!clear) GTEST_SKIP() << "the kernel does not let this process reset its peak";
    }
    const char* builtin = ggdiff_default_model();
    ASSERT_NE(builtin, nullptr) << ggdiff_last_error();
    Options load;
    ggdiff_model* model = nullptr;
    ASSERT_EQ(ggdiff_model_load(load.o, &model), 0) << ggdiff_last_error();
    // Hold 512 MiB for a moment (a toy generation needs far less): the high-water mark stays
    // there.
    constexpr size_t kBig = size_t(512) << 20;
    {
        std::vector<char> big(kBig, 1);
        volatile char sink = big[kBig / 2];
        (void)sink;
    }
    Options gen;
    tiny_request(gen, "a red circle", "3", "1");
    ggdiff_image* images = nullptr;
    int n = 0;
    ASSERT_EQ(ggdiff_generate(model, gen.o, nullptr, nullptr, &images, &n), 0)
        << ggdiff_last_error();
    ggdiff_images_free(images, n);
    const std::vector<double> whole = phase_peaks_mib(model);
    ASSERT_GE(whole.size(), 3u);
    for (double p : whole) EXPECT_GE(p, 512.0) << "without phase-peaks: the peak so far";

    ASSERT_EQ(gen.set("phase-peaks", "on"), 0) << ggdiff_last_error();
    ASSERT_EQ(ggdiff_generate(model, gen.o, nullptr, nullptr, &images, &n), 0)
        << ggdiff_last_error();
    ggdiff_images_free(images, n);
    const std::vector<double> own = phase_peaks_mib(model);
    ASSERT_EQ(own.size(), whole.size());
    for (double p : own) EXPECT_LT(p, 512.0) << "with phase-peaks: the phase's own peak";
    ggdiff_model_free(model);
}

}  // namespace
