#include "model_host.h"

#include <chrono>
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

}  // namespace

ModelHost::ModelHost(const ServerConfig& config)
    : config_(config), defaults_(ggdiff_options_new()) {
    for (const auto& [name, value] : config.engine_options) {
        ggdiff_options_set(defaults_.get(), name.c_str(), value.c_str());
    }
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
    const std::string main = !default_value("model").empty() ? default_value("model")
                             : !default_value("diffusion-model").empty()
                                 ? default_value("diffusion-model")
                                 : config.builtin_model;
    const std::filesystem::path p(main);
    info_ = {{"name", p.stem().string()}, {"file", p.filename().string()}, {"family", nullptr}};
}

ModelHost::~ModelHost() {
    if (model_) ggdiff_model_free(model_);
}

bool ModelHost::load() {
    const auto t0 = std::chrono::steady_clock::now();
    ggdiff_model* model = nullptr;
    if (ggdiff_model_load(defaults_.get(), &model) != 0) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = ggdiff_last_error();
        state_ = State::failed;
        return false;
    }
    nlohmann::json info =
        api_json([model](char** t) { return ggdiff_loaded_model_info(model, t); });
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const std::string file = info_.value("file", "");
        if (info.is_object()) info_ = info;
        info_["file"] = file;
        model_ = model;
        load_seconds_ =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    state_ = State::ready;
    return true;
}

std::string ModelHost::load_error() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
}

OptionsPtr ModelHost::request_options() const {
    return OptionsPtr(ggdiff_options_clone(defaults_.get()));
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

nlohmann::json ModelHost::model_info() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return info_;
}

}  // namespace ggdiff::server
