#include "model_library.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ggdiff::server {

namespace fs = std::filesystem;

namespace {

// MemAvailable of /proc/meminfo in bytes (0 when it cannot be read).
int64_t system_available_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    int64_t kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit) {
        if (key == "MemAvailable:") return kib * 1024;
    }
    return 0;
}

// What the placement planner says about loading with `options`: the bytes the model takes
// (weights and compute reserves) and what the devices have for it (their budgets: free memory
// less the planner's margin; without accelerators, the system's available memory). False when
// it cannot plan (the load will say why).
bool plan_memory(const ggdiff_options* options, int64_t* need, int64_t* available) {
    char* text = nullptr;
    if (ggdiff_auto_fit_plan(options, &text) != 0 || !text) return false;
    const nlohmann::json plan = nlohmann::json::parse(text, nullptr, false);
    std::free(text);
    if (!plan.is_object()) return false;
    *need = 0;
    *available = 0;
    for (const auto& c : plan.value("components", nlohmann::json::array())) {
        *need += c.value("params_bytes", int64_t{0}) + c.value("reserve_bytes", int64_t{0});
    }
    const nlohmann::json devices = plan.value("devices", nlohmann::json::array());
    for (const auto& d : devices) *available += d.value("budget_bytes", int64_t{0});
    if (devices.empty()) *available = system_available_bytes();
    return *available > 0;
}

// What a video model makes, for /sdcpp/v1/capabilities: the frame step (a video has
// 1 + step * n frames, other counts aligned down; found as the first count the model makes as
// asked: Wan 4, LTX-2.3 8) and whether it has sound (LTX-2.3 loaded with --audio-vae, the only
// family that takes one). Null for an image model (one frame per video).
nlohmann::json video_info(const ggdiff_model* model, const ggdiff_options* load_options) {
    OptionsPtr probe(ggdiff_options_new());
    if (!probe) return nullptr;
    for (int frames = 2; frames <= 65; ++frames) {
        int count = 0;
        if (ggdiff_options_set(probe.get(), "video-frames", std::to_string(frames).c_str()) != 0 ||
            ggdiff_image_count(model, probe.get(), &count) != 0) {
            return nullptr;
        }
        if (count == frames) {
            return {{"frames_step", frames - 1},
                    {"audio", ggdiff_options_is_set(load_options, "audio-vae") == 1}};
        }
    }
    return nullptr;
}

std::string mib(int64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / 1048576.0);
    return buf;
}

}  // namespace

const char* model_state_name(ModelState state) {
    switch (state) {
        case ModelState::unloaded:
            return "unloaded";
        case ModelState::loading:
            return "loading";
        case ModelState::loaded:
            return "loaded";
        case ModelState::failed:
            return "failed";
    }
    return "unloaded";
}

LoadedModel::~LoadedModel() {
    if (model) ggdiff_model_free(model);
}

ModelLibrary::ModelLibrary(const ServerConfig& config, const ggdiff_options* defaults)
    : config_(config),
      defaults_(defaults),
      max_loaded_(std::max(1, config.max_loaded_models)),
      budget_(config.models_memory_bytes) {}

ModelLibrary::~ModelLibrary() {
    stop();
}

void ModelLibrary::stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::string ModelLibrary::key(const std::string& name, const std::string& vae) {
    return vae.empty() ? name : name + "|" + vae;
}

std::string ModelLibrary::refresh() {
    Catalog fresh;
    const std::string error = scan_catalog(config_, &fresh);
    if (!error.empty()) return error;
    for (const std::string& w : fresh.warnings)
        std::fprintf(stderr, "warning: --models-dir: %s\n", w.c_str());
    std::lock_guard<std::mutex> lock(mutex_);
    catalog_ = std::move(fresh);
    if (!entry_locked(current_) && !catalog_.models.empty()) {
        current_ = catalog_.models.front().name;
    }
    bool vae_listed = current_vae_.empty();
    for (const VaeEntry& v : catalog_.vaes) vae_listed |= v.name == current_vae_;
    if (!vae_listed) current_vae_.clear();
    return "";
}

Catalog ModelLibrary::catalog() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return catalog_;
}

const CatalogEntry* ModelLibrary::entry_locked(const std::string& name) const {
    for (const CatalogEntry& e : catalog_.models)
        if (e.name == name) return &e;
    return nullptr;
}

bool ModelLibrary::resolve(const std::string& any, std::string* name) const {
    std::string s = any;
    // A1111's title carries the short hash in brackets: "v1-5.safetensors [6ce0161689]".
    const size_t bracket = s.rfind(" [");
    if (bracket != std::string::npos && !s.empty() && s.back() == ']') s = s.substr(0, bracket);
    std::lock_guard<std::mutex> lock(mutex_);
    for (const CatalogEntry& e : catalog_.models) {
        if (s == e.name || s == e.title) {
            *name = e.name;
            return true;
        }
    }
    // The file name alone, or a full path, when it is unambiguous.
    const CatalogEntry* found = nullptr;
    for (const CatalogEntry& e : catalog_.models) {
        const fs::path p(e.path);
        if (s == p.filename().string() || s == p.stem().string() || s == e.path) {
            if (found) return false;
            found = &e;
        }
    }
    if (found) *name = found->name;
    return found != nullptr;
}

bool ModelLibrary::resolve_vae(const std::string& any, std::string* name) const {
    if (any.empty() || any == "Automatic" || any == "None" || any == "automatic" || any == "none") {
        name->clear();
        return true;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (const VaeEntry& v : catalog_.vaes) {
        if (any == v.name || any == fs::path(v.name).filename().string() ||
            any == fs::path(v.name).stem().string()) {
            *name = v.name;
            return true;
        }
    }
    return false;
}

std::string ModelLibrary::current() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return current_;
}

std::string ModelLibrary::current_vae() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return current_vae_;
}

void ModelLibrary::set_current(const std::string& name, const std::string& vae) {
    std::lock_guard<std::mutex> lock(mutex_);
    current_ = name;
    current_vae_ = vae;
    request_load_locked(key(name, vae));
}

ModelLibrary::View ModelLibrary::view(const std::string& name, const std::string& vae) const {
    std::lock_guard<std::mutex> lock(mutex_);
    View v;
    auto it = slots_.find(key(name, vae));
    if (it == slots_.end() && !vae.empty()) it = slots_.find(key(name, ""));  // its family
    if (it == slots_.end()) return v;
    const bool same = it->first == key(name, vae);
    v.state = same ? it->second.state : ModelState::unloaded;
    v.info = it->second.info;
    v.error = same ? it->second.error : "";
    v.load_seconds = it->second.load_seconds;
    return v;
}

OptionsPtr ModelLibrary::request_options(const std::string& name) const {
    OptionsPtr o(ggdiff_options_clone(defaults_));
    std::lock_guard<std::mutex> lock(mutex_);
    if (const CatalogEntry* e = entry_locked(name)) {
        // Checked when the catalog was read.
        for (const auto& [option, value] : e->request_defaults)
            ggdiff_options_set(o.get(), option.c_str(), value.c_str());
    }
    return o;
}

OptionsPtr ModelLibrary::load_options(const CatalogEntry& e, const std::string& vae_path) const {
    OptionsPtr o(ggdiff_options_new());
    // The command line's options but its model's files; then the entry's.
    for (const auto& [name, value] : config_.engine_options) {
        if (e.source == "command line" || !is_model_part_option(name))
            ggdiff_options_set(o.get(), name.c_str(), value.c_str());
    }
    if (!config_.lora_model_dir.empty())
        ggdiff_options_set(o.get(), "lora-model-dir", config_.lora_model_dir.c_str());
    for (const auto& [name, value] : e.load_options)
        ggdiff_options_set(o.get(), name.c_str(), value.c_str());
    if (!vae_path.empty()) ggdiff_options_set(o.get(), "vae", vae_path.c_str());
    return o;
}

void ModelLibrary::request_load_locked(const std::string& k) {
    Slot& s = slots_[k];
    if (s.state == ModelState::loaded || s.state == ModelState::loading) return;
    if (std::find(pending_.begin(), pending_.end(), k) != pending_.end()) return;
    if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { loader(); });
    pending_.push_back(k);
    cv_.notify_all();
}

void ModelLibrary::prefetch(const std::string& name, const std::string& vae) {
    std::lock_guard<std::mutex> lock(mutex_);
    request_load_locked(key(name, vae));
}

std::shared_ptr<LoadedModel> ModelLibrary::acquire(const std::string& name, const std::string& vae,
                                                   const std::function<bool()>& cancelled,
                                                   std::string* error) {
    const std::string k = key(name, vae);
    std::unique_lock<std::mutex> lock(mutex_);
    Slot& slot = slots_[k];
    const uint64_t seen = slot.attempts;
    if (slot.state != ModelState::loaded) request_load_locked(k);
    for (;;) {
        Slot& s = slots_[k];
        if (s.state == ModelState::loaded && s.model) {
            s.last_used = ++clock_;
            return s.model;
        }
        // A failure of a load that started after this call (an older one is retried).
        if (s.state == ModelState::failed && s.attempts > seen) {
            *error = s.error;
            return nullptr;
        }
        if (stopping_) {
            *error = "the server is stopping";
            return nullptr;
        }
        if (cancelled) {
            // Outside the library's lock: the callback takes the job queue's.
            lock.unlock();
            const bool stop = cancelled();
            lock.lock();
            if (stop) {
                *error = "cancelled while the model loaded";
                return nullptr;
            }
        }
        cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
}

std::vector<std::string> ModelLibrary::loaded() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::pair<uint64_t, std::string>> order;
    for (const auto& [k, s] : slots_)
        if (s.state == ModelState::loaded) order.emplace_back(s.last_used, k);
    std::sort(order.rbegin(), order.rend());
    std::vector<std::string> out;
    for (auto& [t, k] : order) out.push_back(k);
    return out;
}

int64_t ModelLibrary::memory_used() const {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t used = 0;
    for (const auto& [k, s] : slots_)
        if (s.model) used += s.model->bytes;
    return used;
}

ModelLibrary::Slot* ModelLibrary::lru_idle_locked(const std::string& keep, std::string* key) {
    Slot* victim = nullptr;
    for (auto& [other, s] : slots_) {
        if (!s.model || other == keep || s.model.use_count() > 1) continue;
        if (!victim || s.last_used < victim->last_used) {
            victim = &s;
            *key = other;
        }
    }
    return victim;
}

void ModelLibrary::evict_for_locked(std::unique_lock<std::mutex>& lock, const std::string& k,
                                    int64_t need,
                                    std::vector<std::shared_ptr<LoadedModel>>* dropped) {
    for (;;) {
        int count = 0;
        int64_t used = 0;
        for (const auto& [other, s] : slots_) {
            if (s.model && other != k) {
                ++count;
                used += s.model->bytes;
            }
        }
        const bool over_count = count >= max_loaded_;
        const bool over_memory = budget_ > 0 && count > 0 && used + need > budget_;
        if ((!over_count && !over_memory) || stopping_) return;
        // The least recently used model no job holds.
        std::string victim_key;
        Slot* victim = lru_idle_locked(k, &victim_key);
        if (!victim) {
            // Every loaded model is in use: wait for a job to end.
            cv_.wait_for(lock, std::chrono::milliseconds(100));
            continue;
        }
        std::fprintf(stderr, "unloading %s (%s)\n", victim_key.c_str(),
                     over_count ? ("--max-loaded-models " + std::to_string(max_loaded_)).c_str()
                                : ("--models-memory-mb: " + mib(used) + " + " + mib(need) +
                                   " over " + mib(budget_))
                                      .c_str());
        dropped->push_back(std::move(victim->model));
        victim->state = ModelState::unloaded;
    }
}

void ModelLibrary::loader() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
        if (stopping_) return;
        const std::string k = pending_.front();
        pending_.pop_front();
        Slot& slot = slots_[k];
        if (slot.state == ModelState::loaded) continue;
        const size_t bar = k.find('|');
        const std::string name = k.substr(0, bar);
        const std::string vae = bar == std::string::npos ? "" : k.substr(bar + 1);
        const CatalogEntry* e = entry_locked(name);
        std::string vae_path;
        for (const VaeEntry& v : catalog_.vaes)
            if (v.name == vae) vae_path = v.path;
        if (!e || (!vae.empty() && vae_path.empty())) {
            slot.state = ModelState::failed;
            slot.error = !e ? "\"" + name + "\" is no longer listed (refresh-checkpoints)"
                            : "VAE \"" + vae + "\" is no longer in the VAE folder";
            slot.attempts++;
            cv_.notify_all();
            continue;
        }
        const CatalogEntry entry = *e;
        slot.state = ModelState::loading;
        cv_.notify_all();
        OptionsPtr options = load_options(entry, vae_path);

        // Room first: the least recently used idle models go until this one fits.
        lock.unlock();
        int64_t need = entry.bytes, available = 0;
        const bool planned = plan_memory(options.get(), &need, &available);
        lock.lock();
        std::vector<std::shared_ptr<LoadedModel>> dropped;
        evict_for_locked(lock, k, need, &dropped);
        if (budget_ == 0 && planned) {
            // No budget given: the planner's free memory. Evict idle models while it lacks.
            while (need > available && !stopping_) {
                // The least recently used model no job holds.
                std::string victim_key;
                Slot* victim = lru_idle_locked(k, &victim_key);
                if (!victim) break;  // nothing idle left: try anyway
                std::fprintf(stderr, "unloading %s (the planner sees %s free, %s needed)\n",
                             victim_key.c_str(), mib(available).c_str(), mib(need).c_str());
                available += victim->model->bytes;
                dropped.push_back(std::move(victim->model));
                victim->state = ModelState::unloaded;
            }
        }
        if (budget_ > 0 && need > budget_) {
            std::fprintf(stderr,
                         "warning: %s needs %s by the planner's figures, more than "
                         "--models-memory-mb (%s); loading it anyway\n",
                         k.c_str(), mib(need).c_str(), mib(budget_).c_str());
        }
        lock.unlock();
        dropped.clear();  // frees them (unless a job still holds one: then when it ends)

        std::fprintf(stderr, "loading %s...\n", k.c_str());
        const auto t0 = std::chrono::steady_clock::now();
        ggdiff_model* model = nullptr;
        const int rc = ggdiff_model_load(options.get(), &model);
        const std::string error = rc != 0 ? ggdiff_last_error() : "";
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        nlohmann::json info;
        if (rc == 0) {
            char* text = nullptr;
            if (ggdiff_loaded_model_info(model, &text) == 0 && text) {
                info = nlohmann::json::parse(text, nullptr, false);
                if (info.is_discarded()) info = nlohmann::json::object();
            }
            std::free(text);
            info["file"] = fs::path(entry.path).filename().string();
            info["title"] = entry.title;
            info["model_name"] = entry.name;
            info["video"] = video_info(model, options.get());
            std::fprintf(stderr, "loaded %s in %.1f s\n", k.c_str(), seconds);
        } else {
            std::fprintf(stderr, "error: loading %s: %s\n", k.c_str(), error.c_str());
        }

        lock.lock();
        Slot& done = slots_[k];
        done.attempts++;
        if (rc == 0) {
            auto loaded = std::make_shared<LoadedModel>();
            loaded->model = model;
            loaded->info = info;
            loaded->bytes = need;
            loaded->load_seconds = seconds;
            done.model = std::move(loaded);
            done.state = ModelState::loaded;
            done.info = info;
            done.error.clear();
            done.load_seconds = seconds;
            done.last_used = ++clock_;
        } else {
            done.state = ModelState::failed;
            done.error = error;
        }
        cv_.notify_all();
    }
}

}  // namespace ggdiff::server
