// Helpers shared by the end-to-end suites (tests/golden, tests/cli): where the ggdiff binary,
// the fixture checkpoint and the shared data live, running the CLI as a child process with
// a timeout, comparing images and reading back their A1111 parameters.
//
// The fixture checkpoint is made once per build tree by the ctest fixture test
// `fixture_sd1_mc32` (tests/tools/ensure_fixture.cmake) at
// GGDIFF_BINARY_DIR/fixtures/sd1_mc32.safetensors; run the suites through ctest, or make
// it by hand with ../shared/tools/make_fixture.py (see the manifest's fixture.command).
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../support/scratch.h"
#include "image/image.h"
#include "image/image_io.h"
#include "image/image_metadata.h"
#include "image/infotext.h"

extern char** environ;

namespace ggdiff::e2e {

namespace fs = std::filesystem;

// Sets an environment variable (the child processes see it) and restores it when the scope
// ends, even on failure.
class ScopedEnv {
  public:
    ScopedEnv(const char* name, const std::string& value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (old_) {
            setenv(name_, old_->c_str(), 1);
        } else {
            unsetenv(name_);
        }
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

  private:
    const char* name_;
    std::optional<std::string> old_;
};

inline std::string binary_path() {
    return std::string(GGDIFF_BINARY_DIR) + "/ggdiff";
}
inline std::string shared_dir() {
    return std::string(GGDIFF_SHARED_DIR);
}
inline std::string golden_dir() {
    return shared_dir() + "/golden/sd1_mc32";
}
inline std::string manifest_path() {
    return golden_dir() + "/manifest.json";
}
inline std::string merges_path() {
    return shared_dir() + "/data/clip/merges.txt";
}
inline std::string fixture_path() {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/sd1_mc32.safetensors";
}
// Any fixture the ctest fixture tests make: GGDIFF_BINARY_DIR/fixtures/STEM.safetensors.
inline std::string built_fixture(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".safetensors";
}
// This repository's own golden set `suite` (tests/golden/SUITE).
inline std::string repo_suite_dir(const std::string& suite) {
    return std::string(GGDIFF_SOURCE_DIR) + "/tests/golden/" + suite;
}
// The split files of a family that runs FLUX.1's DiT on an LLM's text (LongCat-Image,
// Ovis-Image: fixtures `dit` and `llm`), FLUX.1's VAE and the synthetic Qwen2 tokenizer.
inline std::vector<std::string> llm_flux_args(const std::string& dit, const std::string& llm) {
    return {"--diffusion-model",
            built_fixture(dit),
            "--llm",
            built_fixture(llm),
            "--vae",
            built_fixture("flux_ae"),
            "--llm-tokenizer",
            shared_dir() + "/data/qwen2_synthetic"};
}

// A manifest as JSON; an empty object when it cannot be read.
inline nlohmann::json read_manifest(const std::string& path) {
    std::ifstream in(path);
    if (!in) return nlohmann::json::object();
    try {
        return nlohmann::json::parse(in);
    } catch (const std::exception&) {
        return nlohmann::json::object();
    }
}

inline nlohmann::json load_manifest() {
    return read_manifest(manifest_path());
}

inline double manifest_tolerance() {
    const nlohmann::json m = load_manifest();
    return m.value("/tolerance/mean_abs_diff_max"_json_pointer, 1.5);
}

// The golden suite in folder `dir` (its manifest.json): the tolerance, and the request
// arguments of case `id` with `@FILE` resolved to FILE in `dir` (empty when there is no such
// case).
inline double suite_tolerance(const std::string& dir) {
    return read_manifest(dir + "/manifest.json")
        .value("/tolerance/mean_abs_diff_max"_json_pointer, 1.5);
}
inline std::vector<std::string> suite_case_args(const std::string& dir, const std::string& id) {
    const nlohmann::json m = read_manifest(dir + "/manifest.json");
    for (const auto& c : m.value("cases", nlohmann::json::array())) {
        if (c.value("id", "") != id) continue;
        std::vector<std::string> args = c.value("args", std::vector<std::string>{});
        for (std::string& a : args) {
            if (!a.empty() && a[0] == '@') a = dir + "/" + a.substr(1);
        }
        return args;
    }
    return {};
}

// `args` (flag, value pairs) with the value of `flag` replaced by `file`, or the pair dropped
// when `file` is empty.
inline std::vector<std::string> with_flag_value(const std::vector<std::string>& args,
                                                const std::string& flag, const std::string& file) {
    std::vector<std::string> out;
    for (size_t i = 0; i + 1 < args.size(); i += 2) {
        if (args[i] != flag) {
            out.insert(out.end(), {args[i], args[i + 1]});
        } else if (!file.empty()) {
            out.insert(out.end(), {flag, file});
        }
    }
    return out;
}

// Records a failure (and returns false) unless the fixture and the binary exist.
inline bool prerequisites_ok() {
    bool ok = true;
    if (!fs::is_regular_file(binary_path())) {
        ADD_FAILURE() << "ggdiff binary not built: " << binary_path();
        ok = false;
    }
    if (!fs::is_regular_file(fixture_path())) {
        ADD_FAILURE() << "fixture checkpoint missing: " << fixture_path()
                      << "\nRun the suite through ctest (its fixture test fixture_sd1_mc32 makes "
                         "it), or: /usr/bin/python3 "
                      << shared_dir() << "/tools/make_fixture.py " << shared_dir()
                      << "/fixtures/sd1_mc32.tensors " << fixture_path() << " --seed 1";
        ok = false;
    }
    if (!fs::is_regular_file(merges_path())) {
        ADD_FAILURE() << "CLIP merges missing: " << merges_path();
        ok = false;
    }
    return ok;
}

// A fresh, empty directory under GGDIFF_TEST_TMP named after `name` (default: the running
// test's suite.name, with '/' folded), removed when the test passes (support/scratch.h).
inline std::string fresh_dir(std::string name = "") {
    if (name.empty()) {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        name = std::string(info->test_suite_name()) + "." + info->name();
    }
    std::replace(name.begin(), name.end(), '/', '_');
    return ggdiff::scratch::fresh(std::string(GGDIFF_TEST_TMP) + "/" + name);
}

inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// ---------------------------------------------------------------------------------------------
// Running the CLI

struct RunResult {
    std::vector<std::string> args;
    int exit_code = -1;   // when it exited
    int term_signal = 0;  // when a signal ended it (crash, or our timeout kill)
    bool timed_out = false;
    bool spawn_failed = false;
    double seconds = 0.0;
    std::string out;  // stdout
    std::string err;  // stderr

    bool succeeded() const { return !spawn_failed && term_signal == 0 && exit_code == 0; }
    // A deliberate error exit: a non-zero status, no signal (no crash, no abort), no hang.
    bool failed_cleanly() const {
        return !spawn_failed && !timed_out && term_signal == 0 && exit_code > 0;
    }
    std::string command_line() const {
        std::string s = binary_path();
        for (const auto& a : args) {
            s += ' ';
            const bool plain =
                !a.empty() && a.find_first_of(" \t\"'\\$&|;<>*?()") == std::string::npos;
            s += plain ? a : "'" + a + "'";
        }
        return s;
    }
    // For failure messages: the command, how it ended and its output.
    std::string describe() const {
        std::ostringstream os;
        os << "command: " << command_line() << "\n";
        if (spawn_failed) {
            os << "could not start the binary\n";
        } else if (timed_out) {
            os << "TIMED OUT after " << seconds << " s\n";
        } else if (term_signal != 0) {
            os << "killed by signal " << term_signal << " (" << strsignal(term_signal) << ")\n";
        } else {
            os << "exit code " << exit_code << " after " << seconds << " s\n";
        }
        auto tail = [](const std::string& s) {
            return s.size() > 4000 ? "..." + s.substr(s.size() - 4000) : s;
        };
        os << "--- stdout ---\n" << tail(out) << "\n--- stderr ---\n" << tail(err);
        return os.str();
    }
};

// Runs GGDIFF_BINARY_DIR/ggdiff with `args` (no shell), stdout and stderr captured in files
// under `log_dir`, killed after `timeout_s` seconds.
inline RunResult run_ggdiff(const std::vector<std::string>& args, const std::string& log_dir,
                            int timeout_s = 300) {
    static int counter = 0;
    RunResult r;
    r.args = args;
    fs::create_directories(log_dir);
    const std::string tag = log_dir + "/run" + std::to_string(counter++);
    const std::string out_path = tag + ".stdout";
    const std::string err_path = tag + ".stderr";

    std::vector<std::string> argv_store;
    argv_store.push_back(binary_path());
    argv_store.insert(argv_store.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_store) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const auto start = std::chrono::steady_clock::now();
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        r.spawn_failed = true;
        r.err = std::string("posix_spawn failed: ") + strerror(rc);
        return r;
    }
    int status = 0;
    const auto deadline = start + std::chrono::seconds(timeout_s);
    for (;;) {
        const pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0) {
            r.spawn_failed = true;
            break;
        }
        if (std::chrono::steady_clock::now() > deadline) {
            r.timed_out = true;
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
    r.out = read_text(out_path);
    r.err = read_text(err_path);
    return r;
}

// The arguments that point ggdiff at the fixture: -m FIXTURE. The fixture is a single file
// without tokenizer files (none beside it either), so the built-in CLIP vocabulary is used.
inline std::vector<std::string> model_args() {
    return {"-m", fixture_path()};
}

// The golden cases' usual request as CLI arguments: `prompt` at 64x64, `steps` euler steps
// at CFG `cfg`, seed 42.
inline std::vector<std::string> euler_request(
    int steps, const std::string& cfg = "7",
    const std::string& prompt = "a photograph of an astronaut riding a horse") {
    return {"-p",
            prompt,
            "-W",
            "64",
            "-H",
            "64",
            "--steps",
            std::to_string(steps),
            "--sampling-method",
            "euler",
            "--cfg-scale",
            cfg,
            "-s",
            "42"};
}

inline bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

inline std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// ---------------------------------------------------------------------------------------------
// Images

struct ImageDiff {
    bool ok = false;  // both read, same size
    std::string error;
    double mean_abs = 0.0;  // per channel, 0..255 scale
    int max_abs = 0;
};

// Mean/max absolute difference per channel like ../shared/tools/compare_images.py: RGB, or
// RGBA when the reference has alpha.
inline ImageDiff compare_images(const std::string& path, const std::string& reference_path) {
    ImageDiff d;
    auto a = read_image(path);
    if (!a.ok()) {
        d.error = a.status().message();
        return d;
    }
    auto b = read_image(reference_path);
    if (!b.ok()) {
        d.error = b.status().message();
        return d;
    }
    const int channels = (b->channels == 4 || b->channels == 2) ? 4 : 3;
    const Image x = a->channels == channels ? *a : convert_channels(*a, channels);
    const Image y = b->channels == channels ? *b : convert_channels(*b, channels);
    if (x.width != y.width || x.height != y.height) {
        d.error = "size differs: " + std::to_string(x.width) + "x" + std::to_string(x.height) +
                  " vs " + std::to_string(y.width) + "x" + std::to_string(y.height);
        return d;
    }
    double sum = 0.0;
    int mx = 0;
    for (size_t i = 0; i < x.pixels.size(); ++i) {
        const int diff = std::abs(static_cast<int>(x.pixels[i]) - static_cast<int>(y.pixels[i]));
        sum += diff;
        mx = std::max(mx, diff);
    }
    d.ok = true;
    d.mean_abs = x.pixels.empty() ? 0.0 : sum / static_cast<double>(x.pixels.size());
    d.max_abs = mx;
    return d;
}

// Image `a` is within `max_mean` (mean absolute difference) of `b`; prints the difference.
inline void expect_images_near(const std::string& a, const std::string& b, double max_mean,
                               const char* what) {
    const ImageDiff d = compare_images(a, b);
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, max_mean) << what << " (max " << d.max_abs << ")";
    std::printf("%s: mean_abs_diff %.3f\n", what, d.mean_abs);
}

// A request that must fail before any compute: `model` with a tiny image into `out`.
inline RunResult run_refused(const std::vector<std::string>& model, const std::string& out,
                             const std::string& log_dir) {
    std::vector<std::string> args = model;
    args.insert(args.end(), {"-p", "x", "-W", "64", "-H", "64", "-o", out});
    return run_ggdiff(args, log_dir, 120);
}

// ---------------------------------------------------------------------------------------------
// sd-cli arguments -> the settings an output's metadata must carry

struct ExpectedInfo {
    std::string prompt;
    std::string negative_prompt;
    int64_t seed = 42;
    int steps = 20;
    std::string sampler = "euler_a";  // CLI name; the metadata holds the A1111 name
    int width = 512;
    int height = 512;
    int batch = 1;
    std::optional<float> cfg_scale;
    std::string scheduler;          // "" = not given
    std::optional<float> strength;  // img2img only (-i given)
};

inline ExpectedInfo expected_from_args(const std::vector<std::string>& args) {
    ExpectedInfo e;
    for (size_t i = 0; i + 1 < args.size(); ++i) {
        const std::string& f = args[i];
        const std::string& v = args[i + 1];
        if (f == "-p" || f == "--prompt")
            e.prompt = v;
        else if (f == "-n" || f == "--negative-prompt")
            e.negative_prompt = v;
        else if (f == "-s" || f == "--seed")
            e.seed = std::stoll(v);
        else if (f == "--steps")
            e.steps = std::stoi(v);
        else if (f == "--sampling-method")
            e.sampler = v;
        else if (f == "-W" || f == "--width")
            e.width = std::stoi(v);
        else if (f == "-H" || f == "--height")
            e.height = std::stoi(v);
        else if (f == "-b" || f == "--batch-count")
            e.batch = std::stoi(v);
        else if (f == "--cfg-scale")
            e.cfg_scale = std::stof(v);
        else if (f == "--scheduler")
            e.scheduler = v;
        else if (f == "--strength")
            e.strength = std::stof(v);
    }
    const bool img2img = std::find(args.begin(), args.end(), "-i") != args.end() ||
                         std::find(args.begin(), args.end(), "--init-img") != args.end();
    if (img2img && !e.strength) e.strength = 0.75f;
    if (!img2img) e.strength.reset();
    // The hires fix writes its strength as a txt2img image's "Denoising strength" (A1111).
    const bool hires = std::find(args.begin(), args.end(), "--hires") != args.end();
    if (hires && !img2img) {
        e.strength = 0.7f;
        for (size_t i = 0; i + 1 < args.size(); ++i) {
            if (args[i] == "--hires-denoising-strength") e.strength = std::stof(args[i + 1]);
        }
    }
    return e;
}

}  // namespace ggdiff::e2e
