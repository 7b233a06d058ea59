// The Chroma DiT (families/chroma/dit.h) as a family's denoiser.
#pragma once

#include <memory>

#include "families/chroma/dit.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

class ChromaDenoiser : public Denoiser {
  public:
    // Declares and loads the DiT's weights on `where`.
    static Result<std::unique_ptr<ChromaDenoiser>> create(const FamilyContext& ctx,
                                                          const ModuleDevices& where,
                                                          const models::ChromaConfig& cfg);

    // T5 contexts are stacked on the batch axis; each conditioning's key mask (when it has
    // one: the DiT mask is on) hides its padding tokens, the image tokens are always seen.
    // The approximator runs once when the batch shares its timestep. No reference images.
    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }
    ModuleRunner& runner() { return *runner_; }
    const models::ChromaConfig& config() const { return cfg_; }

  private:
    models::ChromaConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
    HostTensor mod_index_;
    HostTensor dct_;  // Radiance: the pixels' position code
    int64_t pe_w_ = -1, pe_h_ = -1, pe_l_ = -1;
    nn::RopeWrap wrap_;  // --circular*: image rows / columns wrap around
    models::FluxPositions pe_;
};

}  // namespace ggdiff
