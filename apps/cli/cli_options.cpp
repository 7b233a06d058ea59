// The ggdiff command line, generated from the library's option schema; see cli_options.h.
#include "cli_options.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "schema_flags.h"

namespace ggdiff::cli {

namespace {

// The most a prompt file may hold as far as the CLI reads it. The library's own limit on a
// prompt is far lower (it refuses a longer prompt, saying by how much, when it is set): this
// only keeps an endless or huge file (/dev/zero, a FIFO, a disk image) from being read whole.
constexpr size_t kMaxPromptFileBytes = 1 << 20;

bool read_text_file(const std::string& flag, const std::string& path, std::string& out,
                    std::string& error) {
    std::error_code ec;
    const std::string shown = flag + " '" + path + "'";
    if (std::filesystem::is_directory(path, ec)) {
        error = shown + ": cannot read a folder";
        return false;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        error = shown + ": cannot read: " + std::strerror(errno);
        return false;
    }
    std::string text(kMaxPromptFileBytes + 1, '\0');
    in.read(&text[0], static_cast<std::streamsize>(text.size()));
    if (in.bad()) {
        error = shown + ": error while reading";
        return false;
    }
    text.resize(static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxPromptFileBytes) {
        error = shown + ": the prompt is too long: more than " +
                std::to_string(kMaxPromptFileBytes) + " bytes";
        return false;
    }
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    out = std::move(text);
    return true;
}

// --prompt-file / --negative-prompt-file: read here, handed to the library as the prompts.
bool load_prompt_files(CliRun& r, std::string& error) {
    const char* pairs[][2] = {{"prompt-file", "prompt"},
                              {"negative-prompt-file", "negative-prompt"}};
    for (const auto& [file_flag, prompt_flag] : pairs) {
        if (!r.given(file_flag)) continue;
        if (r.given(prompt_flag)) {
            error = std::string("--") + prompt_flag + " and --" + file_flag +
                    " cannot be used together";
            return false;
        }
        std::string text;
        if (!read_text_file(std::string("--") + file_flag, r.text(file_flag), text, error)) {
            return false;
        }
        if (ggdiff_options_set(r.options.get(), prompt_flag, text.c_str()) != 0) {
            error = std::string("--") + file_flag + " '" + r.text(file_flag) +
                    "': " + ggdiff_last_error();
            return false;
        }
    }
    return true;
}

// What each mode cannot run without.
bool check_mode_inputs(const CliRun& r, std::string& error) {
    const std::string mode = r.text("mode");
    const bool any_model = r.given("model") || r.given("diffusion-model");
    // img_gen without a model uses the library's built-in one.
    // convert and info also take a single part (a text encoder or VAE file alone).
    // info also takes an unconditional DiT alone (its family and bytes).
    if ((mode == "convert" || mode == "info") && !any_model &&
        !(mode == "info" && r.given("uncond-diffusion-model"))) {
        for (const char* f :
             {"vae", "clip_l", "clip_g", "t5xxl", "llm", "llm_vision", "taesd", "clip_vision"}) {
            if (r.given(f)) return true;
        }
        error = mode == "convert"
                    ? "-M convert needs a model file: -m/--model, --diffusion-model, or a part "
                      "(--llm, --t5xxl, --clip_l, --clip_g, --vae)"
                    : "-M info needs at least one model file (-m FILE ...)";
    } else if (mode == "metadata" && !r.given("image")) {
        error = "-M metadata needs --image FILE";
    }
    return error.empty();
}

}  // namespace

bool parse_cli(int argc, const char* const* argv, CliRun& out, std::string& error) {
    out = CliRun{};
    out.options.reset(ggdiff_options_new());
    out.version_text = std::string("ggdiff ") + ggdiff_version();

    CLI::App app(
        out.version_text + ": diffusion image generation on ggml. Accepts sd-cli's command lines.",
        "ggdiff");
    apps::add_help_and_version(app, out.version_text);
    app.formatter(std::make_shared<apps::WrappingFormatter>());
    app.footer(
        "Example:\n"
        "  ggdiff -m model.safetensors -p \"a lighthouse at dusk\" -n \"blurry\" -W 512 -H 512 "
        "--steps 20 --cfg-scale 7 --sampling-method euler_a -s 42 -b 2 -o out.png\n"
        "Devices: --list-devices; --backend \"diffusion=CUDA0&CUDA1,te=CPU\" (layer split); "
        "--backend \"all=CUDA0|CUDA1\" -b 4 (data parallel); --auto-fit");
    std::string set_error;
    // Every schema option is a flag of the CLI.
    apps::add_schema_flags(app, out.options.get(), set_error,
                           [](const ggdiff_option_desc&) { return true; });
    out.help_text = app.help();

    switch (apps::parse_command_line(app, argc, argv, set_error, error)) {
        case apps::ParseOutcome::help:
            out.action = CliAction::help;
            return true;
        case apps::ParseOutcome::version:
            out.action = CliAction::version;
            return true;
        case apps::ParseOutcome::error:
            return false;
        case apps::ParseOutcome::run:
            break;
    }
    for (int i = 0; i < ggdiff_option_count(); ++i) {
        ggdiff_option_desc d{};
        if (ggdiff_option_info(i, &d) != 0 || d.support != GGDIFF_SUPPORT_NO_EFFECT) continue;
        if (out.given(d.name)) {
            out.no_effect_notes.push_back(std::string("--") + d.name +
                                          " has no effect here: " + d.note);
        }
    }
    if (!load_prompt_files(out, error)) return false;
    if (!out.flag("list-devices") && !check_mode_inputs(out, error)) return false;
    return true;
}

std::string CliRun::text(const char* name) const {
    const char* t = nullptr;
    return ggdiff_options_get(options.get(), name, &t) == 0 && t ? t : "";
}

int64_t CliRun::integer(const char* name) const {
    int64_t v = 0;
    ggdiff_options_get_int(options.get(), name, &v);
    return v;
}

bool CliRun::flag(const char* name) const {
    int v = 0;
    ggdiff_options_get_bool(options.get(), name, &v);
    return v != 0;
}

bool CliRun::given(const char* name) const {
    return ggdiff_options_is_set(options.get(), name) == 1;
}

std::vector<std::string> CliRun::all(const char* name) const {
    std::vector<std::string> out;
    for (int i = 0; i < ggdiff_options_count(options.get(), name); ++i) {
        const char* t = nullptr;
        if (ggdiff_options_get_at(options.get(), name, i, &t) == 0 && t) out.emplace_back(t);
    }
    return out;
}

}  // namespace ggdiff::cli
