// A Qwen3-VL vision tower (models/te/qwen3_vision.h) on its placement, for the families that
// show reference images to Qwen3-VL (Boogu Image's edit chat, HiDream-O1-Image's edit mode):
// the family resizes and normalizes each image its own way, the tower gives one row per 2x2
// patches.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "models/te/qwen3_vision.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

// The Qwen3-VL vision tower under `prefix` (e.g. the LLM's "text_encoders.llm."), checked
// against the language model's width `llm_hidden` (the merger's rows replace token
// embeddings); none when there is no tower. `what` names the file in errors ("--llm").
Result<std::optional<models::Qwen3VisionConfig>> find_qwen3_vision_tower(const TensorIndex& index,
                                                                         const std::string& prefix,
                                                                         int64_t llm_hidden,
                                                                         const std::string& what);

class Qwen3VisionEncoder {
  public:
    static Result<std::unique_ptr<Qwen3VisionEncoder>> create(const FamilyContext& ctx,
                                                              const ModuleDevices& where,
                                                              const models::Qwen3VisionConfig& cfg);

    // `pixels` [W, H, 3], sides multiples of config().factor() -> [out_dim, tokens, 1]: one row
    // per 2x2 patches in raster order (tokens = W * H / factor^2).
    Result<HostTensor> encode(const HostTensor& pixels);

    void end_phase() { runner_->end_phase(); }
    const models::Qwen3VisionConfig& config() const { return cfg_; }

  private:
    models::Qwen3VisionConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
