#include "families/ltx/text.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/log.h"
#include "nn/layers.h"
#include "pipeline/parts/token_weights.h"

namespace ggdiff::models {

namespace {

constexpr int64_t kLtxPromptLength = 1024;  // the reference's padded prompt length

const TensorInfo* matrix(const TensorIndex& index, const std::string& name) {
    const TensorInfo* t = index.find(name);
    return t && t->shape.size() == 2 ? t : nullptr;
}

}  // namespace

Result<LtxTextConfig> detect_ltx_text(const TensorIndex& index, const std::string& llm_prefix) {
    auto llm = detect_gemma3(index, llm_prefix);
    if (!llm.ok()) return llm.status();
    LtxTextConfig cfg;
    cfg.llm = *llm;
    cfg.llm.ggml_attention = true;
    cfg.states = cfg.llm.layers + 1;
    const std::string video = cfg.proj + "video_aggregate_embed.weight";
    const std::string audio = cfg.proj + "audio_aggregate_embed.weight";
    const std::string single = cfg.proj + "projection.weight";
    const TensorInfo* v = matrix(index, video);
    const TensorInfo* a = matrix(index, audio);
    const TensorInfo* p = matrix(index, single);
    if (!v && !p) {
        return Status::Error("missing tensor " + video + " (or " + single +
                             "): the LTX text projection is in the embeddings-connectors file "
                             "(--embeddings-connectors)");
    }
    cfg.dual = v != nullptr;
    if (cfg.dual && !a) return Status::Error("missing tensor " + audio);
    for (const TensorInfo* t : {cfg.dual ? v : p, cfg.dual ? a : nullptr}) {
        if (t && t->shape[1] != cfg.features()) {
            return Status::Error(string_format(
                "%s takes %lld features, but the language model gives %lld states of %lld "
                "(%lld); LTX-2 needs Gemma 3 12B (48 layers of 3840)",
                t->name.c_str(), (long long)t->shape[1], (long long)cfg.states,
                (long long)cfg.llm.hidden, (long long)cfg.features()));
        }
    }
    if (cfg.dual) {
        cfg.video_width = v->shape[0];
        cfg.audio_width = a->shape[0];
        for (const std::string& b :
             {cfg.proj + "video_aggregate_embed.bias", cfg.proj + "audio_aggregate_embed.bias"}) {
            if (!index.has(b)) return Status::Error("missing tensor " + b);
        }
    } else {
        cfg.video_width = p->shape[0];
        cfg.audio_width = 0;
    }
    return cfg;
}

HostTensor ltx_text_features(const LtxTextConfig& cfg, const std::vector<HostTensor>& states) {
    const int64_t h = cfg.llm.hidden, s = static_cast<int64_t>(states.size());
    const int64_t t = states.empty() ? 0 : states[0].dim(1);
    HostTensor out({h * s, t});
    for (int64_t k = 0; k < s; ++k) {
        const float* x = states[static_cast<size_t>(k)].data.data();
        float shift = 0.0f, scale = 1.0f;
        if (!cfg.dual) {
            // One mean and range per state over all its tokens and features.
            double sum = 0.0;
            float lo = std::numeric_limits<float>::infinity();
            float hi = -std::numeric_limits<float>::infinity();
            for (int64_t i = 0; i < h * t; ++i) {
                sum += x[i];
                lo = std::min(lo, x[i]);
                hi = std::max(hi, x[i]);
            }
            shift = static_cast<float>(sum / static_cast<double>(h * t));
            scale = 8.0f / (hi - lo + 1e-6f);
        }
        for (int64_t j = 0; j < t; ++j) {
            const float* row = x + j * h;
            float token_scale = scale;
            if (cfg.dual) {
                double sq = 0.0;
                for (int64_t i = 0; i < h; ++i) sq += static_cast<double>(row[i]) * row[i];
                token_scale =
                    1.0f / std::sqrt(static_cast<float>(sq / static_cast<double>(h)) + 1e-6f);
            }
            float* dst = out.data.data() + j * h * s;
            for (int64_t i = 0; i < h; ++i) dst[i * s + k] = (row[i] - shift) * token_scale;
        }
    }
    return out;
}

ggml_tensor* build_ltx_text_projection(nn::Ctx& c, const LtxTextConfig& cfg,
                                       ggml_tensor* features) {
    const int64_t f = cfg.features();
    if (!cfg.dual)
        return nn::linear(c, features, cfg.proj + "projection", f, cfg.video_width, false);
    const float hidden = static_cast<float>(cfg.llm.hidden);
    auto branch = [&](const char* name, int64_t width) {
        ggml_tensor* x = ggml_scale(c.ctx, features, std::sqrt(static_cast<float>(width) / hidden));
        return nn::linear(c, x, cfg.proj + name, f, width, true);
    };
    return ggml_concat(c.ctx, branch("video_aggregate_embed", cfg.video_width),
                       branch("audio_aggregate_embed", cfg.audio_width), 0);
}

Status ltx_prepare_text(ModuleRunner& llm, ModuleRunner& proj, const LtxTextConfig& cfg) {
    const int64_t n = 8;
    std::vector<int32_t> pos(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) pos[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    Status st = llm.prepare([&](GraphBuilder& gb) {
        GemmaMasks m;
        if (cfg.llm.needs_masks(n)) {
            m.global = gb.input(gemma_attention_mask(n, 0, 0));
            m.window = gb.input(gemma_attention_mask(n, 0, cfg.llm.sliding_window));
        }
        std::vector<ggml_tensor*> states;
        build_gemma(gb.nn(), cfg.llm, gb.input(HostTensor({cfg.llm.hidden, n, 1})),
                    gb.input_i32(pos, {n}), 0, m, &states);
        return states;
    });
    if (!st.ok()) return st;
    return proj.prepare([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{
            build_ltx_text_projection(gb.nn(), cfg, gb.input(HostTensor({cfg.features(), n, 1})))};
    });
}

Result<HostTensor> ltx_encode_tokens(ModuleRunner& llm, ModuleRunner& proj,
                                     const TensorIndex& index, const LtxTextConfig& cfg,
                                     const std::vector<int>& ids,
                                     const std::vector<float>& weights) {
    const int64_t t = static_cast<int64_t>(ids.size());
    if (t == 0) return Status::Error("LTX text: no tokens");
    auto embeds = gemma_embed(index, cfg.llm, ids);
    if (!embeds.ok()) return embeds.status();
    std::vector<int32_t> pos(static_cast<size_t>(t));
    // The reference pads the prompt on the left to 1024 tokens (masked out) and numbers all of
    // them, so the prompt's tokens sit at positions 1024 - t .. 1023. The attention sees only
    // their differences, but RoPE's rounding at those positions is the reference's, so they
    // get the same numbers here.
    const int64_t first = std::max<int64_t>(0, kLtxPromptLength - t);
    for (int64_t i = 0; i < t; ++i) pos[static_cast<size_t>(i)] = static_cast<int32_t>(first + i);
    const bool masks = cfg.llm.needs_masks(t);
    HostTensor global, window;
    if (masks) {
        global = gemma_attention_mask(t, 0, 0);
        window = gemma_attention_mask(t, 0, cfg.llm.sliding_window);
    }
    auto build_llm = [&](GraphBuilder& gb) {
        GemmaMasks m;
        if (masks) {
            m.global = gb.input(global);
            m.window = gb.input(window);
        }
        std::vector<ggml_tensor*> states;
        build_gemma(gb.nn(), cfg.llm, gb.input(*embeds), gb.input_i32(pos, {t}), 0, m, &states);
        return states;
    };
    auto states = llm.run(build_llm);
    if (!states.ok()) return states.status();
    if (static_cast<int64_t>(states->size()) != cfg.states) {
        return Status::Error("LTX text: the language model gave " + std::to_string(states->size()) +
                             " states, the projection takes " + std::to_string(cfg.states));
    }
    // Emphasis scales the raw states, as the reference does. The mean it then restores is a
    // factor per state that both normalizations cancel, so restoring it over the real tokens
    // (here) or over 1024 padded ones (the reference) gives the same features.
    if (!weights.empty()) {
        for (HostTensor& s : *states) {
            apply_token_weights(s.data.data(), cfg.llm.hidden, t, weights.data());
        }
    }
    HostTensor features = ltx_text_features(cfg, *states);
    states->clear();
    features.ne = {cfg.features(), t, 1};
    auto out = proj.run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{
            build_ltx_text_projection(gb.nn(), cfg, gb.input(features))};
    });
    if (!out.ok()) return out.status();
    return std::move((*out)[0]);
}

}  // namespace ggdiff::models
