#include "pipeline/parts/clip_vision_encoder.h"

#include "pipeline/parts/module_setup.h"
#include "pipeline/parts/qwen_vision_encoder.h"

namespace ggdiff {

namespace {

// Wan asks the reference engine for get_clip_vision_output(image, return_pooled=false,
// clip_skip=-2), but its CLIP encoder skips layers only for clip_skip > 0: every layer runs
// and the last one's hidden states come back, before the post-layernorm. The reference's
// images are made that way, so we do the same (not the penultimate layer that the -2 and
// ComfyUI's "penultimate" suggest).
BuildFn tower_graph(const models::ClipVisionConfig& cfg, const HostTensor& pixels) {
    return [&cfg, &pixels](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{
            models::build_clip_vision(gb.nn(), cfg, gb.input(pixels), cfg.layers)};
    };
}

}  // namespace

Result<std::unique_ptr<ClipVisionEncoder>> ClipVisionEncoder::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::ClipVisionConfig& cfg) {
    auto enc = std::unique_ptr<ClipVisionEncoder>(new ClipVisionEncoder());
    enc->cfg_ = cfg;
    const HostTensor pixels({cfg.image_size, cfg.image_size, 3});
    auto runner = make_module(ctx, where, "clip_vision", tower_graph(enc->cfg_, pixels));
    if (!runner.ok()) return runner.status();
    enc->runner_ = std::move(*runner);
    return enc;
}

Result<HostTensor> ClipVisionEncoder::encode(const Image& rgb) {
    GGDIFF_TRY(validate_image(rgb));
    const int side = static_cast<int>(cfg_.image_size);
    const HostTensor pixels = clip_preprocess(rgb, side, side);
    auto r = runner_->run(tower_graph(cfg_, pixels));
    if (!r.ok()) return r.status();
    HostTensor out = std::move((*r)[0]);
    out.ne = {cfg_.width, cfg_.positions, 1};
    return out;
}

}  // namespace ggdiff
