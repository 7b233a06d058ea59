// The FLUX.1 diffusion transformer as a family's denoiser.
#pragma once

#include <memory>
#include <optional>

#include "families/flux/dit.h"
#include "families/flux/pulid.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

class FluxDenoiser : public Denoiser {
  public:
    // Declares and loads the DiT's weights on `where` (with PuLID-FLUX's modules when `pulid`).
    static Result<std::unique_ptr<FluxDenoiser>> create(
        const FamilyContext& ctx, const ModuleDevices& where, const models::FluxConfig& cfg,
        const std::optional<models::PulidConfig>& pulid = std::nullopt);

    // Contexts (T5 hidden states) and pooled vectors (CLIP-L) of the batch items are stacked
    // on the batch axis; batch.guidance feeds the guidance embedding (dev); reference
    // latents (Kontext editing, any FLUX.1 model) join the sequence after the image; with PuLID
    // weights, batch.identity is injected (not in a skip-layer pass, as in the reference).
    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }
    // The runner holding the DiT's weights (the family's LoRA target).
    ModuleRunner& runner() { return *runner_; }

    const models::FluxConfig& config() const { return cfg_; }

  private:
    models::FluxConfig cfg_;
    std::optional<models::PulidConfig> pulid_;
    bool warned_pulid_slg_ = false;
    std::unique_ptr<ModuleRunner> runner_;
    // RoPE tables of the last (latent width, height, text tokens, references, index mode).
    int64_t pe_w_ = -1, pe_h_ = -1, pe_l_ = -1;
    std::vector<models::FluxRefSize> pe_refs_;
    bool pe_increase_ = false;
    nn::RopeWrap wrap_;  // --circular*: image rows / columns wrap around
    models::FluxPositions pe_;
};

}  // namespace ggdiff
