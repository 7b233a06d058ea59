// ggdiff-bench: times one generation (or just opening a checkpoint) and prints the
// figures as JSON on stdout, so runs can be compared one against another. Its flags are
// ggdiff's model, device and generation flags (from the option schema) plus its own
// (bench_options.h).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_options.h"
#include "ggdiff.h"
#include "huge_pages_exec.h"

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
    ggdiff::app::restart_with_huge_pages(argv);
    ggdiff::bench::BenchArgs args;
    std::string error;
    if (!ggdiff::bench::parse_bench_args(argc, argv, args, error)) {
        std::fprintf(stderr, "error: %s (see ggdiff-bench --help)\n", error.c_str());
        return 2;
    }
    if (args.action == ggdiff::bench::BenchAction::help) {
        std::fputs(args.help_text.c_str(), stdout);
        return 0;
    }
    if (args.action == ggdiff::bench::BenchAction::version) {
        std::printf("%s\n", args.version_text.c_str());
        return 0;
    }

    if (!args.index_only.empty()) {
        auto t0 = Clock::now();
        std::vector<const char*> paths;
        for (const std::string& f : args.index_only) paths.push_back(f.c_str());
        int64_t tensors = 0;
        if (ggdiff_index_files(paths.data(), static_cast<int>(paths.size()), &tensors) != 0) {
            std::fprintf(stderr, "error: %s\n", ggdiff_last_error());
            return 1;
        }
        std::printf("{\"index_seconds\": %.6f, \"tensors\": %lld, \"peak_rss_mib\": %.1f}\n",
                    since(t0), static_cast<long long>(tensors), peak_rss_mib());
        return 0;
    }

    ggdiff_options* o = args.options.get();
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
    // The threads the generation used ("threads" <= 0: the physical cores).
    int64_t threads_set = 0;
    ggdiff_options_get_int(o, "threads", &threads_set);
    const int threads = threads_set > 0 ? static_cast<int>(threads_set) : ggdiff_default_threads();
    double sgemm = 0.0;
    std::string sgemm_json = "null";
    if (!args.no_sgemm && ggdiff_measure_sgemm(threads, 1024, &sgemm) == 0) {
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
    return 0;
}
