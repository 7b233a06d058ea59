#include "pipeline/parts/qwen3_vision_encoder.h"

#include "core/log.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {

namespace {

BuildFn tower_graph(const models::Qwen3VisionConfig& cfg, const models::Qwen3VisionInputs& in) {
    return [&cfg, &in](GraphBuilder& gb) {
        const int64_t t = in.tokens();
        std::array<ggml_tensor*, 4> rows{}, weights{};
        for (int k = 0; k < 4; ++k) {
            rows[k] = gb.input_i32(in.pos_rows[k], {t});
            weights[k] = gb.input(in.pos_weights[k]);
        }
        return std::vector<ggml_tensor*>{models::build_qwen3_vision(
            gb.nn(), cfg, gb.input(in.patches), rows, weights, gb.input(in.cos), gb.input(in.sin))};
    };
}

}  // namespace

Result<std::optional<models::Qwen3VisionConfig>> find_qwen3_vision_tower(const TensorIndex& index,
                                                                         const std::string& prefix,
                                                                         int64_t llm_hidden,
                                                                         const std::string& what) {
    if (!models::has_qwen3_vision(index, prefix)) return std::optional<models::Qwen3VisionConfig>();
    auto v = models::detect_qwen3_vision(index, prefix);
    if (!v.ok()) return v.status().with_context(what);
    if (v->out_dim != llm_hidden) {
        return Status::Error(string_format(
            "%s: the Qwen3-VL vision tower's merger gives rows of %lld, the language model is "
            "%lld wide: not this model's vision tower",
            what.c_str(), (long long)v->out_dim, (long long)llm_hidden));
    }
    return std::optional<models::Qwen3VisionConfig>(*v);
}

Result<std::unique_ptr<Qwen3VisionEncoder>> Qwen3VisionEncoder::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::Qwen3VisionConfig& cfg) {
    auto enc = std::unique_ptr<Qwen3VisionEncoder>(new Qwen3VisionEncoder());
    enc->cfg_ = cfg;
    // Declares every weight with the smallest image: one merge unit.
    const int side = cfg.factor();
    auto in = models::qwen3_vision_inputs(cfg, HostTensor({side, side, 3}));
    if (!in.ok()) return in.status();
    auto runner = make_module(ctx, where, "vision", tower_graph(enc->cfg_, *in));
    if (!runner.ok()) return runner.status();
    enc->runner_ = std::move(*runner);
    return enc;
}

Result<HostTensor> Qwen3VisionEncoder::encode(const HostTensor& pixels) {
    auto in = models::qwen3_vision_inputs(cfg_, pixels);
    if (!in.ok()) return in.status();
    auto r = runner_->run(tower_graph(cfg_, *in));
    if (!r.ok()) return r.status();
    HostTensor out = std::move((*r)[0]);
    out.ne = {cfg_.out_dim, in->outputs(), 1};
    return out;
}

}  // namespace ggdiff
