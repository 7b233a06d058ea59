// The LDM UNet (ldm.modules.diffusionmodules.openaimodel.UNetModel) used by SD1.x and
// SD2.x: ResBlocks with a timestep embedding, SpatialTransformer cross-attention on
// chosen levels, skip connections from the down path to the up path. The shape of the
// network is read from the weights (detect_unet); numerics follow stable-diffusion.cpp,
// which made the golden images.
#pragma once

#include <ggml.h>

#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct UNetConfig {
    int in_channels = 4;
    int out_channels = 4;
    int model_channels = 320;
    int time_embed_dim = 1280;                       // 4 * model_channels in every LDM UNet
    std::vector<int> channel_mult{1, 2, 4, 4};       // width of level i = mult[i] * model_channels
    int num_res_blocks = 2;                          // ResBlocks per level on the down path
    std::vector<int> transformer_depth{1, 1, 1, 0};  // per level; 0 = no attention
    int middle_depth = 1;                            // transformer blocks in middle_block.1
    int context_dim = 768;
    int num_heads = 8;         // fixed head count (SD1), or -1 when head_dim is used
    int head_dim = -1;         // fixed head width (SD2: 64), or -1 when num_heads is used
    bool linear_proj = false;  // SpatialTransformer proj_in/out are linear (SD2) not 1x1 conv
    int adm_in_channels = 0;   // label_emb input width (SDXL); 0 = none

    // Attention heads for a transformer of `channels` width.
    int heads_for(int channels) const { return num_heads > 0 ? num_heads : channels / head_dim; }
};

// Reads the architecture from the tensor shapes under `prefix`. Heads cannot be seen in
// the weights: a 768-wide context (SD1) gets 8 heads, any other width 64-channel heads
// (SD2, SDXL), as in the original configs. Errors name the first missing or odd tensor.
Result<UNetConfig> detect_unet(const TensorIndex& index,
                               const std::string& prefix = "model.diffusion_model.");

// Only the half of the UNet that a ControlNet copies: time embedding (and label
// embedding), input blocks and middle block. cfg.out_channels is 0; nothing under
// output_blocks or out is read.
Result<UNetConfig> detect_unet_encoder(const TensorIndex& index, const std::string& prefix);

// x [W, H, in_channels, N] f32, timesteps [N] f32, context [context_dim, T, N or 1] f32
// -> eps / v prediction [W, H, out_channels, N]. y [adm_in_channels, N] is the label
// embedding input, needed when cfg.adm_in_channels > 0 (SDXL) and ignored otherwise.
// `control` (a ControlNet's residuals, or empty) holds one tensor per skip connection in
// input-block order, added to that skip before the up path takes it, then one added to
// the middle block's output.
// Graph size: about 2,500 nodes for the SD1 layout (ggml's default graph holds 2,048).
ggml_tensor* build_unet(nn::Ctx& c, const UNetConfig& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                        ggml_tensor* context, const std::string& prefix = "model.diffusion_model.",
                        ggml_tensor* y = nullptr, const std::vector<ggml_tensor*>& control = {});

// The down path of a UNet as a ControlNet runs it: the output of every input block (the
// tensors the UNet keeps as skip connections) and of the middle block. `hint` (or null)
// is added to the output of input_blocks.0.
struct UNetEncoderOutputs {
    std::vector<ggml_tensor*> blocks;
    ggml_tensor* middle = nullptr;
};
UNetEncoderOutputs build_unet_encoder(nn::Ctx& c, const UNetConfig& cfg, ggml_tensor* x,
                                      ggml_tensor* timesteps, ggml_tensor* context,
                                      const std::string& prefix, ggml_tensor* y, ggml_tensor* hint);

// The top-level blocks in execution order, as weight-name prefixes relative to the
// model prefix, each ending in '.': "input_blocks.0.", ..., "middle_block.",
// "output_blocks.0.", ... The small "time_embed." / "label_emb." head and the "out."
// tail are not in the list; they belong with the first and last block respectively.
std::vector<std::string> unet_block_prefixes(const UNetConfig& cfg);

}  // namespace ggdiff::models
