// ggdiff: the command-line front end (sd-cli compatible flags), on the C API only.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_options.h"
#include "ggdiff.h"
#include "huge_pages_exec.h"
#include "modes.h"

namespace {

using ggdiff::cli::CliRun;

int progress_bar(const char* phase, int step, int total, double secs, void*) {
    ggdiff::cli::print_progress(phase, step, total, secs);
    return 1;
}

// out.png, out_1.png, out_2.png, ... (or base_N from --output-begin-idx).
std::string output_name(const std::string& output, int index, int64_t begin_idx) {
    if (begin_idx < 0 && index == 0) return output;
    std::filesystem::path p(output);
    const int64_t n = begin_idx < 0 ? index : begin_idx + index;
    std::string name = p.stem().string() + "_" + std::to_string(n) + p.extension().string();
    return (p.parent_path() / name).string();
}

// Every file the batch will write must be writable as an image before minutes are spent
// generating it: a known extension, an existing folder, and no folder, device or other special
// file in the way.
bool outputs_ok(const std::string& output, int64_t count, int64_t begin_idx) {
    for (int i = 0; i < std::max<int64_t>(1, count); ++i) {
        if (ggdiff_image_check_path(output_name(output, i, begin_idx).c_str()) != 0) {
            ggdiff::cli::print_error(std::string("-o: ") + ggdiff_last_error());
            return false;
        }
    }
    return true;
}

struct SaveState {
    std::string output;
    int64_t begin_idx;
    bool metadata;
    int failures;
    std::string preview_path;  // --preview-path
    bool preview_failed = false;
};

void save_each(const ggdiff_image* image, int index, void* user) {
    auto* st = static_cast<SaveState*>(user);
    const std::string path = output_name(st->output, index, st->begin_idx);
    if (ggdiff_image_save(image, path.c_str(), st->metadata ? 1 : 0) != 0) {
        ggdiff::cli::print_error(ggdiff_last_error());
        st->failures++;
        return;
    }
    std::fprintf(stderr, "saved %s (seed %lld)\n", ggdiff::cli::escape_controls(path).c_str(),
                 static_cast<long long>(image->seed));
}

// Each live preview replaces --preview-path (as sd-cli: no metadata); a failure is said once.
void save_preview(const ggdiff_image* image, int, int, void* user) {
    auto* st = static_cast<SaveState*>(user);
    if (ggdiff_image_save(image, st->preview_path.c_str(), 0) == 0 || st->preview_failed) return;
    ggdiff::cli::print_error(std::string("--preview-path: ") + ggdiff_last_error());
    st->preview_failed = true;
}

int generate(const CliRun& cli) {
    ggdiff_options* o = cli.options.get();
    if (cli.flag("fit-dry-run")) {
        // The plan as JSON on stdout; no weights are loaded.
        char* json = nullptr;
        const int rc = ggdiff_auto_fit_plan(o, &json);
        if (rc != 0) {
            ggdiff::cli::print_error(ggdiff_last_error());
        } else {
            std::printf("%s\n", json);
        }
        std::free(json);
        return rc;
    }
    const std::string output = cli.text("output");
    if (!outputs_ok(output, cli.integer("batch-count"), cli.integer("output-begin-idx"))) return 1;
    const bool previews = cli.text("preview") != "none";
    const std::string preview_path = cli.text("preview-path");
    if (previews && ggdiff_image_check_path(preview_path.c_str()) != 0) {
        ggdiff::cli::print_error(std::string("--preview-path: ") + ggdiff_last_error());
        return 1;
    }
    ggdiff_model* model = nullptr;
    if (ggdiff_model_load(o, &model) != 0) {
        ggdiff::cli::print_error(ggdiff_last_error());
        return 1;
    }
    // A model may make several images per batch item (Qwen Image Layered): their files are
    // checked too, still before any compute.
    int count = 0;
    if (ggdiff_image_count(model, o, &count) != 0 ||
        !outputs_ok(output, count, cli.integer("output-begin-idx"))) {
        if (count == 0) ggdiff::cli::print_error(ggdiff_last_error());
        ggdiff_model_free(model);
        return 1;
    }
    // Each image is written as soon as it is finished: a later failure keeps the rest.
    SaveState state{output, cli.integer("output-begin-idx"), !cli.flag("disable-image-metadata"), 0,
                    preview_path};
    if (ggdiff_generate_each_preview(model, o, progress_bar, save_each,
                                     previews ? save_preview : nullptr, &state) != 0) {
        ggdiff::cli::print_error(ggdiff_last_error());
        state.failures++;
    }
    ggdiff_model_free(model);
    return state.failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    ggdiff::app::restart_with_huge_pages(argv);
    CliRun cli;
    std::string error;
    if (!ggdiff::cli::parse_cli(argc, argv, cli, error)) {
        ggdiff::cli::print_error(error + " (see ggdiff --help)");
        return 2;
    }
    if (cli.action == ggdiff::cli::CliAction::help) {
        std::fputs(cli.help_text.c_str(), stdout);
        return 0;
    }
    if (cli.action == ggdiff::cli::CliAction::version) {
        std::printf("%s\n", cli.version_text.c_str());
        return 0;
    }
    ggdiff_set_log_level(cli.flag("verbose") ? GGDIFF_LOG_DEBUG : GGDIFF_LOG_INFO);
    ggdiff_set_log_color(cli.flag("color") ? 1 : 0);
    for (const std::string& note : cli.no_effect_notes) {
        std::fprintf(stderr, "note: %s\n", ggdiff::cli::escape_controls(note).c_str());
    }
    if (cli.flag("list-devices")) return ggdiff::cli::run_list_devices(cli);
    const std::string mode = cli.text("mode");
    if (mode != "vid_gen" && cli.given("fps")) {
        std::fprintf(stderr,
                     "note: --fps has no effect here: it sets the frame rate of -M vid_gen's "
                     "video files\n");
    }
    if (mode == "info") return ggdiff::cli::run_info(cli);
    if (mode == "convert") return ggdiff::cli::run_convert(cli);
    if (mode == "metadata") return ggdiff::cli::run_metadata(cli);
    if (mode == "upscale") return ggdiff::cli::run_upscale(cli);
    if (mode == "img_gen") return generate(cli);
    if (mode == "vid_gen") return ggdiff::cli::run_vid_gen(cli);
    // The schema refuses the modes that are not built yet; this is only reached if a mode
    // is added there before here.
    ggdiff::cli::print_error("-M " + mode + " is not supported yet");
    return 2;
}
