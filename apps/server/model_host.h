// What requests start from: the command line's engine options, the engine's lists (samplers,
// schedulers, families), and the model library (model_library.h) that loads the models. The
// first model loads in the background (the HTTP server answers /health with 503 meanwhile).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "ggdiff.h"
#include "model_library.h"
#include "server_config.h"

namespace ggdiff::server {

class ModelHost {
  public:
    enum class State { loading, ready, failed };

    // Applies the config's engine options to the defaults (they were validated while
    // parsing), and passes --lora-model-dir on when the engine has LoRA.
    explicit ModelHost(const ServerConfig& config);
    ~ModelHost();

    // Reads the catalog ("" or what is wrong with --models-dir / models.json).
    std::string scan();
    // Loads the current model (blocking; run it on its own thread). False when it fails.
    bool load();

    // The first load: ready once it ended (and stays ready with --models-dir even when that
    // model failed: requests can name others).
    State state() const { return state_.load(); }
    std::string load_error() const;

    ModelLibrary& library() { return library_; }
    const ModelLibrary& library() const { return library_; }

    // A fresh copy of the defaults for a request on model `name` ("" = the current one).
    OptionsPtr request_options(const std::string& name = "") const;
    // A default value given on the command line for engine option `name`, or "".
    std::string default_value(const std::string& name) const;
    // The value requests start from: the command line's, else the schema's default ("" when
    // the model decides).
    std::string option_value(const std::string& name) const;
    const ggdiff_options* defaults() const { return defaults_.get(); }

    // Model `name` ("" = the current one) with `vae` ("" = its own): {"name", "family",
    // "files", "vae", "version", "ref_images", ...} from ggdiff_loaded_model_info when it is
    // (or was once) loaded, plus "file", "title" and "model_name"; before its first load the
    // names only ("family" null).
    nlohmann::json model_info(const std::string& name = "", const std::string& vae = "") const;
    // ggdiff_list_samplers / ggdiff_list_schedulers.
    const nlohmann::json& samplers() const { return samplers_; }
    // ggdiff_list_families: the families the engine recognises.
    const nlohmann::json& families() const { return families_; }
    const nlohmann::json& schedulers() const { return schedulers_; }

    // Whether this build's engine takes LoRA (option "lora-model-dir").
    bool lora_supported() const { return lora_supported_; }
    double load_seconds() const { return load_seconds_; }

  private:
    const ServerConfig& config_;
    OptionsPtr defaults_;
    std::atomic<State> state_{State::loading};
    mutable std::mutex mutex_;
    std::string error_;
    nlohmann::json samplers_, schedulers_, families_;
    bool lora_supported_ = false;
    double load_seconds_ = 0.0;
    ModelLibrary library_;  // last: it loads with defaults_
};

}  // namespace ggdiff::server
