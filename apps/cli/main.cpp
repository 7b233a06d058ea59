// ggdiff: the command-line front end (sd-cli compatible flags).
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "api/api_options.h"
#include "cli_options.h"
#include "core/log.h"
#include "ggdiff.h"
#include "modes.h"

namespace {

int progress_bar(const char* phase, int step, int total, double secs, void*) {
    ggdiff::cli::print_progress(phase, step, total, secs);
    return 1;
}

// out.png, out_1.png, out_2.png, ... (or base_N from --output-begin-idx).
std::string output_name(const std::string& output, int index, int begin_idx) {
    if (begin_idx < 0 && index == 0) return output;
    std::filesystem::path p(output);
    const int n = begin_idx < 0 ? index : begin_idx + index;
    std::string name = p.stem().string() + "_" + std::to_string(n) + p.extension().string();
    return (p.parent_path() / name).string();
}

// The output folder must exist before minutes are spent generating into it.
bool output_folder_ok(const std::string& output) {
    std::filesystem::path dir = std::filesystem::path(output).parent_path();
    if (dir.empty()) return true;
    std::error_code ec;
    if (std::filesystem::is_directory(dir, ec)) return true;
    std::fprintf(stderr, "error: -o %s: the folder %s does not exist\n", output.c_str(),
                 dir.string().c_str());
    return false;
}

struct SaveState {
    const ggdiff::cli::CliOptions* cli;
    int failures;
};

void save_each(const ggdiff_image* image, int index, void* user) {
    auto* st = static_cast<SaveState*>(user);
    const std::string path = output_name(st->cli->output, index, st->cli->output_begin_idx);
    if (!ggdiff::cli::save_image(*image, path, !st->cli->disable_image_metadata)) {
        st->failures++;
        return;
    }
    std::fprintf(stderr, "saved %s (seed %lld)\n", path.c_str(),
                 static_cast<long long>(image->seed));
}

int generate(const ggdiff::cli::CliOptions& cli) {
    if (!cli.fit_dry_run && !output_folder_ok(cli.output)) return 1;
    ggdiff_options* o = ggdiff_options_new();
    auto set = [&](const std::string& name, const std::string& value) {
        if (ggdiff_options_set(o, name.c_str(), value.c_str()) != 0) {
            std::fprintf(stderr, "error: %s\n", ggdiff_last_error());
            return false;
        }
        return true;
    };
    // Every generation/model flag the user gave goes to the library as typed.
    for (const auto& [flag, value] : cli.given) {
        const std::string name = flag.substr(2);
        if (name == "ref-image") continue;  // repeatable: each one below
        if (ggdiff::is_api_option(name) && !set(name, value)) return 1;
    }
    for (const std::string& ref : cli.ref_images) {
        if (!set("ref-image", ref)) return 1;
    }
    // Values the CLI resolved itself.
    if (!set("prompt", cli.prompt) || !set("negative-prompt", cli.negative_prompt)) return 1;
    int64_t seed = cli.seed;
    if (seed < 0) seed = static_cast<int64_t>(std::time(nullptr)) & 0x7fffffff;
    if (!set("seed", std::to_string(seed))) return 1;
    if (cli.clip_on_cpu && !set("clip-on-cpu", "true")) return 1;
    if (cli.vae_on_cpu && !set("vae-on-cpu", "true")) return 1;

    if (cli.fit_dry_run) {
        // The plan as JSON on stdout; no weights are loaded.
        char* json = nullptr;
        const int rc = ggdiff_auto_fit_plan(o, &json);
        if (rc != 0) {
            std::fprintf(stderr, "error: %s\n", ggdiff_last_error());
        } else {
            std::printf("%s\n", json);
        }
        std::free(json);
        ggdiff_options_free(o);
        return rc;
    }
    ggdiff_model* model = nullptr;
    if (ggdiff_model_load(o, &model) != 0) {
        std::fprintf(stderr, "error: %s\n", ggdiff_last_error());
        ggdiff_options_free(o);
        return 1;
    }
    // Each image is written as soon as it is finished: a later failure keeps the rest.
    SaveState state{&cli, 0};
    if (ggdiff_generate_each(model, o, progress_bar, save_each, &state) != 0) {
        std::fprintf(stderr, "error: %s\n", ggdiff_last_error());
        state.failures++;
    }
    const int rc = state.failures ? 1 : 0;
    ggdiff_model_free(model);
    ggdiff_options_free(o);
    return rc;
}

}  // namespace

int main(int argc, char** argv) {
    auto parsed = ggdiff::cli::parse_cli(argc, argv);
    if (!parsed.ok()) {
        std::fprintf(stderr, "error: %s\n(see ggdiff --help)\n", parsed.status().message().c_str());
        return 2;
    }
    const ggdiff::cli::CliOptions& cli = *parsed;
    if (cli.action == ggdiff::cli::CliAction::help) {
        std::fputs(cli.help_text.c_str(), stdout);
        return 0;
    }
    if (cli.action == ggdiff::cli::CliAction::version) {
        std::printf("%s\n", cli.version_text.c_str());
        return 0;
    }
    ggdiff::set_log_level(cli.verbose ? ggdiff::LogLevel::Debug : ggdiff::LogLevel::Info);
    ggdiff::Status supported = ggdiff::cli::check_supported(cli);
    if (!supported.ok()) {
        std::fprintf(stderr, "error: %s\n", supported.message().c_str());
        return 2;
    }
    if (cli.list_devices) return ggdiff::cli::run_list_devices(cli);
    switch (cli.mode) {
        case ggdiff::cli::Mode::info:
            return ggdiff::cli::run_info(cli);
        case ggdiff::cli::Mode::convert:
            return ggdiff::cli::run_convert(cli);
        case ggdiff::cli::Mode::metadata:
            return ggdiff::cli::run_metadata(cli);
        case ggdiff::cli::Mode::img_gen:
            return generate(cli);
        default:
            std::fprintf(stderr, "error: -M %s is not supported yet\n",
                         ggdiff::cli::mode_name(cli.mode));
            return 2;
    }
}
