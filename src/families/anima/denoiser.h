// The Anima DiT as a family's denoiser: the sampler's timestep is 1000 * sigma, the model takes
// sigma itself; its output is the flow velocity. The context is the LLM adapter's output
// (families/anima/text.h), the same shape for every prompt, so any prompts batch together.
#pragma once

#include <memory>

#include "families/anima/dit.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

class AnimaDenoiser : public Denoiser {
  public:
    static Result<std::unique_ptr<AnimaDenoiser>> create(const FamilyContext& ctx,
                                                         const ModuleDevices& where,
                                                         const models::AnimaConfig& cfg);

    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }

    ModuleRunner& runner() { return *runner_; }

  private:
    models::AnimaConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
