// The models ggdiff-server offers: the command line's model, then what --models-dir holds
// (checkpoint files, diffusers folders, and the bundles of split parts its models.json names),
// and the VAE files of --vae-dir. Scanning reads names and sizes only, never weights.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "server_config.h"

namespace ggdiff::server {

struct CatalogEntry {
    std::string name;    // what requests name: relative path without extension ("sd/v1-5")
    std::string title;   // A1111's title: the relative file name ("sd/v1-5.safetensors")
    std::string path;    // the main file or folder (absolute when from --models-dir)
    std::string source;  // "command line", "file", "folder" (diffusers), "bundle" (models.json)
    std::string description;  // models.json's, else ""
    // Engine options that load it (model files by option name, placement, ...), applied over
    // the command line's once its model part options are dropped (none for "command line").
    std::vector<std::pair<std::string, std::string>> load_options;
    // Defaults of requests on this model (models.json "defaults"), under the request's fields.
    std::vector<std::pair<std::string, std::string>> request_defaults;
    int64_t bytes = 0;  // file sizes, all parts together
};

struct VaeEntry {
    std::string name;  // relative path with extension, as A1111's sd_vae names it
    std::string path;
};

struct Catalog {
    std::vector<CatalogEntry> models;
    std::vector<VaeEntry> vaes;
    std::vector<std::string> warnings;  // files skipped, with the reason
};

// The engine options naming one part of a model ("model", "diffusion-model", "vae", "t5xxl",
// LTX-2.3's "embeddings-connectors" and "audio-vae", ...): a catalog entry replaces all of them;
// the rest of the command line (tokenizers, placement, weight type) stays.
bool is_model_part_option(const std::string& name);

// Reads the catalog: `config.engine_options`' model first (when -m or --diffusion-model was
// given, else the built-in model when the folder has no model), then --models-dir. Returns
// "" or what is wrong (an unreadable folder, a bad models.json naming the entry and key).
std::string scan_catalog(const ServerConfig& config, Catalog* out);

}  // namespace ggdiff::server
