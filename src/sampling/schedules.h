// Sigma schedules: which noise levels a sampler visits. Every schedule returns `steps`
// descending sigmas followed by a terminal 0 (steps + 1 values), computed the way
// stable-diffusion.cpp computes them for the same model so the trajectories match.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "sampling/parameterization.h"
#include "sampling/schedule_tables.h"

namespace ggdiff::sampling {

enum class ScheduleKind {
    Discrete,
    Karras,
    Exponential,
    Ays,
    Gits,
    SgmUniform,
    Simple,
    Smoothstep,
    Lcm,
    Flux,   // FLUX.1's resolution-dependent exponential shift of evenly spaced levels
    Flux2,  // FLUX.2's: the same shift with an empirical mu from the size and step count
    // Ideogram 4's: sigma = sigmoid(mu + std * z) at the normal quantiles z of 1 - i/steps,
    // mu shifted by the size (resolution aware), clamped to its log-SNR range
    LogitNormal
};

// CLI names ("discrete", "karras", ..., "sgm_uniform") and A1111 "Schedule type" names
// ("Karras", "Align Your Steps", "SGM Uniform", "Normal"/"Uniform" for discrete ...),
// case-insensitive, '-'/'_'/' ' interchangeable.
Result<ScheduleKind> parse_schedule(const std::string& name);
const char* schedule_name(ScheduleKind kind);
const char* schedule_a1111_name(ScheduleKind kind);
// The other spellings parse_schedule accepts for a schedule ("normal", "align_your_steps").
std::vector<std::string> schedule_aliases(ScheduleKind kind);
std::vector<std::string> schedule_names();

struct ScheduleOptions {
    // Which Align-Your-Steps table; AYS was published for these model families only.
    AysModel ays = AysModel::Sd1;
    // Karras' rho.
    float karras_rho = 7.0f;
    // flux: mu = base_shift + (max_shift - base_shift) * (image_seq_len - 256) / (4096 - 256),
    // image_seq_len being the latent's pixel count (as stable-diffusion.cpp counts it); a
    // finite flux_mu (from --flow-shift) replaces it.
    int64_t image_seq_len = 4096;
    float flux_base_shift = 0.5f;
    float flux_max_shift = 1.15f;
    float flux_mu = NAN;
    // logit_normal: mean and deviation of the logit of sigma, the log-SNR range it is clamped
    // to, and whether the mean moves by log(image_seq_len / 1024) / 2 (Ideogram 4's defaults).
    float logit_mean = 0.0f;
    float logit_std = 1.75f;
    float logsnr_min = -15.0f;
    float logsnr_max = 18.0f;
    bool logit_resolution_aware = true;
};

// The mu of the flux schedule for these options.
float flux_schedule_mu(const ScheduleOptions& options);
// The mu of the flux2 schedule (Black Forest Labs' empirical fit: linear in image_seq_len,
// interpolated between its 10- and 200-step lines by the step count up to 4300 tokens).
// --flow-shift (flux_mu) does not change it, as in stable-diffusion.cpp.
float flux2_schedule_mu(const ScheduleOptions& options, int steps);

// The logit_normal schedule's sigmas (stable-diffusion.cpp's LogitNormalScheduler).
std::vector<float> logit_normal_sigmas(int steps, const ScheduleOptions& options);

// `steps` in [1, 10000]. discrete/sgm_uniform/simple/smoothstep/lcm walk the model's
// timesteps; karras/exponential span [sigma_min, sigma_max] of the model; ays/gits use
// their published tables (in SD sigma space) regardless of the model; flux and flux2 are
// e^mu / (e^mu + 1/t - 1) at t = 1, 1 - 1/steps, ..., 1/steps (flow models).
Result<std::vector<float>> make_sigmas(ScheduleKind kind, int steps, const Parameterization& model,
                                       const ScheduleOptions& options = {});

// --sigmas "14.6,7.1,...,0": comma (or space) separated, at least 2 finite values >= 0, not
// increasing. A list without a trailing 0 is kept as is (sampling then stops at that level).
Result<std::vector<float>> parse_sigmas(const std::string& csv);

// img2img: the tail of a full schedule that a strength in (0, 1) keeps, as sd.cpp cuts it:
// t_enc = int(steps * strength) (minus one if that equals steps), sigmas[steps - t_enc - 1 :].
// strength >= 1 keeps everything; strength <= 0 keeps the final step only.
std::vector<float> img2img_sigmas(const std::vector<float>& sigmas, float strength);

}  // namespace ggdiff::sampling
