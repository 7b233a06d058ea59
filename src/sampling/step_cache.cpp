#include "sampling/step_cache.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "core/log.h"

namespace ggdiff::sampling {
namespace {

constexpr float kTrainSteps = 1000.0f;  // the reference's TIMESTEPS, for percent -> sigma

struct ModeName {
    CacheMode mode;
    const char* name;
};

const ModeName kModeNames[] = {
    {CacheMode::None, "disabled"},         {CacheMode::EasyCache, "easycache"},
    {CacheMode::UCache, "ucache"},         {CacheMode::DbCache, "dbcache"},
    {CacheMode::TaylorSeer, "taylorseer"}, {CacheMode::CacheDit, "cache-dit"},
    {CacheMode::Spectrum, "spectrum"},
};

bool is_cachedit(CacheMode m) {
    return m == CacheMode::DbCache || m == CacheMode::TaylorSeer || m == CacheMode::CacheDit;
}

std::string trim(const std::string& s) {
    const char* ws = " \t\r\n";
    const size_t b = s.find_first_not_of(ws);
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

bool parse_float(const std::string& text, float* out) {
    const std::string t = trim(text);
    if (t.empty()) return false;
    errno = 0;
    char* end = nullptr;
    const float v = std::strtof(t.c_str(), &end);
    if (errno != 0 || end != t.c_str() + t.size() || !std::isfinite(v)) return false;
    *out = v;
    return true;
}

bool parse_int(const std::string& text, int* out) {
    const std::string t = trim(text);
    if (t.empty()) return false;
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(t.c_str(), &end, 10);
    if (errno != 0 || end != t.c_str() + t.size() || v < -1000000 || v > 1000000) return false;
    *out = static_cast<int>(v);
    return true;
}

// Mean of |a - b| over n, accumulated in float in index order (as the reference does, so
// decisions near a threshold agree).
float mean_abs_diff(const float* a, const float* b, size_t n) {
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += std::fabs(a[i] - b[i]);
    return n > 0 ? sum / static_cast<float>(n) : 0.0f;
}

float mean_abs(const std::vector<float>& a) {
    float sum = 0.0f;
    for (float v : a) sum += std::fabs(v);
    return a.empty() ? 0.0f : sum / static_cast<float>(a.size());
}

// sum |prev - cur| / (sum |prev| + 1e-6)
float relative_change(const std::vector<float>& prev, const std::vector<float>& cur) {
    float diff = 0.0f, norm = 0.0f;
    for (size_t i = 0; i < prev.size(); ++i) {
        diff += std::fabs(prev[i] - cur[i]);
        norm += std::fabs(prev[i]);
    }
    return diff / (norm + 1e-6f);
}

// Per condition: the last computed output minus its input, reapplied to a new input.
class Residuals {
  public:
    void clear() { diffs_.clear(); }
    bool has(const void* cond) const {
        auto it = diffs_.find(cond);
        return it != diffs_.end() && !it->second.empty();
    }
    void put(const void* cond, const std::vector<float>& input, const std::vector<float>& output) {
        std::vector<float>& d = diffs_[cond];
        if (input.empty() || input.size() != output.size()) {
            d.clear();
            return;
        }
        d.resize(output.size());
        for (size_t i = 0; i < d.size(); ++i) d[i] = output[i] - input[i];
    }
    void apply(const void* cond, const std::vector<float>& input, std::vector<float>& out) const {
        auto it = diffs_.find(cond);
        if (it == diffs_.end() || it->second.size() != input.size() || input.empty()) return;
        out = input;
        for (size_t i = 0; i < out.size(); ++i) out[i] += it->second[i];
    }

  private:
    std::unordered_map<const void*, std::vector<float>> diffs_;
};

// Where on the schedule a condition-level cache may act: start_sigma >= sigma > end_sigma.
struct SigmaWindow {
    float start = std::numeric_limits<float>::max();
    float end = 0.0f;
    bool contains(float sigma) const { return !(sigma > start) && sigma > end; }

    // From schedule fractions through the model's t -> sigma map (t = (1 - p) * 999).
    static SigmaWindow from_percents(const Parameterization& model, float start, float end) {
        auto to_sigma = [&](float p) {
            if (p <= 0.0f) return std::numeric_limits<float>::max();
            if (p >= 1.0f) return 0.0f;
            return model.t_to_sigma((1.0f - p) * (kTrainSteps - 1.0f));
        };
        return {to_sigma(start), to_sigma(end)};
    }
    // From the schedule itself: sigmas[int(p * n)], indices capped at n - 1.
    static SigmaWindow from_schedule(const std::vector<float>& sigmas, float start, float end) {
        const size_t n = sigmas.size() - 1;
        size_t a = static_cast<size_t>(start * static_cast<float>(n));
        size_t b = static_cast<size_t>(end * static_cast<float>(n));
        a = std::min(a, n - 1);
        b = std::min(b, n - 1);
        SigmaWindow w{sigmas[a], sigmas[b]};
        if (w.start < w.end) std::swap(w.start, w.end);
        return w;
    }
};

// easycache and ucache: one "anchor" condition (the first asked) decides for the whole step
// from how much its input moved since its last computed step, scaled by how strongly its
// output followed its input last time.
class ChangeRateCache {
  public:
    void reset(const CacheParams& p, SigmaWindow window, bool ucache, int total_steps) {
        *this = ChangeRateCache();
        p_ = p;
        p_.decay = std::max(0.0f, std::min(1.0f, p.decay));
        ucache_ = ucache;
        threshold_ = p.effective_reuse_threshold();
        window_ = window;
        total_steps_ = total_steps;
    }

    void begin_step(int step, float sigma) {
        if (step == step_) return;
        step_ = step;
        skip_ = false;
        has_input_change_ = false;
        active_ = window_.contains(sigma);
    }

    bool reuse(const void* cond, const std::vector<float>& input, std::vector<float>& out) {
        if (!active_) return false;
        if (anchor_ == nullptr) anchor_ = cond;
        if (skip_) {
            if (!residuals_.has(cond)) return false;
            residuals_.apply(cond, input, out);
            return true;
        }
        if (cond != anchor_ || !has_prev_ || !residuals_.has(cond)) return false;
        if (prev_input_.size() != input.size()) return false;
        input_change_ = mean_abs_diff(input.data(), prev_input_.data(), input.size());
        has_input_change_ = true;
        if (!(has_rate_ && out_norm_ > 0.0f && input_change_ > 0.0f)) return false;
        const bool reuse = ucache_ ? ucache_decides() : easycache_decides();
        if (!reuse) return false;
        skip_ = true;
        ++skipped_;
        residuals_.apply(cond, input, out);
        return true;
    }

    void store(const void* cond, const std::vector<float>& input, const std::vector<float>& out) {
        if (!active_) return;
        residuals_.put(cond, input, out);
        if (cond != anchor_) return;
        ++computed_;
        consecutive_ = 0;
        prev_input_ = input;
        float out_change = 0.0f;
        if (has_prev_ && prev_output_.size() == out.size()) {
            out_change = mean_abs_diff(out.data(), prev_output_.data(), out.size());
        }
        if (ucache_ && std::isfinite(out_change) && out_change > 0.0f) {
            ema_ = has_ema_ ? 0.8f * ema_ + 0.2f * out_change : out_change;
            has_ema_ = true;
        }
        prev_output_ = out;
        has_prev_ = true;
        out_norm_ = mean_abs(out);
        if (has_input_change_ && input_change_ > 0.0f && out_change > 0.0f) {
            const float rate = out_change / input_change_;
            if (std::isfinite(rate)) {
                rate_ = rate;
                has_rate_ = true;
            }
        }
        if (!ucache_) cumulative_ = 0.0f;
        has_input_change_ = false;
    }

    bool step_skipped() const { return active_ && skip_; }
    int skipped() const { return skipped_; }

  private:
    bool easycache_decides() {
        cumulative_ += rate_ * input_change_ / out_norm_;
        if (cumulative_ < threshold_) return true;
        cumulative_ = 0.0f;
        return false;
    }

    bool ucache_decides() {
        const float change = rate_ * input_change_;
        float estimate = change;
        if (p_.relative) {
            const float base = std::max(out_norm_, 1e-6f);
            const float dyn = has_ema_ ? std::max(ema_ * kRelativeNormGain, 1e-6f) : base;
            estimate = change / std::sqrt(base * dyn);
        }
        // Each further step reused in a row counts for more.
        estimate *= 1.0f + 0.5f * static_cast<float>(consecutive_);
        error_ = error_ * p_.decay + estimate;
        float threshold = adaptive_threshold();
        if (!p_.relative) threshold *= out_norm_;
        if (error_ < threshold) {
            ++consecutive_;
            return true;
        }
        if (p_.reset) error_ = 0.0f;
        return false;
    }

    // Stricter while few steps have been computed, looser near the end.
    float adaptive_threshold() const {
        int total = total_steps_;
        if (total <= 0) total = std::max(20, computed_ * 2);
        float progress = static_cast<float>(computed_) / static_cast<float>(total);
        progress = std::max(0.0f, std::min(1.0f, progress));
        if (progress < 0.2f) return threshold_ * 0.5f;
        if (progress > 0.8f) return threshold_ * 1.5f;
        return threshold_;
    }

    static constexpr float kRelativeNormGain = 1.6f;

    CacheParams p_;
    bool ucache_ = false;
    float threshold_ = 0.0f;
    SigmaWindow window_;
    int total_steps_ = 0;
    int step_ = -1;
    bool active_ = false, skip_ = false;
    const void* anchor_ = nullptr;
    Residuals residuals_;
    std::vector<float> prev_input_, prev_output_;
    bool has_prev_ = false;
    float out_norm_ = 0.0f;
    float rate_ = 0.0f;
    bool has_rate_ = false;
    float input_change_ = 0.0f;
    bool has_input_change_ = false;
    float cumulative_ = 0.0f;  // easycache
    float ema_ = 0.0f;         // ucache: moving average of the output change
    bool has_ema_ = false;
    float error_ = 0.0f;  // ucache: accumulated error estimate
    int computed_ = 0, consecutive_ = 0, skipped_ = 0;
};

// dbcache / taylorseer / cache-dit at the condition level: the anchor condition reuses when
// its input moved less than the (Fn/Bn-scaled) threshold relative to its last computed one.
class InputChangeCache {
  public:
    void reset(const CacheParams& p, SigmaWindow window) {
        *this = InputChangeCache();
        window_ = window;
        threshold_ = p.residual_diff_threshold;
        if (p.fn > 0) {
            threshold_ *=
                std::max(0.5f, std::min(2.0f, 1.0f + 0.02f * static_cast<float>(p.fn - 8)));
        }
        if (p.bn > 0) {
            threshold_ *= std::max(0.5f, std::min(1.0f, 1.0f - 0.03f * static_cast<float>(p.bn)));
        }
    }

    void begin_step(int step, float sigma) {
        if (step == step_) return;
        step_ = step;
        skip_ = false;
        active_ = window_.contains(sigma);
    }

    bool reuse(const void* cond, const std::vector<float>& input, std::vector<float>& out) {
        if (!active_) return false;
        if (anchor_ == nullptr) anchor_ = cond;
        if (skip_) {
            if (!residuals_.has(cond)) return false;
            residuals_.apply(cond, input, out);
            return true;
        }
        if (cond != anchor_) return false;
        auto it = prev_inputs_.find(cond);
        if (it == prev_inputs_.end() || it->second.size() != input.size()) return false;
        if (relative_change(it->second, input) < threshold_) {
            skip_ = true;
            ++skipped_;
            residuals_.apply(cond, input, out);
            return true;
        }
        return false;
    }

    void store(const void* cond, const std::vector<float>& input, const std::vector<float>& out) {
        if (!active_) return;
        residuals_.put(cond, input, out);
        if (residuals_.has(cond)) {
            prev_inputs_[cond] = input;
        } else {
            prev_inputs_.erase(cond);
        }
    }

    bool step_skipped() const { return active_ && skip_; }
    int skipped() const { return skipped_; }
    float threshold() const { return threshold_; }

  private:
    SigmaWindow window_;
    float threshold_ = 0.08f;
    int step_ = -1;
    bool active_ = false, skip_ = false;
    const void* anchor_ = nullptr;
    Residuals residuals_;
    std::unordered_map<const void*, std::vector<float>> prev_inputs_;
    int skipped_ = 0;
};

// Cholesky factor of the symmetric n x n matrix a (row-major) into l; false when a is not
// positive definite.
bool cholesky(const std::vector<float>& a, std::vector<float>& l, int n) {
    std::fill(l.begin(), l.end(), 0.0f);
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j <= i; ++j) {
            float s = 0.0f;
            for (int k = 0; k < j; ++k) s += l[i * n + k] * l[j * n + k];
            if (i == j) {
                const float d = a[i * n + i] - s;
                if (d <= 0.0f) return false;
                l[i * n + j] = std::sqrt(d);
            } else {
                l[i * n + j] = (a[i * n + j] - s) / l[j * n + j];
            }
        }
    }
    return true;
}

// Solves l l^T x = b.
std::vector<float> cholesky_solve(const std::vector<float>& l, const std::vector<float>& b, int n) {
    std::vector<float> y(n), x(n);
    for (int i = 0; i < n; ++i) {
        float s = 0.0f;
        for (int j = 0; j < i; ++j) s += l[i * n + j] * y[j];
        y[i] = (b[i] - s) / l[i * n + i];
    }
    for (int i = n - 1; i >= 0; --i) {
        float s = 0.0f;
        for (int j = i + 1; j < n; ++j) s += l[j * n + i] * x[j];
        x[i] = (y[i] - s) / l[i * n + i];
    }
    return x;
}

// Chebyshev basis T_0..T_{m1-1} at tau.
void chebyshev(float tau, int m1, float* out) {
    out[0] = 1.0f;
    if (m1 > 1) out[1] = tau;
    for (int j = 2; j < m1; ++j) out[j] = 2.0f * tau * out[j - 1] - out[j - 2];
}

// spectrum: counts evaluations; after warmup, with a window that widens after each computed
// evaluation, forecasts the denoised estimate from the last few computed ones.
class SpectrumCache {
  public:
    void reset(const CacheParams& p, size_t total_steps) {
        *this = SpectrumCache();
        p_ = p;
        window_ = static_cast<float>(p.spectrum_window);
        keep_ = std::max(p.spectrum_m + 1, 6);
        stop_ = static_cast<int>(p.spectrum_stop * static_cast<float>(total_steps));
    }

    bool forecast(std::vector<float>& out) {
        if (!should_forecast()) return false;
        predict(out);
        ++since_computed_;
        ++skipped_;
        ++count_;
        return true;
    }

    void record(const std::vector<float>& denoised) {
        history_.push_back(denoised);
        taus_.push_back(tau(count_));
        while (static_cast<int>(history_.size()) > keep_) {
            history_.erase(history_.begin());
            taus_.erase(taus_.begin());
        }
        if (count_ >= p_.spectrum_warmup) window_ += p_.spectrum_flex;
        since_computed_ = 0;
        ++count_;
    }

    int skipped() const { return skipped_; }

  private:
    static float tau(int count) { return (static_cast<float>(count) / 50.0f) * 2.0f - 1.0f; }

    bool should_forecast() const {
        if (count_ < p_.spectrum_warmup) return false;
        if (stop_ > 0 && count_ >= stop_) return false;
        if (history_.size() < 2) return false;
        const int ws = std::max(1, static_cast<int>(std::floor(window_)));
        return (since_computed_ + 1) % ws != 0;
    }

    void predict(std::vector<float>& out) const {
        const int k = static_cast<int>(history_.size());
        const int m1 = p_.spectrum_m + 1;
        std::vector<float> x(static_cast<size_t>(k * m1));
        for (int i = 0; i < k; ++i) chebyshev(taus_[i], m1, &x[static_cast<size_t>(i * m1)]);
        std::vector<float> at(static_cast<size_t>(m1));
        chebyshev(tau(count_), m1, at.data());
        // Ridge normal equations (X^T X + lam I) v = x*, weights = X v.
        std::vector<float> xtx(static_cast<size_t>(m1 * m1));
        for (int i = 0; i < m1; ++i) {
            for (int j = 0; j < m1; ++j) {
                float s = 0.0f;
                for (int r = 0; r < k; ++r) s += x[r * m1 + i] * x[r * m1 + j];
                xtx[i * m1 + j] = s + (i == j ? p_.spectrum_lam : 0.0f);
            }
        }
        std::vector<float> l(xtx.size());
        if (!cholesky(xtx, l, m1)) {
            float trace = 0.0f;
            for (int i = 0; i < m1; ++i) trace += xtx[i * m1 + i];
            for (int i = 0; i < m1; ++i) xtx[i * m1 + i] += 1e-4f * trace / static_cast<float>(m1);
            cholesky(xtx, l, m1);
        }
        const std::vector<float> v = cholesky_solve(l, at, m1);
        std::vector<float> w(static_cast<size_t>(k), 0.0f);
        for (int r = 0; r < k; ++r)
            for (int j = 0; j < m1; ++j) w[r] += x[r * m1 + j] * v[j];

        const std::vector<float>& last = history_.back();
        const std::vector<float>& prev = history_[history_.size() - 2];
        const float wc = p_.spectrum_w, wt = 1.0f - wc;
        out.resize(last.size());
        for (size_t f = 0; f < last.size(); ++f) {
            float cheb = 0.0f;
            for (int r = 0; r < k; ++r) cheb += w[r] * history_[r][f];
            const float taylor = last[f] + 0.5f * (last[f] - prev[f]);
            out[f] = wt * taylor + wc * cheb;
        }
    }

    CacheParams p_;
    float window_ = 2.0f;
    int keep_ = 6, stop_ = 0;
    int count_ = 0, since_computed_ = 0, skipped_ = 0;
    std::vector<std::vector<float>> history_;
    std::vector<float> taus_;
};

std::string skipped_line(const char* label, int skipped, size_t total) {
    if (skipped <= 0 || total == 0) {
        return string_format("%s completed without skipping steps", label);
    }
    if (static_cast<size_t>(skipped) >= total) {
        return string_format("%s skipped %d/%zu steps", label, skipped, total);
    }
    const double speedup =
        static_cast<double>(total) / static_cast<double>(total - static_cast<size_t>(skipped));
    return string_format("%s skipped %d/%zu steps (%.2fx estimated speedup)", label, skipped, total,
                         speedup);
}

}  // namespace

std::vector<std::string> cache_mode_names() {
    std::vector<std::string> out;
    for (const ModeName& m : kModeNames) out.push_back(m.name);
    return out;
}

Result<CacheMode> parse_cache_mode(const std::string& name) {
    std::string key = trim(name);
    for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (key == "none" || key.empty()) return CacheMode::None;
    if (key == "cachedit" || key == "cache_dit") return CacheMode::CacheDit;
    for (const ModeName& m : kModeNames)
        if (key == m.name) return m.mode;
    std::string known;
    for (const std::string& n : cache_mode_names()) known += (known.empty() ? "" : ", ") + n;
    return Status::Error("unknown cache mode '" + name + "' (expected one of " + known + ")");
}

const char* cache_mode_name(CacheMode mode) {
    for (const ModeName& m : kModeNames)
        if (m.mode == mode) return m.name;
    return "disabled";
}

float CacheParams::effective_reuse_threshold() const {
    float t = reuse_threshold;
    if (std::isinf(t)) {
        if (mode == CacheMode::EasyCache) t = 0.2f;
        if (mode == CacheMode::UCache) t = 1.0f;
    }
    return std::max(0.0f, t);
}

std::vector<std::string> cache_option_keys() {
    return {"threshold", "start", "end", "decay", "relative", "reset", "Fn",  "Bn",
            "warmup",    "w",     "m",   "lam",   "window",   "flex",  "stop"};
}

Status apply_cache_options(const std::string& text, CacheParams& p,
                           std::vector<std::string>* unused) {
    const bool residual = p.mode == CacheMode::EasyCache || p.mode == CacheMode::UCache;
    const bool dit = is_cachedit(p.mode);
    const bool spectrum = p.mode == CacheMode::Spectrum;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        item = trim(item);
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        if (eq == std::string::npos) {
            return Status::Error("--cache-option: '" + item + "' is not key=value");
        }
        const std::string key = trim(item.substr(0, eq));
        const std::string val = trim(item.substr(eq + 1));
        float f = 0.0f;
        int i = 0;
        auto need_float = [&]() -> Status {
            if (parse_float(val, &f)) return Status::Ok();
            return Status::Error("--cache-option " + key + ": '" + val + "' is not a number");
        };
        auto need_int = [&]() -> Status {
            if (parse_int(val, &i)) return Status::Ok();
            return Status::Error("--cache-option " + key + ": '" + val + "' is not an integer");
        };
        bool used = true;
        if (key == "threshold") {
            GGDIFF_TRY(need_float());
            if (residual) {
                p.reuse_threshold = f;
            } else {
                p.residual_diff_threshold = f;
                used = dit;
            }
        } else if (key == "start" || key == "end" || key == "decay" || key == "relative" ||
                   key == "reset") {
            GGDIFF_TRY(need_float());
            if (key == "start") p.start = f;
            if (key == "end") p.end = f;
            if (key == "decay") p.decay = f;
            if (key == "relative") p.relative = f != 0.0f;
            if (key == "reset") p.reset = f != 0.0f;
            used = key == "start" || key == "end" ? residual : p.mode == CacheMode::UCache;
        } else if (key == "Fn" || key == "fn" || key == "Bn" || key == "bn") {
            GGDIFF_TRY(need_int());
            (key == "Fn" || key == "fn" ? p.fn : p.bn) = i;
            used = dit;
        } else if (key == "warmup") {
            GGDIFF_TRY(need_int());
            if (spectrum) {
                p.spectrum_warmup = i;
            } else {
                p.max_warmup_steps = i;
                used = false;  // the condition-level cache-dit never reads it
            }
        } else if (key == "w" || key == "lam" || key == "flex" || key == "stop") {
            GGDIFF_TRY(need_float());
            if (key == "w") p.spectrum_w = f;
            if (key == "lam") p.spectrum_lam = f;
            if (key == "flex") p.spectrum_flex = f;
            if (key == "stop") p.spectrum_stop = f;
            used = spectrum;
        } else if (key == "m" || key == "window") {
            GGDIFF_TRY(need_int());
            (key == "m" ? p.spectrum_m : p.spectrum_window) = i;
            used = spectrum;
        } else {
            std::string keys;
            for (const std::string& k : cache_option_keys()) keys += (keys.empty() ? "" : ", ") + k;
            return Status::Error("--cache-option: unknown key '" + key + "' (known: " + keys + ")");
        }
        if (!used && unused) unused->push_back(key);
    }
    return Status::Ok();
}

Result<std::vector<int>> parse_scm_mask(const std::string& text) {
    std::vector<int> mask;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        item = trim(item);
        if (item != "0" && item != "1") {
            return Status::Error("--scm-mask: '" + item +
                                 "' is not 0 or 1 (expected comma-separated 0/1, e.g. 1,1,0,1)");
        }
        mask.push_back(item == "1" ? 1 : 0);
    }
    if (mask.empty()) return Status::Error("--scm-mask is empty (expected comma-separated 0/1)");
    return mask;
}

Status check_cache_params(const CacheParams& p) {
    auto bad = [](const std::string& what) { return Status::Error("--cache-option " + what); };
    if (p.mode == CacheMode::EasyCache || p.mode == CacheMode::UCache) {
        if (p.reuse_threshold < 0.0f) return bad("threshold must be >= 0");
        if (!(p.start >= 0.0f && p.start < 1.0f && p.end > 0.0f && p.end <= 1.0f &&
              p.start < p.end)) {
            return bad("start/end must satisfy 0 <= start < end <= 1");
        }
    }
    if (is_cachedit(p.mode) && p.residual_diff_threshold < 0.0f) {
        return bad("threshold must be >= 0");
    }
    if (p.mode == CacheMode::Spectrum) {
        if (p.spectrum_m < 0 || p.spectrum_m > 16) return bad("m (Chebyshev degree) must be 0..16");
        if (p.spectrum_window < 1) return bad("window must be >= 1");
        if (p.spectrum_lam < 0.0f) return bad("lam must be >= 0");
        if (p.spectrum_flex < 0.0f) return bad("flex must be >= 0");
        if (p.spectrum_warmup < 0) return bad("warmup must be >= 0");
        if (p.spectrum_stop < 0.0f || p.spectrum_stop > 1.0f) return bad("stop must be in [0, 1]");
    }
    return Status::Ok();
}

struct StepCache::Impl {
    CacheParams params;
    DenoiserArch arch;
    Parameterization model;
    SamplerKind sampler;
    // What acts in the current run.
    enum class Kind { Off, ChangeRate, InputChange, Spectrum } kind = Kind::Off;
    ChangeRateCache change_rate;
    InputChangeCache input_change;
    SpectrumCache spectrum;
    int step = -1;  // the current evaluation's step; -1 for predictor evaluations

    Impl(const CacheParams& p, DenoiserArch a, const Parameterization& m, SamplerKind s)
        : params(p), arch(a), model(m), sampler(s) {}

    const char* label() const {
        switch (kind) {
            case Kind::ChangeRate:
                return params.mode == CacheMode::UCache ? "UCache" : "EasyCache";
            case Kind::InputChange:
                return "CacheDIT";
            case Kind::Spectrum:
                return "Spectrum";
            case Kind::Off:
                break;
        }
        return "";
    }
};

StepCache::StepCache(const CacheParams& params, DenoiserArch arch, const Parameterization& model,
                     SamplerKind sampler)
    : impl_(std::make_unique<Impl>(params, arch, model, sampler)) {}

StepCache::~StepCache() = default;

void StepCache::begin(const std::vector<float>& sigmas) {
    Impl& m = *impl_;
    const CacheParams& p = m.params;
    m.kind = Impl::Kind::Off;
    m.step = -1;
    if (p.mode == CacheMode::None || sigmas.size() < 2) return;
    const bool unet = m.arch == DenoiserArch::UNet;
    const size_t steps = sigmas.size() - 1;
    switch (p.mode) {
        case CacheMode::EasyCache:
            if (unet) {
                GGDIFF_LOG_WARN("EasyCache requested but not supported for this model type");
                return;
            }
            m.change_rate.reset(p, SigmaWindow::from_percents(m.model, p.start, p.end), false,
                                static_cast<int>(steps));
            m.kind = Impl::Kind::ChangeRate;
            GGDIFF_LOG_INFO("EasyCache enabled - threshold: %.3f, start: %.2f, end: %.2f",
                            p.effective_reuse_threshold(), p.start, p.end);
            return;
        case CacheMode::UCache:
            if (!unet) {
                GGDIFF_LOG_WARN(
                    "UCache requested but not supported for this model type (only UNET models)");
                return;
            }
            m.change_rate.reset(p, SigmaWindow::from_schedule(sigmas, p.start, p.end), true,
                                static_cast<int>(steps));
            m.kind = Impl::Kind::ChangeRate;
            GGDIFF_LOG_INFO(
                "UCache enabled - threshold: %.3f, start: %.2f, end: %.2f, decay: %.2f, "
                "relative: %s, reset: %s",
                p.effective_reuse_threshold(), p.start, p.end,
                std::max(0.0f, std::min(1.0f, p.decay)), p.relative ? "true" : "false",
                p.reset ? "true" : "false");
            return;
        case CacheMode::DbCache:
        case CacheMode::TaylorSeer:
        case CacheMode::CacheDit:
            if (unet) {
                GGDIFF_LOG_WARN(
                    "CacheDIT requested but not supported for this model type (only DiT models)");
                return;
            }
            // The reference's condition-level cache-dit acts between 15% and 95% of the
            // schedule whatever start/end say.
            m.input_change.reset(p, SigmaWindow::from_schedule(sigmas, 0.15f, 0.95f));
            m.kind = Impl::Kind::InputChange;
            GGDIFF_LOG_INFO(
                "CacheDIT enabled - mode: %s, Fn: %d, Bn: %d, threshold: %.3f, warmup: %d",
                p.mode == CacheMode::CacheDit
                    ? "DBCache+TaylorSeer"
                    : (p.mode == CacheMode::DbCache ? "DBCache" : "TaylorSeer"),
                p.fn, p.bn, p.residual_diff_threshold, p.max_warmup_steps);
            return;
        case CacheMode::Spectrum:
            if (needs_uncond(m.sampler)) {
                GGDIFF_LOG_WARN("Spectrum cache requested but not supported for CFG++ samplers");
                return;
            }
            m.spectrum.reset(p, steps);
            m.kind = Impl::Kind::Spectrum;
            GGDIFF_LOG_INFO(
                "Spectrum enabled - w: %.2f, m: %d, lam: %.2f, window: %d, flex: %.2f, warmup: "
                "%d, stop: %.0f%%",
                p.spectrum_w, p.spectrum_m, p.spectrum_lam, p.spectrum_window, p.spectrum_flex,
                p.spectrum_warmup, p.spectrum_stop * 100.0f);
            return;
        case CacheMode::None:
            return;
    }
}

bool StepCache::enabled() const {
    return impl_->kind != Impl::Kind::Off;
}

bool StepCache::forecast(std::vector<float>& denoised) {
    return impl_->kind == Impl::Kind::Spectrum && impl_->spectrum.forecast(denoised);
}

void StepCache::record(const std::vector<float>& denoised) {
    if (impl_->kind == Impl::Kind::Spectrum) impl_->spectrum.record(denoised);
}

void StepCache::begin_step(DenoiseStep at, float sigma) {
    Impl& m = *impl_;
    m.step = at.predictor ? -1 : at.index;
    if (m.step < 0) return;
    if (m.kind == Impl::Kind::ChangeRate) m.change_rate.begin_step(m.step, sigma);
    if (m.kind == Impl::Kind::InputChange) m.input_change.begin_step(m.step, sigma);
}

bool StepCache::reuse(const void* cond, const std::vector<float>& input,
                      std::vector<float>& output) {
    Impl& m = *impl_;
    if (m.step < 0 || cond == nullptr) return false;
    if (m.kind == Impl::Kind::ChangeRate) return m.change_rate.reuse(cond, input, output);
    if (m.kind == Impl::Kind::InputChange) return m.input_change.reuse(cond, input, output);
    return false;
}

void StepCache::store(const void* cond, const std::vector<float>& input,
                      const std::vector<float>& output) {
    Impl& m = *impl_;
    if (m.step < 0 || cond == nullptr) return;
    if (m.kind == Impl::Kind::ChangeRate) m.change_rate.store(cond, input, output);
    if (m.kind == Impl::Kind::InputChange) m.input_change.store(cond, input, output);
}

bool StepCache::step_skipped() const {
    const Impl& m = *impl_;
    if (m.kind == Impl::Kind::ChangeRate) return m.change_rate.step_skipped();
    if (m.kind == Impl::Kind::InputChange) return m.input_change.step_skipped();
    return false;
}

int StepCache::skipped() const {
    const Impl& m = *impl_;
    switch (m.kind) {
        case Impl::Kind::ChangeRate:
            return m.change_rate.skipped();
        case Impl::Kind::InputChange:
            return m.input_change.skipped();
        case Impl::Kind::Spectrum:
            return m.spectrum.skipped();
        case Impl::Kind::Off:
            break;
    }
    return 0;
}

std::string StepCache::summary(size_t total_steps) const {
    if (!enabled()) return "";
    return skipped_line(impl_->label(), skipped(), total_steps);
}

}  // namespace ggdiff::sampling
