#include "pipeline/parts/qwen_vision_encoder.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {

namespace {

// Builds the tower's graph for one set of inputs.
BuildFn tower_graph(const models::QwenVisionConfig& cfg, const models::QwenVisionInputs& in) {
    return [&cfg, &in](GraphBuilder& gb) {
        const int64_t units = in.outputs();
        ggml_tensor* patches = gb.input(in.patches);
        ggml_tensor* index = gb.input_i32(in.window_index, {units});
        ggml_tensor* inverse = gb.input_i32(in.inverse_index, {units});
        return std::vector<ggml_tensor*>{models::build_qwen_vision(
            gb.nn(), cfg, in, patches, index, inverse, gb.input(in.cos), gb.input(in.sin))};
    };
}

}  // namespace

Result<std::optional<models::QwenVisionConfig>> find_qwen_vision_tower(
    const FamilyContext& ctx, const std::string& llm_prefix, int64_t llm_hidden) {
    if (!models::has_qwen_vision(ctx.index, llm_prefix)) {
        if (!ctx.options.llm_vision.empty()) {
            return Status::Error("--llm_vision " + ctx.options.llm_vision +
                                 ": no Qwen2.5-VL vision tower found in it");
        }
        return std::optional<models::QwenVisionConfig>();
    }
    auto v = models::detect_qwen_vision(ctx.index, llm_prefix);
    if (!v.ok()) {
        return v.status().with_context(ctx.options.llm_vision.empty() ? "--llm" : "--llm_vision");
    }
    if (v->out_dim != llm_hidden) {
        return Status::Error(string_format(
            "the vision tower's merger gives rows of %lld, the LLM is %lld wide: not this LLM's "
            "vision tower",
            (long long)v->out_dim, (long long)llm_hidden));
    }
    return std::optional<models::QwenVisionConfig>(*v);
}

HostTensor clip_preprocess(const Image& image, int width, int height) {
    const Image rgb = image.channels == 3 ? image : convert_channels(image, 3);
    const int64_t iw = rgb.width, ih = rgb.height;
    // The reference's float arithmetic; a scaled size that rounds below the crop is widened
    // (the reference would read outside its buffer there).
    const float scale = std::max(static_cast<float>(width) / static_cast<float>(iw),
                                 static_cast<float>(height) / static_cast<float>(ih));
    const int64_t rw =
        std::max<int64_t>(width, static_cast<int64_t>(scale * static_cast<float>(iw)));
    const int64_t rh =
        std::max<int64_t>(height, static_cast<int64_t>(scale * static_cast<float>(ih)));
    const int64_t ox = (rw - width) / 2, oy = (rh - height) / 2;
    const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
    const float stdv[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    HostTensor out({width, height, 3});
    for (int64_t c = 0; c < 3; ++c) {
        for (int64_t y = 0; y < height; ++y) {
            const int64_t sy = (y + oy) * ih / rh;
            for (int64_t x = 0; x < width; ++x) {
                const int64_t sx = (x + ox) * iw / rw;
                float v = rgb.pixels[static_cast<size_t>((sy * iw + sx) * 3 + c)] / 255.0f;
                v = std::min(1.0f, std::max(0.0f, v));
                out.data[static_cast<size_t>((c * height + y) * width + x)] =
                    (v - mean[c]) / stdv[c];
            }
        }
    }
    return out;
}

Result<std::unique_ptr<QwenVisionEncoder>> QwenVisionEncoder::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::QwenVisionConfig& cfg) {
    auto enc = std::unique_ptr<QwenVisionEncoder>(new QwenVisionEncoder());
    enc->cfg_ = cfg;
    // Declares every weight with the smallest image: one window of 2x2 patches.
    const int side = cfg.patch * cfg.merge;
    auto in = models::qwen_vision_inputs(cfg, HostTensor({side, side, 3}));
    if (!in.ok()) return in.status();
    auto runner = make_module(ctx, where, "vision", tower_graph(enc->cfg_, *in));
    if (!runner.ok()) return runner.status();
    enc->runner_ = std::move(*runner);
    return enc;
}

Result<HostTensor> QwenVisionEncoder::encode(const Image& rgb) {
    GGDIFF_TRY(validate_image(rgb));
    const auto [w, h] = models::qwen_vision_size(rgb.width, rgb.height, cfg_);
    auto in = models::qwen_vision_inputs(cfg_, clip_preprocess(rgb, w, h));
    if (!in.ok()) return in.status();
    auto r = runner_->run(tower_graph(cfg_, *in));
    if (!r.ok()) return r.status();
    HostTensor out = std::move((*r)[0]);
    out.ne = {cfg_.out_dim, in->outputs(), 1};
    return out;
}

}  // namespace ggdiff
