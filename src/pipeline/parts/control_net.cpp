#include "pipeline/parts/control_net.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"
#include "tokenizers/token_windows.h"

namespace ggdiff {

Result<std::unique_ptr<ControlNetPart>> ControlNetPart::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::ControlNetConfig& cfg) {
    auto part = std::unique_ptr<ControlNetPart>(new ControlNetPart());
    part->cfg_ = cfg;
    auto runner = make_module(ctx, where, "ControlNet", [&cfg](GraphBuilder& gb) {
        const models::UNetConfig& u = cfg.net;
        const int64_t s = 1 << std::max<int>(0, static_cast<int>(u.channel_mult.size()) - 1);
        ggml_tensor* y =
            u.adm_in_channels > 0 ? gb.input(HostTensor({u.adm_in_channels, 1})) : nullptr;
        return models::build_controlnet(
            gb.nn(), cfg, gb.input(HostTensor({s, s, u.in_channels, 1})), gb.input(HostTensor({1})),
            gb.input(HostTensor({u.context_dim, kClipWindowLength, 1})),
            gb.input(HostTensor({8 * s, 8 * s, cfg.hint_channels, 1})), y, 1.0f);
    });
    if (!runner.ok()) return runner.status();
    part->runner_ = std::move(*runner);
    return part;
}

Result<std::vector<HostTensor>> ControlNetPart::run(const HostTensor& x,
                                                    const HostTensor& timesteps,
                                                    const HostTensor& context, const HostTensor* y,
                                                    const ControlHint& hint) {
    if (hint.image.dim(0) != 8 * x.dim(0) || hint.image.dim(1) != 8 * x.dim(1) ||
        hint.image.dim(2) != cfg_.hint_channels) {
        return Status::Error(string_format(
            "ControlNet: control image of %lldx%lldx%lld for a %lldx%lld latent (it takes %d "
            "channels at 8 times the latent size)",
            (long long)hint.image.dim(0), (long long)hint.image.dim(1),
            (long long)hint.image.dim(2), (long long)x.dim(0), (long long)x.dim(1),
            cfg_.hint_channels));
    }
    return runner_->run([&](GraphBuilder& gb) {
        ggml_tensor* yt = cfg_.net.adm_in_channels > 0 && y ? gb.input(*y) : nullptr;
        return models::build_controlnet(gb.nn(), cfg_, gb.input(x), gb.input(timesteps),
                                        gb.input(context), gb.input(hint.image), yt, hint.strength);
    });
}

}  // namespace ggdiff
