// Step caching (--cache-mode): skipping denoiser evaluations whose result can be predicted
// from earlier ones, as stable-diffusion.cpp does. Everything here acts on whole denoiser
// calls, never inside a network:
//   - easycache (DiT), ucache (UNet): per condition (prompt, negative prompt, ...) the last
//     computed output minus its input is kept; when the estimated change of the output since
//     the last computed step stays under a threshold, a step returns input + that residual
//     for every condition instead of running the network;
//   - dbcache, taylorseer, cache-dit (DiT): the same residual reuse, decided by the relative
//     change of the input since the last computed step (the reference engine runs all three
//     through one condition-level cache, so they decide alike);
//   - spectrum (UNet and DiT): forecasts the CFG-combined denoised estimate from the last
//     computed ones (Chebyshev ridge fit blended with a Taylor step) on a growing window of
//     evaluations, and the forecast replaces the whole evaluation.
// Pure logic: no model, no tensors beyond flat float vectors.
#pragma once

#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "sampling/parameterization.h"
#include "sampling/samplers.h"

namespace ggdiff::sampling {

enum class CacheMode { None, EasyCache, UCache, DbCache, TaylorSeer, CacheDit, Spectrum };

// "disabled" (None), "easycache", "ucache", "dbcache", "taylorseer", "cache-dit", "spectrum".
std::vector<std::string> cache_mode_names();
Result<CacheMode> parse_cache_mode(const std::string& name);
const char* cache_mode_name(CacheMode mode);

// The reference engine's cache parameters with its defaults. Which ones a mode reads:
//   easycache: threshold (default 0.2), start, end;
//   ucache: threshold (default 1.0), start, end, decay, relative, reset;
//   dbcache / taylorseer / cache-dit: residual_diff_threshold, fn, bn (the threshold is
//     scaled by Fn and Bn); warmup, the SCM mask and policy are accepted but the reference's
//     condition-level cache never reads them;
//   spectrum: w, m, lam, window, flex, spectrum_warmup, stop.
struct CacheParams {
    CacheMode mode = CacheMode::None;
    float reuse_threshold = INFINITY;  // easycache/ucache "threshold"; inf: the mode's default
    float start = 0.15f;               // fraction of the schedule where caching may begin
    float end = 0.95f;                 // and where it stops
    float decay = 1.0f;                // ucache: accumulated error decay per step
    bool relative = true;              // ucache: threshold relative to the output's norm
    bool reset = true;                 // ucache: accumulated error restarts on a computed step
    int fn = 8, bn = 0;                // cache-dit: front / back compute blocks
    float residual_diff_threshold = 0.08f;
    int max_warmup_steps = 8;
    int max_cached_steps = -1, max_continuous_cached_steps = -1;
    int taylorseer_derivatives = 1, taylorseer_interval = 1;
    std::vector<int> scm_mask;  // --scm-mask: 1 compute, 0 may cache
    bool scm_dynamic = true;    // --scm-policy dynamic (else static)
    float spectrum_w = 0.40f;   // weight of the Chebyshev fit against the Taylor step
    int spectrum_m = 3;         // Chebyshev degree
    float spectrum_lam = 1.0f;  // ridge
    int spectrum_window = 2;
    float spectrum_flex = 0.5f;
    int spectrum_warmup = 4;
    float spectrum_stop = 0.9f;

    // The easycache/ucache threshold with the mode's default filled in.
    float effective_reuse_threshold() const;
};

// The --cache-option keys, in the order --help lists them.
std::vector<std::string> cache_option_keys();

// Applies "key=value,key=value" to `p` for `p.mode` ("threshold" and "warmup" mean
// different parameters per mode, as in the reference). Unknown keys, a missing '=' and
// values that are not numbers are errors; keys of another mode are accepted (the reference
// takes every key with every mode) and listed in `*unused` when given.
Status apply_cache_options(const std::string& text, CacheParams& p,
                           std::vector<std::string>* unused = nullptr);

// --scm-mask: comma-separated 0/1.
Result<std::vector<int>> parse_scm_mask(const std::string& text);

// Value ranges (threshold >= 0, 0 <= start < end <= 1 for easycache/ucache, spectrum's
// window >= 1 and degree >= 0, ...). Errors name the --cache-option key.
Status check_cache_params(const CacheParams& p);

// The kind of network behind the loaded family's denoiser: which caches apply.
enum class DenoiserArch { UNet, DiT };

// One item's step cache (make one per sampled item; begin() restarts it).
class StepCache {
  public:
    StepCache(const CacheParams& params, DenoiserArch arch, const Parameterization& model,
              SamplerKind sampler);
    ~StepCache();
    StepCache(const StepCache&) = delete;
    StepCache& operator=(const StepCache&) = delete;

    // Starts a sampling run over `sigmas`: forgets everything, and logs what is enabled or
    // why the mode does nothing for this family / sampler (the reference's warnings).
    void begin(const std::vector<float>& sigmas);
    // Whether the mode acts on this run (after begin).
    bool enabled() const;

    // Spectrum, at the start of every denoiser evaluation: true when this evaluation is
    // forecast; `denoised` is then the forecast (the CFG-combined denoised estimate, before
    // any inpainting blend) and nothing else runs.
    bool forecast(std::vector<float>& denoised);
    // Spectrum, after an evaluation that ran: its denoised estimate (before the blend).
    void record(const std::vector<float>& denoised);

    // Condition-level modes. begin_step once per evaluation (predictor evaluations, which the
    // reference passes a negative step, take no part); then for each condition (identified
    // by address, the same object every step): reuse() before running it (true: `output`
    // holds the reused raw network output for `input`), store() after it ran. Conditions run
    // in one batch may all be asked first and stored after.
    void begin_step(DenoiseStep at, float sigma);
    bool reuse(const void* cond, const std::vector<float>& input, std::vector<float>& output);
    void store(const void* cond, const std::vector<float>& input, const std::vector<float>& output);
    // Whether this step reuses instead of computing (skip-layer guidance and ControlNet
    // passes are left out then, as in the reference).
    bool step_skipped() const;

    // Steps skipped so far in this run.
    int skipped() const;
    // The end-of-run log line ("UCache skipped 5/8 steps (1.60x estimated speedup)"), or ""
    // when the mode is off.
    std::string summary(size_t total_steps) const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ggdiff::sampling
