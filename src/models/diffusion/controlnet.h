// ControlNet (Zhang et al., arXiv:2302.05543) for the LDM UNet: a copy of the UNet's
// down path and middle block whose input block 0 also receives an encoded control image
// (the "hint"), and whose block outputs pass through 1x1 "zero convolutions" to become
// residuals that the UNet adds to its skip connections and to its middle block.
//
// Weights (canonical names under "control_model.", see io/name_map.h): time_embed,
// label_emb (SDXL), input_blocks, middle_block as in the UNet; input_hint_block.{0,2,..,14}
// (8 convs with SiLU between them, stride 2 at .4, .8 and .12, so the hint is encoded at
// 1/8 of the image size); zero_convs.N.0 (one per input block) and middle_block_out.0.
// Every size is read from the weights; the reference engine builds ControlNets with 320
// model channels only, ggdiff takes any width that matches the UNet it controls.
#pragma once

#include <ggml.h>

#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "models/diffusion/unet.h"
#include "nn/weights.h"

namespace ggdiff::models {

constexpr const char* kControlNetPrefix = "control_model.";

struct ControlNetConfig {
    UNetConfig net;  // the copied UNet half (out_channels 0)
    int hint_channels = 3;
    std::vector<int> hint_widths;  // output channels of the 8 hint convs
    // Residuals it makes: one per input block, then the middle block.
    int outputs() const;
    // Channels of residual i (for checks against the UNet).
    int residual_channels(int i) const;
};

// Reads the configuration from the weights under `prefix`; errors name the tensor.
Result<ControlNetConfig> detect_controlnet(const TensorIndex& index,
                                           const std::string& prefix = kControlNetPrefix);

// Whether `control` fits `unet`: same levels, widths, blocks and context width; the error
// names what differs.
Status check_controlnet_fits(const ControlNetConfig& control, const UNetConfig& unet);

// x [W, H, 4, N] (the noisy latent the UNet gets, without inpainting channels),
// timesteps [N], context [ctx, T, N or 1], hint [8W, 8H, hint_channels, 1] in [0, 1],
// y [adm, N] or null -> the residuals, each multiplied by `strength`.
std::vector<ggml_tensor*> build_controlnet(nn::Ctx& c, const ControlNetConfig& cfg, ggml_tensor* x,
                                           ggml_tensor* timesteps, ggml_tensor* context,
                                           ggml_tensor* hint, ggml_tensor* y, float strength,
                                           const std::string& prefix = kControlNetPrefix);

}  // namespace ggdiff::models
