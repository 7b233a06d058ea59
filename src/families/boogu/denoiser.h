// The Boogu Image DiT as a family's denoiser: each batch item runs on its own (the prompts'
// token counts differ: the reference pads nothing), with the request's reference latents
// (-r) joining the sequence before the image.
#pragma once

#include <memory>

#include "families/boogu/dit.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

class BooguDenoiser : public Denoiser {
  public:
    static Result<std::unique_ptr<BooguDenoiser>> create(const FamilyContext& ctx,
                                                         const ModuleDevices& where,
                                                         const models::BooguConfig& cfg);

    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }
    ModuleRunner& runner() { return *runner_; }

  private:
    models::BooguConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
