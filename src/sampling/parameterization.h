// A model's noise parameterization and training schedule, in the k-diffusion view every
// sampler here shares: a latent at noise level sigma is x = x0 + sigma * n (eps, v, EDM)
// or x = (1 - sigma) x0 + sigma n (rectified flow), and the network F is wrapped as a
// denoiser D(x, sigma) = c_skip * x + c_out * F(c_in * x, t(sigma)).
//
// MiniT2I's "x0" model is neither: the network returns the clean sample itself (c_skip 0,
// c_out 1, c_in 1), sigma runs 1 -> 0 in even steps, and sampling starts from scaled noise.
//
// The discrete (DDPM) family keeps its 1000-entry training table and maps sigma <-> t by
// linear interpolation of log sigma between table entries, exactly as stable-diffusion.cpp
// does, so schedules and model timesteps match it bit for bit where the arithmetic allows.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace ggdiff::sampling {

enum class Prediction { Eps, V, EdmV, Flow, X0 };

class Parameterization {
  public:
    // How t relates to sigma.
    enum class TimeMap {
        Discrete,      // DDPM training table (SD1, SD2, SDXL)
        Edm,           // t = log(sigma) / 4 (SDXL EDM-v / Playground style)
        FlowSnr,       // SD3 / Qwen / Wan: sigma = shift*s / (1 + (shift-1)*s), t = 1000*sigma
        FlowExpShift,  // FLUX: sigma = e^mu / (e^mu + 1/s - 1), t = sigma
        Linear,        // t = 1 - sigma, sigma in [0, 1]; every schedule is 1 - i/steps (X0)
    };

    // DDPM "scaled linear" betas: beta_i = (sqrt(start) + i/(T-1) (sqrt(end)-sqrt(start)))^2.
    // The defaults are SD1/SD2/SDXL's. `p` must be Eps or V (anything else is treated as V
    // scalings with this table, which is what an EDM-v model on a DDPM table would mean).
    static Parameterization discrete(Prediction p = Prediction::Eps, int train_steps = 1000,
                                     float linear_start = 0.00085f, float linear_end = 0.012f);
    // A model that ships its own alphas_cumprod (strictly decreasing, in (0, 1]).
    static Result<Parameterization> discrete_from_alphas(Prediction p,
                                                         std::vector<float> alphas_cumprod);
    // Rectified flow with SD3's timestep shift (SD3: 3.0, Qwen Image: 3.0, Wan: 5.0 ...).
    static Parameterization flow(float shift);
    // Rectified flow with FLUX's exponential shift mu (t passed to the model is sigma).
    static Parameterization flux_flow(float mu);
    // A network that predicts the clean sample (MiniT2I, as stable-diffusion.cpp's
    // MiniT2IFlowDenoiser): denoised = F(x), t = 1 - sigma, sigmas 1 - i/steps whatever the
    // schedule asked for, and every sample (img2img too: the reference ignores the init
    // latent) starts from start_noise * noise. Not a flow model for the samplers' ancestral
    // steps, as in the reference.
    static Parameterization x0_linear(float start_noise);
    static Parameterization edm_v(float sigma_min = 0.002f, float sigma_max = 120.0f,
                                  float sigma_data = 1.0f);

    Prediction prediction() const { return prediction_; }
    TimeMap time_map() const { return time_map_; }
    bool is_flow() const { return prediction_ == Prediction::Flow; }
    // Number of discrete training timesteps the schedules index (1000 for all families).
    int train_steps() const { return train_steps_; }

    float sigma_min() const;
    float sigma_max() const;
    float sigma_to_t(float sigma) const;
    float t_to_sigma(float t) const;

    // --flow-shift: replaces the shift (FlowSnr) or mu (FlowExpShift); no-op otherwise.
    void set_shift(float shift) { shift_ = shift; }
    float shift() const { return shift_; }

    struct Scalings {
        float c_skip, c_out, c_in;
    };
    Scalings scalings(float sigma) const;

    // What the model is called with at one noise level.
    struct ModelStep {
        float t;  // timestep input
        Scalings s;
    };
    // shifted_timestep > 0 is SDXL's --timestep-shift (NitroSD): the model sees the
    // timestep round(t * shift / 1000) and the output scalings are those of that timestep,
    // with c_skip rescaled to the actual input scaling.
    ModelStep model_step(float sigma, int shifted_timestep = 0) const;

    // Noises a clean latent to sigma: x0 + sigma*n, or (1-sigma) x0 + sigma n for flow
    // (x0_linear: start_noise * n). Used for the start of txt2img (x0 = 0) and img2img.
    std::vector<float> noise_latent(const std::vector<float>& x0, const std::vector<float>& noise,
                                    float sigma) const;
    // Undoes the flow family's (1 - sigma) factor at the end of sampling (identity for the
    // others, and for sigma = 0).
    std::vector<float> inverse_noise_scaling(float sigma, const std::vector<float>& x) const;
    // A noise fraction in [0, 1) (img2img "strength as noise level") to sigma.
    float noise_level_to_sigma(float level) const;

    // The DDPM table (for lcm/tcd/ddim); for non-discrete families the SD1 table, which is
    // what stable-diffusion.cpp's TCD uses for every model.
    const std::vector<float>& alphas_cumprod() const;
    // Training sigmas, ascending (index = timestep). Empty for non-discrete families.
    const std::vector<float>& train_sigmas() const { return sigmas_; }

  private:
    Parameterization() = default;
    void build_table(std::vector<float> alphas_cumprod);

    Prediction prediction_ = Prediction::Eps;
    TimeMap time_map_ = TimeMap::Discrete;
    int train_steps_ = 1000;
    float shift_ = 1.0f;
    float edm_sigma_min_ = 0.002f;
    float edm_sigma_max_ = 120.0f;
    float sigma_data_ = 1.0f;
    float start_noise_ = 1.0f;  // x0_linear
    std::vector<float> alphas_cumprod_;
    std::vector<float> sigmas_;
    std::vector<float> log_sigmas_;
};

// `model` with --flow-shift applied when one is given (set_shift: the shift of FlowSnr
// models, mu of FlowExpShift ones; models without a flow time map are returned unchanged).
Parameterization with_flow_shift(const Parameterization& model, std::optional<float> shift);

// --prediction values, as sd-cli spells them: eps, v, edm_v, sd3_flow, flux_flow, flux2_flow,
// sefi_flow.
std::vector<std::string> prediction_names();

// out = model_out * c_out + x * c_skip (the denoised estimate; same operation order as
// stable-diffusion.cpp so float results agree).
void apply_scalings(const std::vector<float>& model_out, const std::vector<float>& x,
                    const Parameterization::Scalings& s, std::vector<float>& out);

}  // namespace ggdiff::sampling
