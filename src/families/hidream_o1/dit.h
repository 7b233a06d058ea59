// HiDream-O1-Image's diffusion network: a Qwen3-VL language model (36 layers, 4096 wide) that
// reads the prompt's token embeddings and the image's 32x32 pixel patches in one sequence, as
// stable-diffusion.cpp (38a51f81, hidream_o1.hpp) runs it:
// - the prompt's last token (<|tms_token|>) is replaced by the timestep embedding
//   (t_embedder1: 256 sinusoidal features of (1 - sigma) * 1000, Linear, SiLU, Linear);
// - the pixels [-1, 1] are cut into 32x32 patches (features (channel, row, column), 3072) and
//   embedded by x_embedder (proj1 3072 -> 1024 without bias, proj2 1024 -> 4096);
// - the language model runs on [prompt, patches] with Qwen3-VL's interleaved multimodal RoPE
//   (theta 5e6, sections 24/20/20): prompt token i at (i, i, i), patch (row, col) at
//   (4096, 4096 + row, 4096 + col); the prompt before the timestep token attends causally,
//   the timestep token and the patches see everything;
// - after the final norm, final_layer2.linear turns each patch token back into 32x32x3 pixels:
//   the clean image x0, returned as the flow velocity (x - x0) / sigma.
// Names are Comfy-Org's single file's (model.language_model.*, model.t_embedder1.mlp.{0,2},
// model.x_embedder.proj{1,2}, model.final_layer2.linear; model.visual.* is the vision tower of
// the edit mode; lm_head is never read), filed under model.diffusion_model. without "model."
// (families/hidream_o1/names.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "models/te/qwen_llm.h"
#include "nn/weights.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff::models {

struct HiDreamO1Config {
    QwenLlmConfig llm;  // under model.language_model., with the multimodal RoPE
    std::string prefix = "model.diffusion_model.";  // see families/hidream_o1/names.h
    int patch = 32;
    int64_t channels = 3;
    int64_t bottleneck = 1024;  // x_embedder.proj1's rows
    int64_t patch_width() const { return channels * patch * patch; }
};

// Reads and checks the sizes; errors name the missing or mis-shaped tensor.
Result<HiDreamO1Config> detect_hidream_o1(const TensorIndex& index);

// The RoPE positions of `text` prompt tokens followed by a grid_h x grid_w patch grid: four
// streams (time, row, column, unused) of text + grid_h * grid_w ids each.
std::vector<int32_t> hidream_o1_positions(int64_t text, int64_t grid_h, int64_t grid_w);

// x [W, H, 3, N] (W, H multiples of the patch), t [N] the model times (1 - sigma),
// text [hidden, T, N] the prompts' token embeddings (the last row is replaced by the timestep
// embedding), positions from hidream_o1_positions (or, with reference images, from
// hidream_o1_sequence_positions), inv_sigma [1, 1, 1, N], refs the edit mode's reference
// images [w, h, 3, 1] in [-1, 1] (their patches follow the image's, the same for every item)
// -> the flow velocity [W, H, 3, N].
ggml_tensor* build_hidream_o1(nn::Ctx& c, const HiDreamO1Config& cfg, ggml_tensor* x,
                              ggml_tensor* t, ggml_tensor* text, ggml_tensor* positions,
                              ggml_tensor* inv_sigma, const std::vector<ggml_tensor*>& refs = {});

}  // namespace ggdiff::models

namespace ggdiff {

class HiDreamO1Denoiser : public Denoiser {
  public:
    static Result<std::unique_ptr<HiDreamO1Denoiser>> create(const FamilyContext& ctx,
                                                             const ModuleDevices& where,
                                                             const models::HiDreamO1Config& cfg);

    // batch.x [w, h, 3, n] pixels; each conditioning's context is its prompt's token
    // embeddings [hidden, T, 1] (same T across the batch); in the edit mode its images are the
    // reference pixels and its positions the whole sequence's (batch.refs, the pipeline's
    // copies of the references, are not read).
    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override { runner_->end_phase(); }
    ModuleRunner& runner() { return *runner_; }

  private:
    models::HiDreamO1Config cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
