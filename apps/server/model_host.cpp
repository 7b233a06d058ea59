#include "model_host.h"

#include <cstdlib>
#include <filesystem>

namespace ggdiff::server {

namespace {

// Calls a C API function that hands out JSON text and parses it (null on failure).
template <class F>
nlohmann::json api_json(F&& call) {
    char* text = nullptr;
    const int rc = call(&text);
    nlohmann::json j =
        rc == 0 && text ? nlohmann::json::parse(text, nullptr, false) : nlohmann::json();
    std::free(text);
    return j.is_discarded() ? nlohmann::json() : j;
}

ggdiff_options* make_defaults(const ServerConfig& config) {
    ggdiff_options* o = ggdiff_options_new();
    for (const auto& [name, value] : config.engine_options) {
        ggdiff_options_set(o, name.c_str(), value.c_str());
    }
    return o;
}

}  // namespace

ModelHost::ModelHost(const ServerConfig& config)
    : config_(config), defaults_(make_defaults(config)), library_(config, defaults_.get()) {
    // LoRA is there when the engine knows the option; until then requests using it are told
    // that it is not supported yet.
    OptionsPtr probe(ggdiff_options_new());
    lora_supported_ = ggdiff_options_set(probe.get(), "lora-model-dir", ".") == 0;
    if (lora_supported_ && !config.lora_model_dir.empty()) {
        ggdiff_options_set(defaults_.get(), "lora-model-dir", config.lora_model_dir.c_str());
    }
    samplers_ = api_json([](char** t) { return ggdiff_list_samplers(t); });
    families_ = api_json([](char** t) { return ggdiff_list_families(t); });
    schedulers_ = api_json([](char** t) { return ggdiff_list_schedulers(t); });
}

ModelHost::~ModelHost() {
    library_.stop();
}

std::string ModelHost::scan() {
    return library_.refresh();
}

bool ModelHost::load() {
    std::string error;
    auto model = library_.acquire(library_.current(), library_.current_vae(), nullptr, &error);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!model) {
        error_ = error;
        // With a library the server goes on: requests may name the other models.
        state_ = config_.models_dir.empty() ? State::failed : State::ready;
        return false;
    }
    load_seconds_ = model->load_seconds;
    state_ = State::ready;
    return true;
}

std::string ModelHost::load_error() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
}

OptionsPtr ModelHost::request_options(const std::string& name) const {
    return library_.request_options(name.empty() ? library_.current() : name);
}

std::string ModelHost::default_value(const std::string& name) const {
    std::string value;
    for (const auto& kv : config_.engine_options)
        if (kv.first == name) value = kv.second;
    return value;
}

std::string ModelHost::option_value(const std::string& name) const {
    const char* text = nullptr;
    if (ggdiff_options_get(defaults_.get(), name.c_str(), &text) != 0 || !text) return "";
    return text;
}

nlohmann::json ModelHost::model_info(const std::string& name, const std::string& vae) const {
    const std::string n = name.empty() ? library_.current() : name;
    const std::string v = name.empty() ? library_.current_vae() : vae;
    ModelLibrary::View view = library_.view(n, v);
    if (view.info.is_object() && !view.info.empty()) return view.info;
    for (const CatalogEntry& e : library_.catalog().models) {
        if (e.name != n) continue;
        const std::filesystem::path p(e.path);
        return {{"name", p.stem().string()},
                {"file", p.filename().string()},
                {"title", e.title},
                {"model_name", e.name},
                {"family", nullptr}};
    }
    return {{"name", n}, {"family", nullptr}};
}

}  // namespace ggdiff::server
