// Applying the LoRAs a prompt's tags ask for to a loaded family, and taking them off again.
//
// Each LoRA module is matched to one weight of the family's LoRA targets by its key (see
// io/lora_names.h); modules that match nothing are reported by tensor name, a shape that
// does not fit is an error naming the tensor. A weight's updates are merged into it in place
// (runtime/weight_patch.h) or applied at run time by the layers (runtime/weight_adapters.h):
//   auto         merged, unless the weight is quantized or in a row-split buffer
//   immediately  merged; weights in row-split buffers are skipped with a warning
//   at_runtime   never merged
// A new set of LoRAs first undoes the previous one (merged weights are read again from the
// checkpoint), so successive generations never see each other's LoRAs. Weights loaded per
// phase (disk or params-device placement) get their merges again after every load.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/lora_file.h"
#include "pipeline/family.h"
#include "pipeline/lora_tags.h"

namespace ggdiff {

enum class LoraApplyMode { Auto, Immediately, AtRuntime };
Result<LoraApplyMode> parse_lora_apply_mode(const std::string& s);

class LoraManager {
  public:
    LoraManager(std::string dir, LoraApplyMode mode, int threads);
    ~LoraManager();

    // Makes the family carry exactly `loras` (nothing when empty).
    Status apply(Family& family, const std::vector<LoraRequest>& loras);

    // A1111's "Lora hashes" value for what is applied ("kohya: 0123456789ab, ..."); empty
    // when nothing is.
    const std::string& hashes() const { return hashes_; }
    // Seconds the last apply() that changed anything spent (reading, merging, uploading).
    double last_apply_seconds() const { return last_seconds_; }

  private:
    struct TargetState;
    Status prepare_targets(Family& family);
    Result<LoraFile*> file_for(const LoraRequest& r);

    std::string dir_;
    LoraApplyMode mode_;
    int threads_;
    std::map<std::string, std::unique_ptr<LoraFile>> files_;  // by path
    std::vector<std::unique_ptr<TargetState>> targets_;
    std::vector<LoraRequest> current_;
    std::string hashes_;
    double last_seconds_ = 0.0;
};

}  // namespace ggdiff
