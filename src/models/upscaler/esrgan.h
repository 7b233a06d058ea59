// ESRGAN / Real-ESRGAN upscalers: BasicSR's RRDBNet (conv_first; num_block RRDBs of three
// residual dense blocks; conv_body plus the skip; a nearest 2x upsample and conv per x2
// stage; conv_hr; conv_last). Widths (num_feat, growth), num_block and the scale come from
// the weights: num_block from the highest body.N, x4 with conv_up2, x2 with conv_up1 only,
// x1 with neither.
//
// Weights: a .safetensors or .gguf file in BasicSR names, or in the original ESRGAN names
// (model.0, model.1.sub.N.RDBk.convj.0, ...), which the name map renames (io/name_map.h);
// they are filed under "upscaler." and used as F16 (as stable-diffusion.cpp does). PyTorch
// files (.pth / .pt, BasicSR's 'params_ema' preferred over 'params') are read like these
// (io/pytorch_reader.cpp).
//
// Images are RGB floats in [0, 1] in ggml order [W, H, 3, 1] (values /255 of 8-bit pixels);
// the output is [W*s, H*s, 3, 1], not clamped.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"
#include "runtime/module_runner.h"

namespace ggdiff::models {

struct EsrganConfig {
    int scale = 4;
    int num_block = 23;
    int num_feat = 64;  // 64 in every published model
    int num_grow = 32;  // growth channels of the dense blocks
    int in_channels = 3;
    int out_channels = 3;
};

// The architecture under `prefix`, checked against every tensor the graph reads (the error
// names the first missing or mis-shaped one, or says the file is no ESRGAN at all).
Result<EsrganConfig> detect_esrgan(const TensorIndex& index,
                                   const std::string& prefix = "upscaler.");

// Every tensor the graph reads with its torch shape.
std::vector<std::pair<std::string, std::vector<int64_t>>> esrgan_tensor_shapes(
    const EsrganConfig& cfg, const std::string& prefix = "upscaler.");

// x [W, H, in_channels, N] -> [W*scale, H*scale, out_channels, N].
ggml_tensor* build_esrgan(nn::Ctx& c, const EsrganConfig& cfg, ggml_tensor* x,
                          const std::string& prefix = "upscaler.");

// The scale of the ESRGAN in `path` from its header alone (no weights are read); errors as
// EsrganUpscaler::load gives them (PyTorch files, not an ESRGAN).
Result<int> esrgan_file_scale(const std::string& path);

// An ESRGAN model loaded on a device (or the module placement the upscaler gets from
// --backend / --params-backend: "upscaler=CUDA0", an RPC device, ...).
class EsrganUpscaler {
  public:
    // Opens `path` (its own TensorIndex), detects the architecture and loads the weights
    // (F16) on `where`. Errors name the file.
    static Result<std::unique_ptr<EsrganUpscaler>> load(const std::string& path,
                                                        const ModuleDevices& where, int threads,
                                                        const KernelChoices& choices = {});
    ~EsrganUpscaler();

    int scale() const { return cfg_.scale; }
    const EsrganConfig& config() const { return cfg_; }
    // The file's base name without extension ("RealESRGAN_x4plus"), for metadata.
    const std::string& name() const { return name_; }

    // rgb: [W, H, 3, 1] in [0, 1] -> [W*s, H*s, 3, 1], not clamped. Images with a side
    // larger than tile_size (> 0) run as overlapping tiles of tile_size (upscale_tiling.h);
    // tile_size <= 0 runs the whole image at once.
    Result<HostTensor> upscale(const HostTensor& rgb, int tile_size);
    // Frees the weights when they come from disk per phase (--params-backend disk).
    void end_phase();

  private:
    EsrganUpscaler() = default;
    Result<HostTensor> run_once(const HostTensor& rgb);

    TensorIndex index_;  // outlives the runner, which reads from it
    std::unique_ptr<ModuleRunner> runner_;
    EsrganConfig cfg_;
    std::string name_;
};

}  // namespace ggdiff::models
