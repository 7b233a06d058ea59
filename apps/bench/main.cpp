// ggdiff-bench: times one generation (or just opening a checkpoint) and prints the
// figures as JSON on stdout, so runs can be compared one against another.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ggdiff.h"

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

double peak_rss_mib() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;  // Linux reports KiB
}

struct Phases {
    std::map<std::string, double> last_secs;
    std::vector<double> step_ends;
};

int on_progress(const char* phase, int step, int total, double secs, void* user) {
    auto* p = static_cast<Phases*>(user);
    const std::string name(phase);
    p->last_secs[name.rfind("sampling", 0) == 0 ? "sampling" : name] = secs;
    if (name.rfind("sampling", 0) == 0) p->step_ends.push_back(secs);
    (void)step;
    (void)total;
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"ggdiff-bench: time a generation and print the figures as JSON"};
    std::vector<std::string> index_only;
    std::map<std::string, std::string> opts;
    std::vector<std::pair<std::string, std::string>> flags = {
        {"-m,--model", "model"},
        {"--diffusion-model", "diffusion-model"},
        {"--vae", "vae"},
        {"--clip_l", "clip_l"},
        {"--t5xxl", "t5xxl"},
        {"--tokenizer", "tokenizer"},
        {"--llm", "llm"},
        {"--llm-tokenizer", "llm-tokenizer"},
        {"--qwen-image-layers", "qwen-image-layers"},
        {"--t5xxl-tokenizer", "t5xxl-tokenizer"},
        {"--guidance", "guidance"},
        {"-p,--prompt", "prompt"},
        {"-n,--negative-prompt", "negative-prompt"},
        {"-W,--width", "width"},
        {"-H,--height", "height"},
        {"--steps", "steps"},
        {"--cfg-scale", "cfg-scale"},
        {"--sampling-method", "sampling-method"},
        {"--scheduler", "scheduler"},
        {"-s,--seed", "seed"},
        {"-t,--threads", "threads"},
        {"--type", "type"},
        {"--backend", "backend"},
        {"--params-backend", "params-backend"},
        {"--max-vram", "max-vram"},
        {"--rpc-servers", "rpc-servers"},
        {"-b,--batch-count", "batch-count"},
        {"--lora-model-dir", "lora-model-dir"},
        {"--lora-apply-mode", "lora-apply-mode"},
    };
    for (const auto& [flag, name] : flags) {
        app.add_option_function<std::string>(
            flag, [&opts, n = name](const std::string& v) { opts[n] = v; }, "as for ggdiff");
    }
    app.add_flag_function(
        "--stream-layers", [&opts](int64_t) { opts["stream-layers"] = "true"; }, "as for ggdiff");
    app.add_option("--index-only", index_only,
                   "only open and index these checkpoint files (no compute)");
    bool no_sgemm = false;
    app.add_flag("--no-sgemm", no_sgemm,
                 "skip measuring the machine's f32 product rate (sgemm_gflop_per_second: null)");
    CLI11_PARSE(app, argc, argv);

    if (!index_only.empty()) {
        auto t0 = Clock::now();
        std::vector<const char*> paths;
        for (const std::string& f : index_only) paths.push_back(f.c_str());
        int64_t tensors = 0;
        if (ggdiff_index_files(paths.data(), static_cast<int>(paths.size()), &tensors) != 0) {
            std::fprintf(stderr, "error: %s\n", ggdiff_last_error());
            return 1;
        }
        std::printf("{\"index_seconds\": %.6f, \"tensors\": %lld, \"peak_rss_mib\": %.1f}\n",
                    since(t0), static_cast<long long>(tensors), peak_rss_mib());
        return 0;
    }

    ggdiff_options* o = ggdiff_options_new();
    for (const auto& [k, v] : opts) {
        if (ggdiff_options_set(o, k.c_str(), v.c_str()) != 0) {
            std::fprintf(stderr, "error: %s\n", ggdiff_last_error());
            return 1;
        }
    }
    // Each phase's own peak resident set (see ggdiff_last_generation_stats); the process's
    // peak is then the largest of them, as getrusage no longer sees the earlier ones.
    setenv("GGDIFF_PHASE_PEAKS", "1", 1);
    auto t0 = Clock::now();
    ggdiff_model* model = nullptr;
    if (ggdiff_model_load(o, &model) != 0) {
        std::fprintf(stderr, "error: %s\n", ggdiff_last_error());
        return 1;
    }
    const double load = since(t0);
    const double load_peak = peak_rss_mib();
    Phases phases;
    ggdiff_image* images = nullptr;
    int n = 0;
    auto t1 = Clock::now();
    if (ggdiff_generate(model, o, on_progress, &phases, &images, &n) != 0) {
        std::fprintf(stderr, "error: %s\n", ggdiff_last_error());
        return 1;
    }
    const double total = since(t1);
    // Per-step times from the cumulative progress reports (they restart for each image of
    // a batch); mean and fastest over all of them.
    std::vector<double> step_secs;
    double prev = 0.0;
    for (const double end : phases.step_ends) {
        if (end < prev) prev = 0.0;  // next batch image
        step_secs.push_back(end - prev);
        prev = end;
    }
    std::string steps = "[";
    double sum = 0.0, fastest = 0.0;
    for (size_t i = 0; i < step_secs.size(); ++i) {
        steps += (i ? ", " : "") + std::to_string(step_secs[i]);
        sum += step_secs[i];
        fastest = i == 0 ? step_secs[i] : std::min(fastest, step_secs[i]);
    }
    steps += "]";
    const double mean = step_secs.empty() ? 0.0 : sum / static_cast<double>(step_secs.size());

    // Per phase: seconds, GFLOP computed and the rate, the phase's own peak resident set; and
    // the machine's f32 product rate with the same threads, for the distance to the limit.
    char* stats_text = nullptr;
    std::string phase_json = "[]";
    double peak = std::max(load_peak, peak_rss_mib());
    if (ggdiff_last_generation_stats(model, &stats_text) == 0) {
        const nlohmann::json stats = nlohmann::json::parse(stats_text);
        std::free(stats_text);
        nlohmann::json out = nlohmann::json::array();
        for (const auto& ph : stats["phases"]) {
            nlohmann::json row = ph;
            const double secs = ph["seconds"].get<double>();
            row["gflop_per_second"] = secs > 0 ? ph["gflop"].get<double>() / secs : 0.0;
            peak = std::max(peak, ph["peak_rss_mib"].get<double>());
            out.push_back(row);
        }
        phase_json = out.dump();
    }
    const int threads =
        opts.count("threads") ? std::stoi(opts["threads"]) : ggdiff_default_threads();
    double sgemm = 0.0;
    std::string sgemm_json = "null";
    if (!no_sgemm && ggdiff_measure_sgemm(threads, 1024, &sgemm) == 0) {
        sgemm_json = std::to_string(sgemm);
    }
    std::printf(
        "{\"load_seconds\": %.3f, \"text_seconds\": %.3f, \"encode_seconds\": %.3f, "
        "\"sampling_seconds\": %.3f, \"step_seconds\": %s, \"mean_step_seconds\": %.3f, "
        "\"min_step_seconds\": %.3f, \"vae_decode_seconds\": %.3f, \"lora_seconds\": %.3f, "
        "\"generate_seconds\": %.3f, \"images\": %d, \"peak_rss_mib\": %.1f, "
        "\"phases\": %s, \"sgemm_gflop_per_second\": %s, \"threads\": %d}\n",
        load, phases.last_secs["text"], phases.last_secs["encode"], sum, steps.c_str(), mean,
        fastest, phases.last_secs["decode"], phases.last_secs["lora"], total, n, peak,
        phase_json.c_str(), sgemm_json.c_str(), threads);
    ggdiff_images_free(images, n);
    ggdiff_model_free(model);
    ggdiff_options_free(o);
    return 0;
}
