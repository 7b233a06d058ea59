#include "families/sefi/schedule.h"

#include <algorithm>
#include <string>

#include "core/log.h"

namespace ggdiff {
namespace {

constexpr int kTrainSteps = 1000;

int timestep_index(float level) {
    return std::min(kTrainSteps - 1,
                    std::max(0, static_cast<int>(level * static_cast<float>(kTrainSteps - 1))));
}

}  // namespace

SefiSchedule sefi_schedule(int steps, float alpha, float delta_t) {
    SefiSchedule s;
    for (int i = 0; i <= steps; ++i) {
        const float u = static_cast<float>(i) / static_cast<float>(steps);
        const float shifted = alpha == 1.0f ? u : (alpha * u) / (1.0f + (alpha - 1.0f) * u);
        const float v = shifted * (1.0f + delta_t);
        const float sem = std::min(v, 1.0f);
        const float tex = std::max(0.0f, std::min(v - delta_t, 1.0f));
        const float t_sem = static_cast<float>(kTrainSteps - timestep_index(sem));
        const float t_tex = static_cast<float>(kTrainSteps - timestep_index(tex));
        s.semantic_timesteps.push_back(t_sem);
        s.texture_timesteps.push_back(t_tex);
        s.semantic_sigmas.push_back(t_sem / static_cast<float>(kTrainSteps));
        s.texture_sigmas.push_back(t_tex / static_cast<float>(kTrainSteps));
    }
    return s;
}

Status sefi_euler(const sampling::DenoiseFn& denoise, const SefiTimestepsFn& set_timesteps,
                  std::vector<float>& x, int64_t plane, const SefiSchedule& s,
                  const std::function<bool(int, int)>& on_step) {
    const size_t sem_end = static_cast<size_t>(plane * kSefiSemanticChannels);
    if (x.size() != static_cast<size_t>(plane * (kSefiSemanticChannels + kSefiTextureChannels))) {
        return Status::Error(string_format(
            "SeFi-Image sampler: a latent of %zu values, expected %lld channels of %lld", x.size(),
            (long long)(kSefiSemanticChannels + kSefiTextureChannels), (long long)plane));
    }
    const int n = s.steps();
    for (int i = 0; i < n; ++i) {
        const float tex = s.texture_sigmas[i];
        if (tex <= 1e-9f) continue;
        set_timesteps(s.semantic_timesteps[i], s.texture_timesteps[i]);
        sampling::DenoiseStep at;
        at.index = i;
        auto d = denoise(x, tex, at, false);
        if (!d.ok()) return d.status().with_context("step " + std::to_string(i + 1));
        if (d->denoised.size() != x.size()) {
            return Status::Error(
                "SeFi-Image sampler: the denoiser returned a latent of the "
                "wrong size");
        }
        const float d_sem = s.semantic_sigmas[i + 1] - s.semantic_sigmas[i];
        const float d_tex = s.texture_sigmas[i + 1] - tex;
        for (size_t j = 0; j < x.size(); ++j) {
            const float v = (x[j] - d->denoised[j]) / tex;
            x[j] = x[j] + v * (j < sem_end ? d_sem : d_tex);
        }
        if (on_step && !on_step(i + 1, n)) {
            return Status::Error("sampling cancelled after step " + std::to_string(i + 1) + "/" +
                                 std::to_string(n));
        }
    }
    return Status::Ok();
}

}  // namespace ggdiff
