#include "server_config.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "engine_options.h"
#include "ggdiff.h"

namespace ggdiff::server {

namespace {

struct FlagHelp {
    const char* flag;
    const char* value;
    const char* help;
};

const FlagHelp kServerFlags[] = {
    {"--host", "ADDR", "address to listen on (default 127.0.0.1; anything else warns)"},
    {"--port", "N", "port to listen on (default 7860; 0 picks a free one and prints it)"},
    {"--api-key", "KEY",
     "require this key on every route but /health: 'Authorization: Bearer KEY' or "
     "'X-Api-Key: KEY' (browsers: Basic auth with KEY as the password)"},
    {"--api-key-file", "FILE", "read the API key from the first line of FILE"},
    {"--max-queue", "N",
     "jobs that may wait behind the running one (default 16, at most 1024); more get 429"},
    {"--result-ttl", "SECONDS", "how long finished results stay available (default 600)"},
    {"--max-results-mb", "N",
     "memory for finished results (default 1024); past it the oldest go first (410), never "
     "the latest"},
    {"--lora-model-dir", "DIR",
     "LoRA files offered by name (/sdapi/v1/loras); requests can name "
     "only files listed there"},
    {"--cors-origin", "ORIGIN",
     "allow browser requests from ORIGIN (e.g. http://localhost:3000); repeatable; none by "
     "default"},
    {"--max-body-mb", "N", "largest request body in MiB (default 64); larger get 413"},
    {"--max-size", "N", "largest width or height a request may ask for (default 2048)"},
    {"--max-upload-pixels", "N",
     "largest uploaded image in pixels (default 16777216 = 4096x4096); larger get 413"},
    {"--max-batch", "N", "most images per request (default 8)"},
    {"--max-steps", "N", "most sampling steps per request (default 150)"},
    {"--disable-image-metadata", "",
     "images carry no parameters text (unless a request asks: A1111 enable_pnginfo, sd-server "
     "embed_image_metadata)"},
    {"--prompt-file", "FILE", "the default prompt, read from FILE"},
    {"--negative-prompt-file", "FILE", "the default negative prompt, read from FILE"},
    {"--color", "", "color the log level tags"},
    {"-v, --verbose", "", "log every request and the engine's debug output"},
    {"-h, --help", "", "print this help and exit"},
    {"--version", "", "print the version and exit"},
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

}  // namespace

bool is_loopback_host(const std::string& host) {
    return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

std::string server_help_text() {
    std::ostringstream os;
    os << "usage: ggdiff-server [-m MODEL] [server flags] [engine flags]\n\n"
          "Serves one model over HTTP: OpenAI Images (/v1/images/generations, /v1/images/edits,\n"
          "/v1/models), the AUTOMATIC1111 API (/sdapi/v1/...), stable-diffusion.cpp's async job\n"
          "API (/sdcpp/v1/...) with progress events and cancel, /health, and a web page at /.\n"
          "Without -m (or --diffusion-model) it serves the built-in model\n"
          "(models/ggdiff-toy-shapes.safetensors, or the file $GGDIFF_DEFAULT_MODEL names).\n\n"
          "Server flags:\n";
    for (const FlagHelp& f : kServerFlags) {
        std::string lhs = std::string("  ") + f.flag + (*f.value ? std::string(" ") + f.value : "");
        if (lhs.size() < 30) {
            lhs.resize(30, ' ');
        } else {
            lhs += "\n" + std::string(30, ' ');
        }
        os << lhs << f.help << "\n";
    }
    os << "\n" << engine_flags_help();
    return os.str();
}

ParseOutcome parse_server_args(int argc, const char* const* argv) {
    ParseOutcome out;
    ServerConfig& c = out.config;
    std::vector<std::string> args(argv + 1, argv + argc);
    auto fail = [&](const std::string& message) {
        out.error = message;
        return out;
    };
    for (size_t i = 0; i < args.size(); ++i) {
        std::string flag = args[i];
        std::string value;
        bool has_value = false;
        if (flag.rfind("--", 0) == 0 && flag.find('=') != std::string::npos) {
            value = flag.substr(flag.find('=') + 1);
            flag = flag.substr(0, flag.find('='));
            has_value = true;
        }
        auto need = [&](std::string* v) {
            if (has_value) {
                *v = value;
                return true;
            }
            if (i + 1 >= args.size()) return false;
            *v = args[++i];
            return true;
        };
        auto need_int = [&](int64_t min, int64_t max, int64_t* v) -> std::string {
            std::string text;
            if (!need(&text)) return flag + " needs a value";
            if (!parse_int(text, min, max, v)) {
                return flag + ": \"" + text + "\" is not an integer in " + std::to_string(min) +
                       ".." + std::to_string(max);
            }
            return "";
        };
        int64_t n = 0;
        std::string err;
        if (flag == "-h" || flag == "--help") {
            out.action = ParseAction::help;
            return out;
        } else if (flag == "--version") {
            out.action = ParseAction::version;
            return out;
        } else if (flag == "-v" || flag == "--verbose") {
            c.verbose = true;
        } else if (flag == "--host") {
            if (!need(&c.host) || c.host.empty()) return fail("--host needs an address");
        } else if (flag == "--port") {
            if (!(err = need_int(0, 65535, &n)).empty()) return fail(err);
            c.port = static_cast<int>(n);
        } else if (flag == "--api-key") {
            if (!need(&c.api_key) || c.api_key.empty()) return fail("--api-key needs a key");
        } else if (flag == "--api-key-file") {
            std::string path;
            if (!need(&path)) return fail("--api-key-file needs a file");
            std::ifstream in(path);
            std::string line;
            if (!in || !std::getline(in, line)) {
                return fail("--api-key-file " + path + ": cannot read the file");
            }
            c.api_key = trim(line);
            if (c.api_key.empty())
                return fail("--api-key-file " + path + ": the first line is empty");
        } else if (flag == "--max-queue") {
            if (!(err = need_int(1, 1024, &n)).empty()) return fail(err);
            c.max_queue = static_cast<int>(n);
        } else if (flag == "--result-ttl") {
            if (!(err = need_int(0, 30LL * 24 * 3600, &n)).empty()) return fail(err);
            c.result_ttl_s = static_cast<int>(n);
        } else if (flag == "--max-results-mb") {
            if (!(err = need_int(0, 1 << 20, &n)).empty()) return fail(err);
            c.max_result_bytes = n << 20;
        } else if (flag == "--lora-model-dir") {
            if (!need(&c.lora_model_dir)) return fail("--lora-model-dir needs a folder");
        } else if (flag == "--cors-origin") {
            std::string origin;
            if (!need(&origin) || origin.empty()) return fail("--cors-origin needs an origin");
            c.cors_origins.push_back(origin);
        } else if (flag == "--max-body-mb") {
            if (!(err = need_int(1, 4096, &n)).empty()) return fail(err);
            c.max_body_bytes = n << 20;
        } else if (flag == "--max-size") {
            if (!(err = need_int(8, 16384, &n)).empty()) return fail(err);
            c.max_size = static_cast<int>(n);
        } else if (flag == "--max-upload-pixels") {
            if (!(err = need_int(1, 256000000, &n)).empty()) return fail(err);
            c.max_upload_pixels = n;
        } else if (flag == "--max-batch") {
            if (!(err = need_int(1, 1024, &n)).empty()) return fail(err);
            c.max_batch = static_cast<int>(n);
        } else if (flag == "--max-steps") {
            if (!(err = need_int(1, 10000, &n)).empty()) return fail(err);
            c.max_steps = static_cast<int>(n);
        } else {
            // An engine flag (the CLI's): --name [value], or its short form -X.
            std::string name;
            if (flag.rfind("--", 0) == 0 && flag.size() > 2) {
                name = flag.substr(2);
            } else if (flag.size() >= 2 && flag[0] == '-' && flag[1] != '-') {
                name = flag.substr(1);
            } else {
                return fail("unexpected argument '" + flag + "' (see --help)");
            }
            auto desc = engine_option(name, /*json_spelling=*/false);
            if (!desc) {
                return fail("unknown flag " + flag + " (see --help)");
            }
            name = desc->name;
            if (!has_value) {
                if (desc->type == GGDIFF_OPTION_BOOL) {
                    // A switch; --flag on|off where the schema allows a value.
                    if ((desc->flags & GGDIFF_OPTION_VALUE_OPTIONAL) && i + 1 < args.size() &&
                        is_bool_word(args[i + 1])) {
                        value = args[++i];
                    }
                } else if (!need(&value)) {
                    return fail(flag + " needs a value");
                }
            }
            if ((desc->flags & GGDIFF_OPTION_GENERATE) && desc->type == GGDIFF_OPTION_PATH &&
                desc->support != GGDIFF_SUPPORT_NOT_YET) {
                // Input images come with each request, never from the server's files.
                return fail(flag + " has no use in ggdiff-server (requests carry their images)");
            }
            if (desc->flags & GGDIFF_OPTION_FRONTEND) {
                // The CLI's front-end flags that mean something for a server.
                if (name == "disable-image-metadata") {
                    c.embed_metadata = !(value.empty() || is_bool_true(value));
                } else if (name == "color") {
                    c.color = true;
                } else if (name == "prompt-file" || name == "negative-prompt-file") {
                    std::ifstream in(value, std::ios::binary);
                    std::stringstream text;
                    if (!in || !(text << in.rdbuf())) {
                        return fail(flag + " " + value + ": cannot read the file");
                    }
                    c.engine_options.emplace_back(
                        name == "prompt-file" ? "prompt" : "negative-prompt", trim(text.str()));
                } else {
                    return fail(flag + " has no use in ggdiff-server (see --help)");
                }
                continue;
            }
            if (name == "seed") c.seed_given = true;
            c.engine_options.emplace_back(name, value);
        }
    }
    // Every engine flag must be one the library knows, with a value it accepts.
    ggdiff_options* probe = ggdiff_options_new();
    for (const auto& [name, value] : c.engine_options) {
        if (ggdiff_options_set(probe, name.c_str(), value.c_str()) != 0) {
            std::string why = ggdiff_last_error();
            ggdiff_options_free(probe);
            if (why.rfind("unknown option", 0) == 0)
                return fail("unknown flag --" + name + " (see --help)");
            return fail(why);
        }
    }
    ggdiff_options_free(probe);
    bool have_model = false;
    for (const auto& kv : c.engine_options)
        if (kv.first == "model" || kv.first == "diffusion-model") have_model = true;
    if (!have_model) {
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
