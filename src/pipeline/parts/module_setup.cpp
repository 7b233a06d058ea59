#include "pipeline/parts/module_setup.h"

#include <chrono>

#include "core/log.h"

namespace ggdiff {

Result<std::unique_ptr<ModuleRunner>> make_module(const FamilyContext& ctx,
                                                  const ModuleDevices& where, const char* label,
                                                  const BuildFn& declare) {
    const auto t0 = std::chrono::steady_clock::now();
    auto m = std::make_unique<ModuleRunner>(ctx.index, ctx.weight_type, where, ctx.threads, label);
    const ModelOptions& o = ctx.options;
    KernelChoices choices;
    choices.flash_attention =
        o.flash_attn || (where.module == "diffusion" && o.diffusion_flash_attn);
    choices.conv_direct = (where.module == "diffusion" && o.diffusion_conv_direct) ||
                          (where.module == "vae" && o.vae_conv_direct);
    // Seamless tiling wraps the image-space modules' convolutions (never the text encoders').
    const bool image_module = where.module == "diffusion" || where.module == "vae" ||
                              where.module == "taesd" || where.module == "controlnet";
    choices.circular_x = image_module && o.circular_x();
    choices.circular_y = image_module && o.circular_y();
    m->set_kernel_choices(choices);
    GGDIFF_TRY(m->prepare(declare));
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    GGDIFF_LOG_DEBUG("%s: %zu tensors, %.1f MiB, ready in %.2fs", label, m->weights().count(),
                     m->weights().bytes() / 1048576.0, secs);
    return m;
}

}  // namespace ggdiff
