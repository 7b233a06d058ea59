// The SD3 MMDiT as a family's denoiser: the text context (CLIP + T5 tokens) and the pooled
// CLIP vector of each batch item are stacked on the batch axis; the sampler's timestep is
// already the model's (1000 * sigma). DenoiseBatch::skip_layers skips joint blocks
// (skip-layer guidance).
#pragma once

#include <memory>

#include "families/sd3/dit.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

class Sd3Denoiser : public Denoiser {
  public:
    static Result<std::unique_ptr<Sd3Denoiser>> create(const FamilyContext& ctx,
                                                       const ModuleDevices& where,
                                                       const models::Sd3Config& cfg);

    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }

    const models::Sd3Config& config() const { return cfg_; }
    ModuleRunner& runner() { return *runner_; }

  private:
    models::Sd3Config cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
