// ggdiff-bench's command line; see bench_options.h.
#include "bench_options.h"

#include "schema_flags.h"

namespace ggdiff::bench {

bool bench_takes(const ggdiff_option_desc& d) {
    return apps::is_engine_option(d);
}

bool parse_bench_args(int argc, const char* const* argv, BenchArgs& out, std::string& error) {
    out = BenchArgs{};
    out.options.reset(ggdiff_options_new());
    CLI::App app(
        "ggdiff-bench: time one generation (or just opening checkpoints) and print the figures "
        "as JSON. Takes ggdiff's model, device and generation flags.",
        "ggdiff-bench");
    out.version_text = std::string("ggdiff-bench ") + ggdiff_version();
    apps::add_help_and_version(app, out.version_text);
    app.formatter(std::make_shared<apps::WrappingFormatter>());
    // The bench's own flags, then the engine's from the schema.
    app.add_option("--index-only", out.index_only,
                   "Only open and index these checkpoint files (no compute): index_seconds, "
                   "tensors, peak_rss_mib")
        ->type_name("PATH")
        ->group("Benchmark");
    app.add_flag("--no-sgemm", out.no_sgemm,
                 "Skip measuring the machine's f32 product rate (sgemm_gflop_per_second: null)")
        ->group("Benchmark");
    std::string set_error;
    apps::add_schema_flags(app, out.options.get(), set_error, bench_takes);
    out.help_text = app.help();

    switch (apps::parse_command_line(app, argc, argv, set_error, error)) {
        case apps::ParseOutcome::help:
            out.action = BenchAction::help;
            return true;
        case apps::ParseOutcome::version:
            out.action = BenchAction::version;
            return true;
        case apps::ParseOutcome::error:
            return false;
        case apps::ParseOutcome::run:
            break;
    }
    // Each phase's own peak resident set (see ggdiff_last_generation_stats); the process's
    // peak is then the largest of them, as getrusage no longer sees the earlier ones.
    if (ggdiff_options_is_set(out.options.get(), "phase-peaks") != 1 &&
        ggdiff_options_set(out.options.get(), "phase-peaks", "on") != 0) {
        error = ggdiff_last_error();
        return false;
    }
    return true;
}

}  // namespace ggdiff::bench
