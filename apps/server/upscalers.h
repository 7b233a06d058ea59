// The ESRGAN upscalers the server offers (A1111 /sdapi/v1/upscalers, extra-single-image):
// the --upscale-model file and the model files of --hires-upscalers-dir, by file base name.
// Requests name upscalers only by these names; no path from a request reaches the file
// system. Each is loaded on first use (on the upscaler's placement) and kept.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ggdiff.h"
#include "model_host.h"

namespace ggdiff::server {

struct UpscalerEntry {
    std::string name;  // file base name without extension ("RealESRGAN_x4plus")
    std::string path;
    int scale = 0;  // of one pass (from the file's tensors)
};

class Upscalers {
  public:
    explicit Upscalers(const ModelHost& host) : host_(host) {}
    ~Upscalers();

    // --upscale-model first, then the folder's .safetensors / .gguf ESRGANs (re-read on each
    // call; files that are no ESRGAN are left out), sorted by name.
    std::vector<UpscalerEntry> list() const;
    bool find(const std::string& name, UpscalerEntry* out) const;

    // The loaded upscaler for `entry` (loaded now if needed); nullptr with `error` set.
    ggdiff_upscaler* get(const UpscalerEntry& entry, std::string* error);

  private:
    const ModelHost& host_;
    mutable std::mutex mutex_;
    std::map<std::string, ggdiff_upscaler*> loaded_;  // by path
};

}  // namespace ggdiff::server
