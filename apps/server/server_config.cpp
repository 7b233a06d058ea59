#include "server_config.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "ggdiff.h"
#include "schema_flags.h"

namespace ggdiff::server {

namespace {

// A flag of the server's own (listening, security, limits): declared here once, for parsing
// and --help alike. `apply` stores a value given and returns "" or what is wrong with it.
struct ServerFlag {
    const char* names;  // CLI11's spelling: "--host"
    const char* value;  // the value's label in --help
    const char* help;
    std::function<std::string(ServerConfig&, const std::string& flag, const std::string& value)>
        apply;
    bool repeatable = false;
};

bool parse_int(const std::string& s, int64_t min, int64_t max, int64_t* out) {
    if (s.empty()) return false;
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max) return false;
    *out = v;
    return true;
}

bool is_bool_true(const std::string& v) {
    return v == "true" || v == "on" || v == "1" || v == "yes";
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    size_t b = 0;
    while (b < s.size() && s[b] == ' ') ++b;
    return s.substr(b);
}

// An integer flag in [min, max], stored by `store`.
template <class Store>
ServerFlag int_flag(const char* names, const char* value, const char* help, int64_t min,
                    int64_t max, Store store) {
    return {names, value, help,
            [min, max, store](ServerConfig& c, const std::string& flag, const std::string& text) {
                int64_t n = 0;
                if (!parse_int(text, min, max, &n)) {
                    return flag + ": \"" + text + "\" is not an integer in " + std::to_string(min) +
                           ".." + std::to_string(max);
                }
                store(c, n);
                return std::string();
            }};
}

const std::vector<ServerFlag>& server_flags() {
    static const std::vector<ServerFlag> flags = {
        {"--host", "ADDR", "Address to listen on (default 127.0.0.1; anything else warns)",
         [](ServerConfig& c, const std::string& flag, const std::string& v) {
             c.host = v;
             return v.empty() ? flag + " needs an address" : std::string();
         }},
        int_flag("--port", "N",
                 "Port to listen on (default 7860; 0 picks a free one and prints it)", 0, 65535,
                 [](ServerConfig& c, int64_t n) { c.port = static_cast<int>(n); }),
        {"--api-key", "KEY",
         "Require this key on every route but /health: 'Authorization: Bearer KEY' or "
         "'X-Api-Key: KEY' (browsers: Basic auth with KEY as the password)",
         [](ServerConfig& c, const std::string& flag, const std::string& v) {
             c.api_key = v;
             return v.empty() ? flag + " needs a key" : std::string();
         }},
        {"--api-key-file", "FILE", "Read the API key from the first line of FILE",
         [](ServerConfig& c, const std::string& flag, const std::string& path) {
             std::ifstream in(path);
             std::string line;
             if (!in || !std::getline(in, line))
                 return flag + " " + path + ": cannot read the file";
             c.api_key = trim(line);
             return c.api_key.empty() ? flag + " " + path + ": the first line is empty"
                                      : std::string();
         }},
        int_flag("--max-queue", "N",
                 "Jobs that may wait behind the running one (default 16, at most 1024); more "
                 "get 429",
                 1, 1024, [](ServerConfig& c, int64_t n) { c.max_queue = static_cast<int>(n); }),
        int_flag("--result-ttl", "SECONDS",
                 "How long finished results stay available (default 600)", 0, 30LL * 24 * 3600,
                 [](ServerConfig& c, int64_t n) { c.result_ttl_s = static_cast<int>(n); }),
        int_flag("--max-results-mb", "N",
                 "Memory for finished results (default 1024); past it the oldest go first (410), "
                 "never the latest",
                 0, 1 << 20, [](ServerConfig& c, int64_t n) { c.max_result_bytes = n << 20; }),
        {"--cors-origin", "ORIGIN",
         "Allow browser requests from ORIGIN (e.g. http://localhost:3000); repeatable; none by "
         "default",
         [](ServerConfig& c, const std::string& flag, const std::string& v) {
             if (v.empty()) return flag + " needs an origin";
             c.cors_origins.push_back(v);
             return std::string();
         },
         /*repeatable=*/true},
        int_flag("--max-body-mb", "N", "Largest request body in MiB (default 64); larger get 413",
                 1, 4096, [](ServerConfig& c, int64_t n) { c.max_body_bytes = n << 20; }),
        int_flag("--max-size", "N", "Largest width or height a request may ask for (default 2048)",
                 8, 16384, [](ServerConfig& c, int64_t n) { c.max_size = static_cast<int>(n); }),
        int_flag("--max-upload-pixels", "N",
                 "Largest uploaded image in pixels (default 16777216 = 4096x4096); larger get 413",
                 1, 256000000, [](ServerConfig& c, int64_t n) { c.max_upload_pixels = n; }),
        int_flag("--max-batch", "N", "Most images per request (default 8)", 1, 1024,
                 [](ServerConfig& c, int64_t n) { c.max_batch = static_cast<int>(n); }),
        int_flag("--max-steps", "N", "Most sampling steps per request (default 150)", 1, 10000,
                 [](ServerConfig& c, int64_t n) { c.max_steps = static_cast<int>(n); }),
        {"--models-dir", "DIR",
         "Offer the models in DIR (and its subfolders): .safetensors and .gguf checkpoints, "
         "diffusers folders, and bundles of split parts named in DIR/models.json (see "
         "docs/server.md); requests choose one by name (A1111 sd_model_checkpoint, OpenAI "
         "model, native model)",
         [](ServerConfig& c, const std::string& flag, const std::string& v) {
             c.models_dir = v;
             return v.empty() ? flag + " needs a folder" : std::string();
         }},
        {"--vae-dir", "DIR",
         "VAE files offered as A1111's sd_vae (default: DIR/VAE or DIR/vae of --models-dir)",
         [](ServerConfig& c, const std::string& flag, const std::string& v) {
             c.vae_dir = v;
             return v.empty() ? flag + " needs a folder" : std::string();
         }},
        int_flag("--max-loaded-models", "N",
                 "Models kept loaded at once (default 1); the least recently used goes first", 1,
                 64, [](ServerConfig& c, int64_t n) { c.max_loaded_models = static_cast<int>(n); }),
        int_flag("--models-memory-mb", "N",
                 "Memory the loaded models may take together, by the placement planner's "
                 "figures (default 0: what the planner finds free when a model loads)",
                 0, 1LL << 30, [](ServerConfig& c, int64_t n) { c.models_memory_bytes = n << 20; }),
    };
    return flags;
}

// Schema options the server acts on itself instead of handing them to the engine: what they
// do here, added to their help, and how a value is stored.
struct ServerUse {
    const char* name;
    const char* note;
    std::function<std::string(ServerConfig&, const std::string& value)> apply;
};

std::string read_prompt_file(ServerConfig& c, const char* prompt, const char* flag,
                             const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    if (!in || !(text << in.rdbuf()))
        return std::string(flag) + " " + path + ": cannot read the file";
    c.engine_options.emplace_back(prompt, trim(text.str()));
    return "";
}

const std::vector<ServerUse>& server_uses() {
    static const std::vector<ServerUse> uses = {
        {"verbose", "The server logs every request and the engine's debug output.",
         [](ServerConfig& c, const std::string&) {
             c.verbose = true;
             return std::string();
         }},
        {"color", "",
         [](ServerConfig& c, const std::string&) {
             c.color = true;
             return std::string();
         }},
        {"lora-model-dir",
         "The server offers them by name (/sdapi/v1/loras); requests can name only files listed "
         "there.",
         [](ServerConfig& c, const std::string& v) {
             c.lora_model_dir = v;
             return std::string();
         }},
        {"disable-image-metadata",
         "A request can still ask for it (A1111 enable_pnginfo, sd-server embed_image_metadata).",
         [](ServerConfig& c, const std::string& v) {
             c.embed_metadata = !(v.empty() || is_bool_true(v));
             return std::string();
         }},
        {"prompt-file", "The default prompt of requests.",
         [](ServerConfig& c, const std::string& v) {
             return read_prompt_file(c, "prompt", "--prompt-file", v);
         }},
        {"negative-prompt-file", "The default negative prompt of requests.",
         [](ServerConfig& c, const std::string& v) {
             return read_prompt_file(c, "negative-prompt", "--negative-prompt-file", v);
         }},
    };
    return uses;
}

const ServerUse* server_use(const std::string& name) {
    for (const ServerUse& u : server_uses())
        if (name == u.name) return &u;
    return nullptr;
}

// Identity files no request can carry and every request uses, given when the server starts:
// PhotoMaker's (--pm-id-images-dir, --pm-id-embed-path) and PuLID-FLUX's (--pulid-id-embedding).
bool identity_file(const std::string& name) {
    return name.rfind("pm-", 0) == 0 || name.rfind("pulid-", 0) == 0;
}

constexpr const char* kServerGroup = "Server";

constexpr const char* kDescription =
    "ggdiff-server: serves models over HTTP: OpenAI Images (/v1/images/generations,\n"
    "/v1/images/edits, /v1/models), the AUTOMATIC1111 API (/sdapi/v1/...), stable-diffusion.cpp's\n"
    "async job API (/sdcpp/v1/...) with progress events and cancel, /health, and a web page at /.\n"
    "Without -m (or --diffusion-model) it serves the built-in model\n"
    "(models/ggdiff-toy-shapes.safetensors, or the file $GGDIFF_DEFAULT_MODEL names), or with\n"
    "--models-dir the models of that folder, switched per request.\n\n"
    "Engine flags (as the CLI's): the model and where it runs, and the defaults of requests that\n"
    "leave a field out. Without -s/--seed each request gets a random seed.";

// The command line: the server's own flags, then every schema option (the engine's, and the
// front-end ones the server acts on; the rest are hidden and refused by name when used).
// Values land in `c`; the first problem with one is kept in `error`.
void declare_flags(CLI::App& app, ServerConfig& c, std::string& error) {
    app.formatter(std::make_shared<apps::WrappingFormatter>());
    apps::add_help_and_version(app, std::string("ggdiff-server ") + ggdiff_version(), kServerGroup);
    auto keep = [&error](const std::string& problem) {
        if (!problem.empty() && error.empty()) error = problem;
    };
    for (const ServerFlag& f : server_flags()) {
        const std::string flag = f.names;
        auto apply = [&c, keep, flag, &f](const std::string& v) { keep(f.apply(c, flag, v)); };
        CLI::Option* opt = nullptr;
        if (f.repeatable) {
            opt = app.add_option_function<std::vector<std::string>>(
                         f.names,
                         [apply](const std::vector<std::string>& values) {
                             for (const std::string& v : values) apply(v);
                         },
                         f.help)
                      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                      ->expected(1)
                      ->allow_extra_args(false);
        } else {
            opt = app.add_option_function<std::string>(f.names, apply, f.help)
                      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        }
        opt->type_name(f.value)->group(kServerGroup);
    }
    std::string not_yet;
    for (const ggdiff_option_desc& d : apps::schema_options()) {
        const std::string name = d.name, flag = "--" + name;
        if (name == "help" || name == "version") continue;
        if (const ServerUse* use = server_use(name)) {
            std::string help = apps::flag_help(d);
            if (*use->note) help += std::string(" ") + use->note;
            apps::add_schema_flag(
                app, d, [&c, keep, use](const std::string& v) { keep(use->apply(c, v)); }, help,
                kServerGroup);
        } else if (!apps::is_engine_option(d)) {
            // The CLI's outputs and run modes.
            apps::add_schema_flag(
                app, d,
                [keep, flag](const std::string&) {
                    keep(flag + " has no use in ggdiff-server (see --help)");
                },
                "", "");
        } else if ((d.flags & GGDIFF_OPTION_GENERATE) && d.type == GGDIFF_OPTION_PATH &&
                   d.support != GGDIFF_SUPPORT_NOT_YET && !identity_file(name)) {
            // Input images come with each request, never from the server's files; PhotoMaker's
            // identity (--pm-id-images-dir, --pm-id-embed-path), which no API has a field for,
            // is a server start option that every request uses.
            apps::add_schema_flag(
                app, d,
                [keep, flag](const std::string&) {
                    keep(flag + " has no use in ggdiff-server (requests carry their images)");
                },
                "", "");
        } else {
            // An engine flag: the model to load or a default of requests; the engine checks
            // the value below. Those not supported yet are listed together after the rest.
            const bool works = d.support != GGDIFF_SUPPORT_NOT_YET;
            if (!works) not_yet += " " + flag;
            apps::add_schema_flag(
                app, d,
                [&c, name](const std::string& v) {
                    if (name == "seed") c.seed_given = true;
                    c.engine_options.emplace_back(name, v);
                },
                apps::flag_help(d), works ? d.group : "");
        }
    }
    if (not_yet.empty()) return;
    std::string footer = "Accepted but not supported yet (using them is an error):\n";
    std::string line;
    std::istringstream words(not_yet);
    std::string word;
    while (words >> word) {
        if (!line.empty() && line.size() + 1 + word.size() > 88) {
            footer += line + "\n";
            line.clear();
        }
        line += (line.empty() ? "  " : " ") + word;
    }
    app.footer(footer + line);
}

}  // namespace

bool is_loopback_host(const std::string& host) {
    return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

std::string server_help_text() {
    CLI::App app(kDescription, "ggdiff-server");
    ServerConfig c;
    std::string error;
    declare_flags(app, c, error);
    return app.help();
}

bool server_takes(const ggdiff_option_desc& d) {
    return apps::is_engine_option(d) && d.support != GGDIFF_SUPPORT_NOT_YET &&
           !((d.flags & GGDIFF_OPTION_GENERATE) && d.type == GGDIFF_OPTION_PATH &&
             !identity_file(d.name)) &&
           !server_use(d.name);
}

ParseOutcome parse_server_args(int argc, const char* const* argv) {
    ParseOutcome out;
    ServerConfig& c = out.config;
    auto fail = [&](const std::string& message) {
        out.error = message;
        return out;
    };
    CLI::App app(kDescription, "ggdiff-server");
    std::string error;
    declare_flags(app, c, error);
    std::string parse_error;
    switch (apps::parse_command_line(app, argc, argv, error, parse_error)) {
        case apps::ParseOutcome::help:
            out.action = ParseAction::help;
            return out;
        case apps::ParseOutcome::version:
            out.action = ParseAction::version;
            return out;
        case apps::ParseOutcome::error:
            return fail(parse_error);
        case apps::ParseOutcome::run:
            break;
    }
    // Every engine flag must have a value the library accepts.
    ggdiff_options* probe = ggdiff_options_new();
    for (const auto& [name, value] : c.engine_options) {
        if (ggdiff_options_set(probe, name.c_str(), value.c_str()) != 0) {
            std::string why = ggdiff_last_error();
            ggdiff_options_free(probe);
            return fail(why);
        }
    }
    ggdiff_options_free(probe);
    bool have_model = false;
    for (const auto& kv : c.engine_options)
        if (kv.first == "model" || kv.first == "diffusion-model") have_model = true;
    if (!have_model && c.models_dir.empty()) {
        // Without -m the engine loads its built-in model: it must be there.
        const char* builtin = ggdiff_default_model();
        if (!builtin) {
            return fail(std::string("no model given (-m FILE or --diffusion-model FILE), and ") +
                        ggdiff_last_error());
        }
        c.builtin_model = builtin;
    }
    return out;
}

}  // namespace ggdiff::server
