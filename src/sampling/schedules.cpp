#include "sampling/schedules.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace ggdiff::sampling {

namespace {

struct ScheduleName {
    ScheduleKind kind;
    const char* cli;
    const char* a1111;
    std::vector<const char*> aliases;
};

const std::vector<ScheduleName>& schedule_table() {
    static const std::vector<ScheduleName> table = {
        {ScheduleKind::Discrete, "discrete", "Uniform", {"normal", "default", "automatic"}},
        {ScheduleKind::Karras, "karras", "Karras", {}},
        {ScheduleKind::Exponential, "exponential", "Exponential", {}},
        {ScheduleKind::Ays, "ays", "Align Your Steps", {"align_your_steps"}},
        {ScheduleKind::Gits, "gits", "Align Your Steps GITS", {"ays_gits"}},
        {ScheduleKind::SgmUniform, "sgm_uniform", "SGM Uniform", {}},
        {ScheduleKind::Simple, "simple", "Simple", {}},
        {ScheduleKind::Smoothstep, "smoothstep", "Smoothstep", {"smooth_step"}},
        {ScheduleKind::Lcm, "lcm", "LCM", {}},
        {ScheduleKind::Flux, "flux", "Flux", {"flux_shift"}},
        {ScheduleKind::Flux2, "flux2", "Flux2", {}},
        {ScheduleKind::LogitNormal, "logit_normal", "Logit Normal", {}},
    };
    return table;
}

std::string normalize(const std::string& name) {
    std::string out;
    for (char c : name) {
        if (c == '-' || c == ' ' || c == '_') {
            if (!out.empty() && out.back() != '_') out += '_';
        } else {
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    while (!out.empty() && out.back() == '_') out.pop_back();
    return out;
}

template <class F>
std::vector<float> by_timestep(int steps, F&& t_of_step, const Parameterization& model) {
    std::vector<float> out;
    out.reserve(static_cast<size_t>(steps) + 1);
    for (int i = 0; i < steps; ++i) out.push_back(model.t_to_sigma(t_of_step(i)));
    out.push_back(0.0f);
    return out;
}

std::vector<float> karras(int n, float sigma_min, float sigma_max, float rho) {
    sigma_min = std::max(sigma_min, 1e-6f);  // sigma_min^(1/rho) must exist
    if (n == 1) return {sigma_max, 0.0f};
    const float min_inv_rho = std::pow(sigma_min, 1.0f / rho);
    const float max_inv_rho = std::pow(sigma_max, 1.0f / rho);
    std::vector<float> out(static_cast<size_t>(n) + 1, 0.0f);
    for (int i = 0; i < n; ++i) {
        const float frac = static_cast<float>(i) / (static_cast<float>(n) - 1.0f);
        out[static_cast<size_t>(i)] =
            std::pow(max_inv_rho + frac * (min_inv_rho - max_inv_rho), rho);
    }
    return out;
}

std::vector<float> exponential(int n, float sigma_min, float sigma_max) {
    if (n == 1) return {sigma_max, 0.0f};
    const float log_min = std::log(sigma_min);
    const float log_max = std::log(sigma_max);
    const float step = (log_max - log_min) / static_cast<float>(n - 1);
    std::vector<float> out;
    for (int i = 0; i < n; ++i) out.push_back(std::exp(log_max - step * static_cast<float>(i)));
    out.push_back(0.0f);
    return out;
}

std::vector<float> from_table(const std::vector<float>& table, int n) {
    const size_t len = static_cast<size_t>(n) + 1;
    std::vector<float> out = len == table.size() ? table : log_linear_interpolation(table, len);
    out[static_cast<size_t>(n)] = 0.0f;  // the tables end at sigma_min; sampling ends at 0
    return out;
}

}  // namespace

Result<ScheduleKind> parse_schedule(const std::string& name) {
    const std::string key = normalize(name);
    for (const auto& e : schedule_table()) {
        if (key == normalize(e.cli) || key == normalize(e.a1111)) return e.kind;
        for (const char* alias : e.aliases)
            if (key == normalize(alias)) return e.kind;
    }
    std::string known;
    for (const auto& n : schedule_names()) known += (known.empty() ? "" : ", ") + n;
    return Status::Error("unknown scheduler '" + name + "' (expected one of " + known + ")");
}

const char* schedule_name(ScheduleKind kind) {
    for (const auto& e : schedule_table())
        if (e.kind == kind) return e.cli;
    return "discrete";
}

const char* schedule_a1111_name(ScheduleKind kind) {
    for (const auto& e : schedule_table())
        if (e.kind == kind) return e.a1111;
    return "Uniform";
}

std::vector<std::string> schedule_aliases(ScheduleKind kind) {
    for (const auto& e : schedule_table())
        if (e.kind == kind) return {e.aliases.begin(), e.aliases.end()};
    return {};
}

std::vector<std::string> schedule_names() {
    std::vector<std::string> out;
    for (const auto& e : schedule_table()) out.emplace_back(e.cli);
    return out;
}

float flux_schedule_mu(const ScheduleOptions& o) {
    if (std::isfinite(o.flux_mu)) return o.flux_mu;
    constexpr float kBaseLen = 256.0f, kMaxLen = 4096.0f;
    const float m = (o.flux_max_shift - o.flux_base_shift) / (kMaxLen - kBaseLen);
    const float b = o.flux_base_shift - m * kBaseLen;
    return static_cast<float>(o.image_seq_len) * m + b;
}

float flux2_schedule_mu(const ScheduleOptions& o, int steps) {
    constexpr float a1 = 8.73809524e-05f, b1 = 1.89833333f;  // the 10-step line
    constexpr float a2 = 0.00016927f, b2 = 0.45666666f;      // the 200-step line
    const float len = static_cast<float>(o.image_seq_len);
    const float m200 = a2 * len + b2;
    if (o.image_seq_len > 4300) return m200;
    const float m10 = a1 * len + b1;
    const float a = (m200 - m10) / 190.0f;
    return a * static_cast<float>(steps) + (m200 - 200.0f * a);
}

namespace {

// The normal quantile function (Acklam's rational approximation, as stable-diffusion.cpp).
double ndtri(double p) {
    if (p <= 0.0) return -std::numeric_limits<double>::infinity();
    if (p >= 1.0) return std::numeric_limits<double>::infinity();
    static const double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                -2.759285104469687e+02, 1.383577518672690e+02,
                                -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[6] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                -1.556989798598866e+02, 6.680131188771972e+01,
                                -1.328068155288572e+01, 1.0};
    static const double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                -2.400758277161838e+00, -2.549732539343734e+00,
                                4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[5] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                3.754408661907416e+00, 1.0};
    constexpr double kLow = 0.02425, kHigh = 1.0 - kLow;
    auto tail = [&](double q) {
        double num = c[0], den = d[0];
        for (int i = 1; i < 6; ++i) num = num * q + c[i];
        for (int i = 1; i < 5; ++i) den = den * q + d[i];
        return num / den;
    };
    if (p < kLow) return tail(std::sqrt(-2.0 * std::log(p)));
    if (p > kHigh) return -tail(std::sqrt(-2.0 * std::log(1.0 - p)));
    const double q = p - 0.5, r = q * q;
    double num = a[0], den = b[0];
    for (int i = 1; i < 6; ++i) num = num * r + a[i];
    for (int i = 1; i < 6; ++i) den = den * r + b[i];
    return num * q / den;
}

float sigmoid(float x) {
    return 1.0f / (1.0f + std::exp(-x));
}

}  // namespace

std::vector<float> logit_normal_sigmas(int steps, const ScheduleOptions& o) {
    constexpr int kKnownSeqLen = (512 * 512) / (16 * 16);
    float mean = o.logit_mean;
    if (o.image_seq_len > 0 && o.logit_resolution_aware) {
        mean +=
            0.5f * std::log(static_cast<float>(o.image_seq_len) / static_cast<float>(kKnownSeqLen));
    }
    const float hi = sigmoid(0.5f * o.logsnr_max), lo = sigmoid(0.5f * o.logsnr_min);
    std::vector<float> out;
    for (int i = 0; i < steps; ++i) {
        const float t = static_cast<float>(i) / static_cast<float>(steps);
        const float z = static_cast<float>(-ndtri(t));
        out.push_back(std::min(hi, std::max(lo, sigmoid(mean + o.logit_std * z))));
    }
    out.push_back(0.0f);
    return out;
}

Result<std::vector<float>> make_sigmas(ScheduleKind kind, int steps, const Parameterization& model,
                                       const ScheduleOptions& options) {
    if (steps < 1)
        return Status::Error("steps must be at least 1 (got " + std::to_string(steps) + ")");
    if (steps > 10000)
        return Status::Error("steps must be at most 10000 (got " + std::to_string(steps) + ")");
    const int n = steps;
    const int t_max = model.train_steps() - 1;
    if (model.time_map() == Parameterization::TimeMap::Linear) {
        // The model's own schedule, whichever was asked for (as stable-diffusion.cpp's
        // MiniT2IFlowDenoiser::get_sigmas).
        std::vector<float> out;
        for (int i = 0; i < n; ++i) out.push_back(1.0f - static_cast<float>(i) / n);
        out.push_back(0.0f);
        return out;
    }
    switch (kind) {
        case ScheduleKind::Discrete: {
            if (n == 1)
                return std::vector<float>{model.t_to_sigma(static_cast<float>(t_max)), 0.0f};
            const float step = static_cast<float>(t_max) / static_cast<float>(n - 1);
            return by_timestep(
                n, [&](int i) { return t_max - step * static_cast<float>(i); }, model);
        }
        case ScheduleKind::Karras:
            if (!(options.karras_rho > 0.0f)) return Status::Error("karras rho must be positive");
            return karras(n, model.sigma_min(), model.sigma_max(), options.karras_rho);
        case ScheduleKind::Exponential:
            return exponential(n, model.sigma_min(), model.sigma_max());
        case ScheduleKind::Ays:
            return from_table(ays_table(options.ays), n);
        case ScheduleKind::Gits: {
            const auto& table = gits_table();
            if (n == 1) return std::vector<float>{table.front().front(), 0.0f};
            if (n <= static_cast<int>(table.size()) + 1)
                return from_table(table[static_cast<size_t>(n - 2)], n);
            return from_table(table.back(), n);
        }
        case ScheduleKind::SgmUniform: {
            // n + 1 evenly spaced timesteps from t_max to 0; the last (t = 0) becomes sigma 0.
            const float inc = (0.0f - static_cast<float>(t_max)) / static_cast<float>(n);
            std::vector<float> ts(static_cast<size_t>(n) + 1);
            ts[0] = static_cast<float>(t_max);
            for (size_t i = 1; i < ts.size(); ++i) ts[i] = ts[i - 1] + inc;
            return by_timestep(
                n, [&](int i) { return ts[static_cast<size_t>(i)]; }, model);
        }
        case ScheduleKind::Simple: {
            const int len = model.train_steps();
            const float factor = static_cast<float>(len) / static_cast<float>(n);
            return by_timestep(
                n,
                [&](int i) {
                    const int offset = static_cast<int>(static_cast<float>(i) * factor);
                    return static_cast<float>(std::max(len - 1 - offset, 0));
                },
                model);
        }
        case ScheduleKind::Smoothstep: {
            if (n == 1)
                return std::vector<float>{model.t_to_sigma(static_cast<float>(t_max)), 0.0f};
            return by_timestep(
                n,
                [&](int i) {
                    const float u = 1.0f - static_cast<float>(i) / static_cast<float>(n);
                    return std::round(u * u * (3.0f - 2.0f * u) * static_cast<float>(t_max));
                },
                model);
        }
        case ScheduleKind::Lcm: {
            // LCM was distilled on 50 evenly spaced timesteps; visit a subset of those.
            constexpr int kOriginalSteps = 50;
            const int k = model.train_steps() / kOriginalSteps;
            return by_timestep(
                n,
                [&](int i) {
                    const int index = (i * kOriginalSteps) / n;
                    return static_cast<float>((kOriginalSteps - index) * k - 1);
                },
                model);
        }
        case ScheduleKind::Flux:
        case ScheduleKind::Flux2: {
            if (!model.is_flow()) {
                return Status::Error(std::string("the ") + schedule_name(kind) +
                                     " schedule is for flow models (FLUX, SD3, ...)");
            }
            const float mu = kind == ScheduleKind::Flux ? flux_schedule_mu(options)
                                                        : flux2_schedule_mu(options, n);
            const float e = std::exp(mu);
            std::vector<float> out;
            for (int i = 0; i < n; ++i) {
                const float t = 1.0f - static_cast<float>(i) / static_cast<float>(n);
                out.push_back(e / (e + std::pow(1.0f / t - 1.0f, 1.0f)));
            }
            out.push_back(0.0f);
            return out;
        }
        case ScheduleKind::LogitNormal:
            return logit_normal_sigmas(n, options);
    }
    return Status::Error("unknown schedule");
}

Result<std::vector<float>> parse_sigmas(const std::string& csv) {
    std::vector<float> out;
    size_t pos = 0;
    const auto is_sep = [](char c) {
        return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '[' || c == ']';
    };
    while (pos < csv.size()) {
        while (pos < csv.size() && is_sep(csv[pos])) ++pos;
        if (pos >= csv.size()) break;
        size_t end = pos;
        while (end < csv.size() && !is_sep(csv[end])) ++end;
        const std::string token = csv.substr(pos, end - pos);
        char* stop = nullptr;
        const float v = std::strtof(token.c_str(), &stop);
        if (stop == token.c_str() || *stop != '\0')
            return Status::Error("--sigmas: '" + token + "' is not a number");
        if (!std::isfinite(v)) return Status::Error("--sigmas: '" + token + "' is not finite");
        if (v < 0.0f) return Status::Error("--sigmas: '" + token + "' is negative");
        if (!out.empty() && v > out.back())
            return Status::Error("--sigmas: values must not increase ('" + token + "' follows " +
                                 std::to_string(out.back()) + ")");
        out.push_back(v);
        pos = end;
    }
    if (out.size() < 2) return Status::Error("--sigmas needs at least 2 values (one step)");
    return out;
}

std::vector<float> img2img_sigmas(const std::vector<float>& sigmas, float strength) {
    if (sigmas.size() < 2 || !(strength < 1.0f)) return sigmas;
    const size_t steps = sigmas.size() - 1;
    // The product is taken in float and truncated, as sd.cpp does (5 * 0.6f -> 3).
    size_t t_enc = strength > 0.0f ? static_cast<size_t>(static_cast<float>(steps) * strength) : 0;
    if (t_enc >= steps) t_enc = steps - 1;
    return std::vector<float>(sigmas.begin() + static_cast<std::ptrdiff_t>(steps - t_enc - 1),
                              sigmas.end());
}

}  // namespace ggdiff::sampling
