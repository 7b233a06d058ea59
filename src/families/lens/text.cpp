#include "families/lens/text.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"
#include "pipeline/parts/token_weights.h"
#include "tokenizers/prompt_attention.h"

namespace ggdiff {

namespace {

std::vector<int32_t> position_ids(int64_t n) {
    std::vector<int32_t> p(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    return p;
}

// The inputs of one run: they must outlive it (the runner uploads them after building).
struct LlmInputs {
    explicit LlmInputs(const models::GptOssConfig& cfg, HostTensor x)
        : embeds(std::move(x)),
          positions(position_ids(embeds.dim(1))),
          causal(models::gpt_oss_causal_mask(embeds.dim(1))),
          window(models::gpt_oss_window_mask(embeds.dim(1), cfg.sliding_window)) {}
    HostTensor embeds;
    std::vector<int32_t> positions;
    HostTensor causal, window;
};

ggml_tensor* graph(GraphBuilder& gb, const models::GptOssConfig& cfg, const LlmInputs& in) {
    const int64_t t = in.embeds.dim(1);
    return models::build_gpt_oss(gb.nn(), cfg, gb.input(in.embeds), gb.input_i32(in.positions, {t}),
                                 gb.input(in.causal), gb.input(in.window),
                                 lens_template().out_layers);
}

}  // namespace

const LensTemplate& lens_template() {
    static const LensTemplate t = [] {
        LensTemplate l;
        l.prefix =
            "<|start|>system<|message|>You are ChatGPT, a large language model trained by "
            "OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: 2026-05-26\n\nReasoning: medium\n\n"
            "# Valid channels: analysis, commentary, final. Channel must be included for every "
            "message.<|end|><|start|>developer<|message|># Instructions\n\nDescribe the image by "
            "detailing the color, shape, size, texture, quantity, text, spatial relationships of "
            "the objects and background.\n\n<|end|><|start|>user<|message|>";
        l.suffix =
            "<|end|><|start|>assistant<|channel|>analysis<|message|>Need to generate one image "
            "according to the description.<|end|><|start|>assistant<|channel|>final<|message|>";
        return l;
    }();
    return t;
}

Result<std::unique_ptr<LensTextEncoder>> LensTextEncoder::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::GptOssConfig& cfg,
    std::shared_ptr<const LlmTokenizer> tokenizer) {
    const int last =
        *std::max_element(lens_template().out_layers.begin(), lens_template().out_layers.end());
    if (cfg.layers <= last) {
        return Status::Error(string_format(
            "--llm: the text encoder has %lld layers; Lens reads the output of layer %d "
            "(GPT-OSS-20B has 24)",
            (long long)cfg.layers, last + 1));
    }
    auto enc = std::unique_ptr<LensTextEncoder>(new LensTextEncoder());
    enc->index_ = &ctx.index;
    enc->cfg_ = cfg;
    enc->tokenizer_ = std::move(tokenizer);
    const LlmInputs sample(cfg, HostTensor({cfg.hidden, 8, 1}));
    auto runner = make_module(ctx, where, "LLM", [&cfg, &sample](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{graph(gb, cfg, sample)};
    });
    if (!runner.ok()) return runner.status();
    enc->runner_ = std::move(*runner);
    return enc;
}

void LensTextEncoder::tokenize(const std::string& prompt, std::vector<int>* ids,
                               std::vector<float>* weights) const {
    const LensTemplate& tmpl = lens_template();
    *ids = tokenizer_->encode(tmpl.prefix);
    weights->assign(ids->size(), 1.0f);
    for (const auto& run : parse_prompt_attention(prompt)) {
        if (is_break_marker(run)) continue;
        const std::vector<int> part = tokenizer_->encode(run.first);
        ids->insert(ids->end(), part.begin(), part.end());
        weights->insert(weights->end(), part.size(), run.second);
    }
    const std::vector<int> suffix = tokenizer_->encode(tmpl.suffix);
    ids->insert(ids->end(), suffix.begin(), suffix.end());
    weights->resize(ids->size(), 1.0f);
    // As the reference: a longer sequence is cut (the end of the template goes first).
    if (static_cast<int>(ids->size()) > tmpl.max_tokens) {
        ids->resize(static_cast<size_t>(tmpl.max_tokens));
        weights->resize(ids->size());
    }
}

Result<Conditioning> LensTextEncoder::encode(const TextRequest& request) {
    const LensTemplate& tmpl = lens_template();
    std::vector<int> ids;
    std::vector<float> weights;
    tokenize(request.prompt, &ids, &weights);
    const int64_t n = static_cast<int64_t>(ids.size());
    if (n <= tmpl.drop_tokens) {
        return Status::Error(string_format(
            "Lens: the chat template gave %lld tokens, not more than the %d it drops: the "
            "tokenizer is not GPT-OSS's",
            (long long)n, tmpl.drop_tokens));
    }
    auto embeds = models::gpt_oss_embed(*index_, cfg_, ids);
    if (!embeds.ok()) return embeds.status();
    const LlmInputs inputs(cfg_, std::move(*embeds));
    auto r = runner_->run(
        [&](GraphBuilder& gb) { return std::vector<ggml_tensor*>{graph(gb, cfg_, inputs)}; });
    if (!r.ok()) return r.status();
    HostTensor& h = (*r)[0];
    const int64_t width = cfg_.hidden * static_cast<int64_t>(tmpl.out_layers.size());
    apply_token_weights(h.data.data(), width, n, weights.data());
    const int64_t keep = n - tmpl.drop_tokens;
    Conditioning c;
    c.context = HostTensor({width, keep, 1});
    std::copy(h.data.begin() + tmpl.drop_tokens * width, h.data.end(), c.context.data.begin());
    return c;
}

}  // namespace ggdiff
