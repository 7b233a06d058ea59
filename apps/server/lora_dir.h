// The LoRA files of --lora-model-dir, listed by name. Requests name LoRAs only by these
// names; no path from a request ever reaches the file system.
#pragma once

#include <mutex>
#include <string>
#include <vector>

namespace ggdiff::server {

struct LoraEntry {
    std::string name;  // relative path without extension, '/'-separated ("styles/ink")
    std::string path;  // relative path with extension ("styles/ink.safetensors")
};

class LoraDir {
  public:
    explicit LoraDir(std::string dir) : dir_(std::move(dir)) {}

    bool configured() const { return !dir_.empty(); }
    // The folder's LoRA files (.safetensors, .gguf, .ckpt, .pt), re-read on each call so
    // that files added while the server runs show up; sorted by name.
    std::vector<LoraEntry> list() const;
    // The entry whose name or relative path is `name`; false when there is none.
    bool find(const std::string& name, LoraEntry* out) const;

  private:
    std::string dir_;
    mutable std::mutex mutex_;
};

}  // namespace ggdiff::server
