// The loaded models of ggdiff-server: the catalog (model_catalog.h), the model requests use
// when they name none (A1111's sd_model_checkpoint), and the models kept loaded, least recently
// used first out, bounded by --max-loaded-models and by memory (--models-memory-mb, else what
// the placement planner says is free). Models load on the library's own thread, one at a time,
// off the request path: a job waits for its model in the state "loading".
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "ggdiff.h"
#include "model_catalog.h"
#include "server_config.h"

namespace ggdiff::server {

struct OptionsDeleter {
    void operator()(ggdiff_options* o) const { ggdiff_options_free(o); }
};
using OptionsPtr = std::unique_ptr<ggdiff_options, OptionsDeleter>;

enum class ModelState { unloaded, loading, loaded, failed };
const char* model_state_name(ModelState state);

// One loaded model; freed when the library has dropped it and no job holds it any more.
struct LoadedModel {
    ggdiff_model* model = nullptr;
    nlohmann::json info;  // ggdiff_loaded_model_info, plus "file", "title" and "model_name"
    int64_t bytes = 0;    // the planner's figure for it (weights and compute reserve)
    double load_seconds = 0.0;
    LoadedModel() = default;
    LoadedModel(const LoadedModel&) = delete;
    LoadedModel& operator=(const LoadedModel&) = delete;
    ~LoadedModel();
};

class ModelLibrary {
  public:
    // `defaults`: the command line's engine options (requests start from them). The catalog
    // is empty until refresh().
    ModelLibrary(const ServerConfig& config, const ggdiff_options* defaults);
    ~ModelLibrary();
    ModelLibrary(const ModelLibrary&) = delete;
    ModelLibrary& operator=(const ModelLibrary&) = delete;

    // (Re)reads --models-dir and --vae-dir. "" or what is wrong (the catalog stays as it was).
    // The current model stays when it is still listed, else the first entry becomes current.
    std::string refresh();
    Catalog catalog() const;

    // The entry a client means: its name, title, file name (with or without folders), or
    // A1111's "title [hash]". False when none matches.
    bool resolve(const std::string& any, std::string* name) const;
    // A VAE of --vae-dir by name or file name; "" for "Automatic"/"None" (the model's own).
    bool resolve_vae(const std::string& any, std::string* name) const;

    std::string current() const;
    std::string current_vae() const;
    // Makes `name` (resolved) the model of requests that name none, and starts loading it.
    void set_current(const std::string& name, const std::string& vae);

    struct View {
        ModelState state = ModelState::unloaded;
        nlohmann::json info;  // the loaded model's (or remembered from its last load); null
        std::string error;    // the last load's failure
        double load_seconds = 0.0;
    };
    View view(const std::string& name, const std::string& vae) const;

    // Options a request on `name` starts from: the command line's, then the entry's defaults.
    OptionsPtr request_options(const std::string& name) const;

    // The loaded model, loading it first when needed (evicting idle ones); waits, polling
    // `cancelled`. Null with `error` set when loading fails, the entry is gone or cancelled.
    std::shared_ptr<LoadedModel> acquire(const std::string& name, const std::string& vae,
                                         const std::function<bool()>& cancelled,
                                         std::string* error);
    // Starts loading in the background (nothing when loaded or loading).
    void prefetch(const std::string& name, const std::string& vae);
    // Keys of the loaded models, most recently used first ("name" or "name|vae").
    std::vector<std::string> loaded() const;
    int max_loaded() const { return max_loaded_; }
    int64_t memory_budget() const { return budget_; }
    int64_t memory_used() const;

    void stop();

  private:
    struct Slot {
        ModelState state = ModelState::unloaded;
        std::shared_ptr<LoadedModel> model;
        nlohmann::json info;
        std::string error;
        uint64_t attempts = 0;  // finished load attempts
        uint64_t last_used = 0;
        double load_seconds = 0.0;
    };
    static std::string key(const std::string& name, const std::string& vae);
    const CatalogEntry* entry_locked(const std::string& name) const;
    void loader();
    void request_load_locked(const std::string& k);
    // The options that load entry `e` with VAE `vae` (a path or "").
    OptionsPtr load_options(const CatalogEntry& e, const std::string& vae_path) const;
    // The least recently used loaded model no job holds, other than `keep` (its key in *key);
    // null when there is none.
    Slot* lru_idle_locked(const std::string& keep, std::string* key);
    void evict_for_locked(std::unique_lock<std::mutex>& lock, const std::string& k, int64_t need,
                          std::vector<std::shared_ptr<LoadedModel>>* dropped);

    const ServerConfig& config_;
    const ggdiff_options* defaults_;
    const int max_loaded_;
    const int64_t budget_;  // 0: what the planner says is free
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    Catalog catalog_;
    std::string current_, current_vae_;
    std::map<std::string, Slot> slots_;
    std::deque<std::string> pending_;
    uint64_t clock_ = 0;
    bool stopping_ = false;
    std::thread thread_;  // the loader, started by the first load
};

}  // namespace ggdiff::server
