#include "sampling/parameterization.h"

#include <algorithm>
#include <cmath>

namespace ggdiff::sampling {

namespace {

// The alphas_cumprod product, accumulated in float as stable-diffusion.cpp does so that the
// table (and everything derived from it) matches its values.
std::vector<float> scaled_linear_alphas(int steps, float linear_start, float linear_end) {
    std::vector<float> alphas(static_cast<size_t>(steps));
    const float start_sqrt = std::sqrt(linear_start);
    const float amount = std::sqrt(linear_end) - start_sqrt;
    float product = 1.0f;
    for (int i = 0; i < steps; ++i) {
        const float beta = start_sqrt + amount * (static_cast<float>(i) / (steps - 1));
        product *= 1.0f - std::pow(beta, 2.0f);
        alphas[static_cast<size_t>(i)] = product;
    }
    return alphas;
}

float snr_shift(float shift, float s) {
    if (shift == 1.0f) return s;
    return shift * s / (1 + (shift - 1) * s);
}

float exp_shift(float mu, float s) {
    return std::exp(mu) / (std::exp(mu) + (1.0f / s - 1.0f));
}

}  // namespace

Parameterization Parameterization::discrete(Prediction p, int train_steps, float linear_start,
                                            float linear_end) {
    Parameterization m;
    m.prediction_ = p;
    m.time_map_ = TimeMap::Discrete;
    m.train_steps_ = std::max(train_steps, 2);
    m.build_table(scaled_linear_alphas(m.train_steps_, linear_start, linear_end));
    return m;
}

Result<Parameterization> Parameterization::discrete_from_alphas(Prediction p,
                                                                std::vector<float> alphas) {
    if (alphas.size() < 2) return Status::Error("alphas_cumprod needs at least 2 entries");
    for (size_t i = 0; i < alphas.size(); ++i) {
        const float a = alphas[i];
        if (!(a > 0.0f && a <= 1.0f))
            return Status::Error("alphas_cumprod[" + std::to_string(i) + "] is not in (0, 1]");
        if (i > 0 && !(a < alphas[i - 1]))
            return Status::Error("alphas_cumprod must be strictly decreasing (index " +
                                 std::to_string(i) + ")");
    }
    Parameterization m;
    m.prediction_ = p;
    m.time_map_ = TimeMap::Discrete;
    m.train_steps_ = static_cast<int>(alphas.size());
    m.build_table(std::move(alphas));
    return m;
}

Parameterization Parameterization::flow(float shift) {
    Parameterization m;
    m.prediction_ = Prediction::Flow;
    m.time_map_ = TimeMap::FlowSnr;
    m.shift_ = shift;
    return m;
}

Parameterization Parameterization::flux_flow(float mu) {
    Parameterization m;
    m.prediction_ = Prediction::Flow;
    m.time_map_ = TimeMap::FlowExpShift;
    m.shift_ = mu;
    return m;
}

Parameterization Parameterization::x0_linear(float start_noise) {
    Parameterization m;
    m.prediction_ = Prediction::X0;
    m.time_map_ = TimeMap::Linear;
    m.start_noise_ = start_noise;
    return m;
}

Parameterization Parameterization::edm_v(float sigma_min, float sigma_max, float sigma_data) {
    Parameterization m;
    m.prediction_ = Prediction::EdmV;
    m.time_map_ = TimeMap::Edm;
    m.edm_sigma_min_ = sigma_min;
    m.edm_sigma_max_ = sigma_max;
    m.sigma_data_ = sigma_data;
    return m;
}

void Parameterization::build_table(std::vector<float> alphas) {
    alphas_cumprod_ = std::move(alphas);
    sigmas_.resize(alphas_cumprod_.size());
    log_sigmas_.resize(alphas_cumprod_.size());
    for (size_t i = 0; i < alphas_cumprod_.size(); ++i) {
        const float a = alphas_cumprod_[i];
        sigmas_[i] = std::sqrt((1 - a) / a);
        log_sigmas_[i] = std::log(sigmas_[i]);
    }
}

float Parameterization::sigma_min() const {
    switch (time_map_) {
        case TimeMap::Discrete:
            return sigmas_.front();
        case TimeMap::Edm:
            return edm_sigma_min_;
        case TimeMap::FlowSnr:
        case TimeMap::FlowExpShift:
            return t_to_sigma(0.0f);
        case TimeMap::Linear:
            return 0.0f;
    }
    return 0.0f;
}

float Parameterization::sigma_max() const {
    switch (time_map_) {
        case TimeMap::Discrete:
            return sigmas_.back();
        case TimeMap::Edm:
            return edm_sigma_max_;
        case TimeMap::FlowSnr:
        case TimeMap::FlowExpShift:
            return t_to_sigma(static_cast<float>(train_steps_ - 1));
        case TimeMap::Linear:
            return 1.0f;
    }
    return 1.0f;
}

float Parameterization::sigma_to_t(float sigma) const {
    switch (time_map_) {
        case TimeMap::Discrete: {
            // Bracket log(sigma) between two table entries and interpolate the index.
            const int n = static_cast<int>(log_sigmas_.size());
            const float log_sigma = std::log(sigma);
            int low = 0;
            for (float ls : log_sigmas_)
                if (log_sigma - ls >= 0) ++low;
            low = std::min(std::max(low - 1, 0), n - 2);
            const int high = low + 1;
            const float lo = log_sigmas_[static_cast<size_t>(low)];
            const float hi = log_sigmas_[static_cast<size_t>(high)];
            float w = (lo - log_sigma) / (lo - hi);
            w = std::max(0.0f, std::min(1.0f, w));
            return (1.0f - w) * low + w * high;
        }
        case TimeMap::Edm:
            return 0.25f * std::log(sigma);
        case TimeMap::FlowSnr:
            return sigma * 1000.0f;
        case TimeMap::FlowExpShift:
            return sigma;
        case TimeMap::Linear:
            return 1.0f - sigma;
    }
    return 0.0f;
}

float Parameterization::t_to_sigma(float t) const {
    switch (time_map_) {
        case TimeMap::Discrete: {
            const float t_max = static_cast<float>(log_sigmas_.size() - 1);
            t = std::max(0.0f, std::min(t_max, t));  // the table has no entries outside
            const int low = static_cast<int>(std::floor(t));
            const int high = static_cast<int>(std::ceil(t));
            const float w = t - static_cast<float>(low);
            const float log_sigma = (1.0f - w) * log_sigmas_[static_cast<size_t>(low)] +
                                    w * log_sigmas_[static_cast<size_t>(high)];
            return std::exp(log_sigma);
        }
        case TimeMap::Edm:
            return std::exp(t * 4 / static_cast<float>(train_steps_));
        case TimeMap::FlowSnr:
            return snr_shift(shift_, (t + 1) / 1000.0f);
        case TimeMap::FlowExpShift:
            return exp_shift(shift_, (t + 1) / static_cast<float>(train_steps_));
        case TimeMap::Linear:
            return 1.0f - t;
    }
    return 0.0f;
}

Parameterization::Scalings Parameterization::scalings(float sigma) const {
    switch (prediction_) {
        case Prediction::Eps:
            return {1.0f, -sigma, 1.0f / std::sqrt(sigma * sigma + 1.0f)};
        case Prediction::Flow:
            return {1.0f, -sigma, 1.0f};
        case Prediction::X0:
            return {0.0f, 1.0f, 1.0f};
        case Prediction::V:
        case Prediction::EdmV:
            break;
    }
    const float sd = sigma_data_;
    const float var = sigma * sigma + sd * sd;
    return {sd * sd / var, -sigma * sd / std::sqrt(var), 1.0f / std::sqrt(var)};
}

Parameterization::ModelStep Parameterization::model_step(float sigma, int shifted_timestep) const {
    ModelStep step{sigma_to_t(sigma), scalings(sigma)};
    if (shifted_timestep <= 0) return step;
    const float steps = static_cast<float>(train_steps_);
    const float shifted = step.t * (static_cast<float>(shifted_timestep) / steps);
    const float t = std::max(0.0f, std::min(steps - 1, std::round(shifted)));
    const Scalings at = scalings(t_to_sigma(t));
    step.t = t;
    step.s.c_skip = at.c_skip * step.s.c_in / at.c_in;
    step.s.c_out = at.c_out;
    return step;
}

std::vector<float> Parameterization::noise_latent(const std::vector<float>& x0,
                                                  const std::vector<float>& noise,
                                                  float sigma) const {
    std::vector<float> out(noise.size());
    const bool has_x0 = x0.size() == noise.size();
    if (prediction_ == Prediction::X0) {
        for (size_t i = 0; i < noise.size(); ++i) out[i] = noise[i] * start_noise_;
        return out;
    }
    for (size_t i = 0; i < noise.size(); ++i) {
        const float clean = has_x0 ? x0[i] : 0.0f;
        out[i] = is_flow() ? clean * (1.0f - sigma) + noise[i] * sigma : clean + noise[i] * sigma;
    }
    return out;
}

std::vector<float> Parameterization::inverse_noise_scaling(float sigma,
                                                           const std::vector<float>& x) const {
    if (!is_flow() || sigma == 0.0f) return x;
    std::vector<float> out(x.size());
    const float scale = 1.0f / (1.0f - sigma);
    for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * scale;
    return out;
}

float Parameterization::noise_level_to_sigma(float level) const {
    return is_flow() || prediction_ == Prediction::X0 ? level : level / (1.0f - level);
}

const std::vector<float>& Parameterization::alphas_cumprod() const {
    if (time_map_ == TimeMap::Discrete) return alphas_cumprod_;
    static const std::vector<float> sd1 = scaled_linear_alphas(1000, 0.00085f, 0.012f);
    return sd1;
}

void apply_scalings(const std::vector<float>& model_out, const std::vector<float>& x,
                    const Parameterization::Scalings& s, std::vector<float>& out) {
    out.resize(model_out.size());
    for (size_t i = 0; i < model_out.size(); ++i) out[i] = model_out[i] * s.c_out + x[i] * s.c_skip;
}

Parameterization with_flow_shift(const Parameterization& model, std::optional<float> shift) {
    Parameterization out = model;
    const bool flow = model.time_map() == Parameterization::TimeMap::FlowSnr ||
                      model.time_map() == Parameterization::TimeMap::FlowExpShift;
    if (shift && flow) out.set_shift(*shift);
    return out;
}

std::vector<std::string> prediction_names() {
    return {"eps", "v", "edm_v", "sd3_flow", "flux_flow", "flux2_flow", "sefi_flow"};
}

}  // namespace ggdiff::sampling
