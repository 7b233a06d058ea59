// ggdiff-server's command line: its own flags (listening, security, limits), declared once in
// server_config.cpp, plus the engine's model, placement and default-generation flags, generated
// from the library's option schema as the CLI's are (apps/common/schema_flags.h) and handed to
// the C API by name.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ggdiff.h"

namespace ggdiff::server {

struct ServerConfig {
    std::string host = "127.0.0.1";
    int port = 7860;  // 0: any free port (printed on stdout)
    std::string api_key;
    int max_queue = 16;      // jobs waiting behind the running one
    int result_ttl_s = 600;  // how long finished results stay available
    std::string lora_model_dir;
    // The model library: --models-dir (checkpoints, diffusers folders, models.json bundles),
    // --vae-dir (A1111's sd_vae choices), and how many models stay loaded.
    std::string models_dir;
    std::string vae_dir;
    int max_loaded_models = 1;
    int64_t models_memory_bytes = 0;  // 0: what the placement planner says is free
    std::vector<std::string> cors_origins;
    int64_t max_body_bytes = 64ll << 20;
    int max_size = 2048;                        // largest width/height a request may ask for
    int64_t max_upload_pixels = 4096ll * 4096;  // largest uploaded image
    int max_batch = 8;
    int max_steps = 150;
    int64_t max_result_bytes = 1024ll << 20;  // finished images kept, in all
    bool verbose = false;
    bool color = false;          // --color: colored log tags
    bool embed_metadata = true;  // --disable-image-metadata turns it off

    // Engine options (C API names, e.g. "model", "steps") with their text values, in the order
    // given: the model to load and the defaults every request starts from.
    std::vector<std::pair<std::string, std::string>> engine_options;
    bool seed_given = false;    // -s given: requests without a seed use it, else a random one
    std::string builtin_model;  // neither -m nor --diffusion-model: the built-in model's path
};

enum class ParseAction { run, help, version };

struct ParseOutcome {
    ParseAction action = ParseAction::run;
    std::string error;  // non-empty: the command line is wrong (exit 2)
    ServerConfig config;
};

ParseOutcome parse_server_args(int argc, const char* const* argv);
// The --help text: the server's flags, the front-end flags it acts on, and the engine's flags by
// the schema's groups.
std::string server_help_text();

// Whether the command line hands schema option `d` to the engine (ServerConfig::engine_options):
// every option the library reads, except input images (requests carry them), options not
// supported yet (refused by the engine when used) and those the server acts on itself
// (--lora-model-dir).
bool server_takes(const ggdiff_option_desc& d);

// 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& host);

}  // namespace ggdiff::server
