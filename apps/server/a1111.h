// AUTOMATIC1111 API specifics: the settings /sdapi/v1/options reads and writes, the `info`
// string of txt2img/img2img responses, and sampler/scheduler lists in its spelling.
#pragma once

#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "gen_request.h"
#include "jobs.h"
#include "model_host.h"

namespace ggdiff::server {

// The A1111 settings that apply here. Others are refused by name (400).
class A1111Settings {
  public:
    // `pnginfo`: whether images carry their parameters until a client says otherwise.
    A1111Settings(ModelHost& host, bool pnginfo) : host_(host), pnginfo_(pnginfo) {}

    nlohmann::json get() const;
    // Applies every key or none: unknown keys and wrong values are 400s naming the key.
    // sd_model_checkpoint and sd_vae switch the model requests use (it starts loading now).
    void set(const nlohmann::json& body);

    // What requests use: output format ("png", "jpeg", "webp"), default clip skip (0: the
    // model's), rng ("" = the engine default), whether images carry their parameters.
    std::string samples_format() const;
    int clip_skip() const;
    std::string rng() const;
    bool enable_pnginfo() const;
    // Live previews (/progress current_image): on (live_previews_enable) every N sampling
    // steps (show_progress_every_n_steps; -1 or 0: none while sampling). 0 when off.
    int preview_interval() const;

    // Applies an override_settings object to one request only (same keys and checks;
    // sd_model_checkpoint and sd_vae are the request's model, read by choose_model first);
    // `preview_interval` as preview_interval() says it for this request.
    void apply_overrides(const nlohmann::json& overrides, GenRequest& request,
                         std::string* samples_format, bool* pnginfo, int* preview_interval) const;

  private:
    ModelHost& host_;
    mutable std::mutex mutex_;
    std::string samples_format_ = "png";
    int clip_skip_ = 1;
    std::string randn_source_ = "GPU";
    bool pnginfo_;
    bool live_previews_ = true;  // A1111's defaults
    int preview_every_ = 10;
};

// The `info` JSON string (MISSION.md): prompt, negative_prompt (if any), seed, cfg_scale,
// width, height, steps, sampler_name, clip_skip (if set), extra_generation_params
// ({"Schedule type"} when a scheduler was chosen), denoising_strength (img2img),
// sd_model_name, sd_vae_name, version, infotexts, all_prompts, all_negative_prompts,
// all_seeds.
// `scheduler_chosen`: the request (or the server's --scheduler) named a scheduler.
std::string a1111_info(const JobView& job, const GenRequest& request,
                       const nlohmann::json& model_info, bool scheduler_chosen);

nlohmann::json a1111_samplers(const nlohmann::json& samplers);
nlohmann::json a1111_schedulers(const nlohmann::json& schedulers);

}  // namespace ggdiff::server
