// The one loaded model: loads in the background (the HTTP server answers /health with 503
// meanwhile), then hands out request options that start from the command line's defaults.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "ggdiff.h"
#include "server_config.h"

namespace ggdiff::server {

struct OptionsDeleter {
    void operator()(ggdiff_options* o) const { ggdiff_options_free(o); }
};
using OptionsPtr = std::unique_ptr<ggdiff_options, OptionsDeleter>;

class ModelHost {
  public:
    enum class State { loading, ready, failed };

    // Applies the config's engine options to the defaults (they were validated while
    // parsing), and passes --lora-model-dir on when the engine has LoRA.
    explicit ModelHost(const ServerConfig& config);
    ~ModelHost();

    // Loads the model (blocking; run it on its own thread). Returns false on failure.
    bool load();

    State state() const { return state_.load(); }
    std::string load_error() const;
    ggdiff_model* model() const { return model_; }

    // A fresh copy of the defaults for one request.
    OptionsPtr request_options() const;
    // A default value given on the command line for engine option `name`, or "".
    std::string default_value(const std::string& name) const;
    // The value requests start from: the command line's, else the schema's default ("" when
    // the model decides).
    std::string option_value(const std::string& name) const;
    const ggdiff_options* defaults() const { return defaults_.get(); }

    // {"name", "family", "files", "vae", "version"} from ggdiff_loaded_model_info, plus "file"
    // (main file name); before loading it has the names from the command line only.
    nlohmann::json model_info() const;
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
    ggdiff_model* model_ = nullptr;
    std::atomic<State> state_{State::loading};
    mutable std::mutex mutex_;
    std::string error_;
    nlohmann::json info_;
    nlohmann::json samplers_, schedulers_, families_;
    bool lora_supported_ = false;
    double load_seconds_ = 0.0;
};

}  // namespace ggdiff::server
