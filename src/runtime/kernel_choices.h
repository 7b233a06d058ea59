// Which ggml kernels the nn layers emit where ggml offers a choice (--fa, --diffusion-fa,
// --diffusion-conv-direct, --vae-conv-direct). A module's GraphRunner marks the graph it
// builds with its choices; the layers ask kernel_choices() for the context they build in.
// Graphs on the CPU kernels (cpu_kernels.h) use those instead, whatever is chosen here.
#pragma once

#include <ggml.h>

namespace ggdiff {

struct KernelChoices {
    bool flash_attention = false;  // ggml_flash_attn_ext for (non-causal) attention
    bool conv_direct = false;      // ggml_conv_2d_direct instead of im2col + matmul
    // Padded convolutions pad by wrap-around (the other side of the image) on these axes
    // (x = width = ne[0], y = height = ne[1]) instead of with zeros: seamless tiling.
    bool circular_x = false, circular_y = false;
};

// Marks the graph being built in `ctx` on this thread (held by GraphRunner while it builds).
class KernelChoiceScope {
  public:
    KernelChoiceScope(const ggml_context* ctx, const KernelChoices& choices);
    ~KernelChoiceScope();
    KernelChoiceScope(const KernelChoiceScope&) = delete;
    KernelChoiceScope& operator=(const KernelChoiceScope&) = delete;

  private:
    const ggml_context* previous_ctx_;
    KernelChoices previous_;
};

// The choices for the graph being built in `ctx` (defaults for any other context).
KernelChoices kernel_choices(const ggml_context* ctx);

}  // namespace ggdiff
