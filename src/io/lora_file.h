// A LoRA file (kohya, LoCon, LoHa, LoKr, diffusers / PEFT) opened for reading: its tensors
// grouped by the weight they adapt (see io/lora_names.h), its A1111 hash, and where a
// prompt's <lora:NAME:...> finds it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/lora_names.h"
#include "io/tensor_index.h"

namespace ggdiff {

// The tensors of one adapted weight.
struct LoraModule {
    std::map<LoraPart, const TensorInfo*> parts;
    bool has(LoraPart p) const { return parts.count(p) != 0; }
    const TensorInfo* get(LoraPart p) const {
        auto it = parts.find(p);
        return it == parts.end() ? nullptr : it->second;
    }
};

class LoraFile {
  public:
    // Opens a .safetensors or .gguf LoRA file (headers only; data stays mapped).
    static Result<std::unique_ptr<LoraFile>> open(const std::string& path);

    const std::string& path() const { return path_; }
    const TensorIndex& index() const { return index_; }
    // Normalized module key -> its tensors.
    const std::map<std::string, LoraModule>& modules() const { return modules_; }
    // Stored names of tensors that are no LoRA part (reported, not used).
    const std::vector<std::string>& unrecognized() const { return unrecognized_; }
    // The stored name of a tensor (for messages).
    static std::string stored_name(const TensorInfo& t) { return t.source_name; }

    // A1111's short hash (12 hex digits): the file's "sshs_model_hash" metadata, else the
    // sha256 of a safetensors file's data after its header, or of a whole .gguf file.
    // Computed once.
    Result<std::string> short_hash() const;

  private:
    std::string path_;
    TensorIndex index_;
    std::map<std::string, LoraModule> modules_;
    std::vector<std::string> unrecognized_;
    mutable std::string hash_;
};

// The file a prompt tag names: DIR/NAME.safetensors, .gguf, or a PyTorch .ckpt / .pt / .bin
// (read as data, never run), in that order; else a file of that name in a subfolder.
Result<std::string> find_lora_file(const std::string& dir, const std::string& name);

}  // namespace ggdiff
