#include "pipeline/parts/llm_encoder.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"
#include "tokenizers/find_tokenizer.h"
#include "tokenizers/prompt_attention.h"

namespace ggdiff {

namespace {

std::vector<int32_t> position_ids(int64_t n) {
    std::vector<int32_t> p(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    return p;
}

// Scales each token's states by its weight, then restores the mean of the whole tensor.
void apply_weights(HostTensor& h, int64_t width, const std::vector<float>& weights) {
    bool all_one = true;
    for (float w : weights) all_one &= w == 1.0f;
    if (all_one) return;
    double before = 0.0, after = 0.0;
    for (float v : h.data) before += v;
    for (size_t t = 0; t < weights.size(); ++t) {
        for (int64_t i = 0; i < width; ++i) h.data[t * width + i] *= weights[t];
    }
    for (float v : h.data) after += v;
    if (after == 0.0) return;
    const float s = static_cast<float>(before / after);
    for (float& v : h.data) v *= s;
}

}  // namespace

int ChatTemplate::last_layer() const {
    return out_layers.empty() ? -1 : *std::max_element(out_layers.begin(), out_layers.end());
}

int64_t ChatTemplate::width(int64_t hidden) const {
    return hidden * static_cast<int64_t>(std::max<size_t>(1, out_layers.size()));
}

Result<std::shared_ptr<const Qwen2Tokenizer>> load_llm_tokenizer(const FamilyContext& ctx) {
    auto path = find_llm_tokenizer({ctx.options.llm, ctx.main_file}, ctx.options.llm_tokenizer);
    if (!path.ok()) return path.status();
    auto tok = Qwen2Tokenizer::from_path(*path);
    if (!tok.ok()) return tok.status().with_context("LLM tokenizer");
    GGDIFF_LOG_DEBUG("LLM tokenizer: %s (%zu tokens, %zu added)", path->c_str(), tok->vocab_size(),
                     tok->added_count());
    return std::make_shared<const Qwen2Tokenizer>(std::move(*tok));
}

Result<std::unique_ptr<LlmTextEncoder>> LlmTextEncoder::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::QwenLlmConfig& cfg,
    std::shared_ptr<const LlmTokenizer> tokenizer, const char* label, const ChatTemplate& tmpl) {
    if (tmpl.last_layer() >= cfg.layers) {
        return Status::Error(string_format(
            "%s: the text encoder has %lld layers; this model's conditioning reads the output of "
            "layer %d",
            label, (long long)cfg.layers, tmpl.last_layer() + 1));
    }
    auto enc = std::unique_ptr<LlmTextEncoder>(new LlmTextEncoder());
    enc->index_ = &ctx.index;
    enc->cfg_ = cfg;
    enc->tokenizer_ = std::move(tokenizer);
    auto runner = make_module(ctx, where, label, [&cfg, &tmpl](GraphBuilder& gb) {
        const int64_t t = 8;
        ggml_tensor* x = gb.input(HostTensor({cfg.hidden, t, 1}));
        ggml_tensor* pos = gb.input_i32(position_ids(t), {t});
        return std::vector<ggml_tensor*>{models::build_qwen_llm(
            gb.nn(), cfg, x, pos, tmpl.out_layers, tmpl.pad_tokens > 0 ? 1 : 0)};
    });
    if (!runner.ok()) return runner.status();
    enc->runner_ = std::move(*runner);
    return enc;
}

Result<HostTensor> LlmTextEncoder::encode(const std::string& prompt, const ChatTemplate& tmpl,
                                          const std::vector<EmbeddingSplice>& splices) {
    // The template parts and each emphasis run are tokenized on their own.
    std::vector<int> ids = tokenizer_->encode(tmpl.prefix);
    std::vector<float> weights(ids.size(), 1.0f);
    auto runs = tmpl.plain_prompt
                    ? std::vector<std::pair<std::string, float>>{{tmpl.prompt_lead + prompt, 1.0f}}
                    : parse_prompt_attention(tmpl.prompt_lead + prompt);
    if (tmpl.spell_quotes) runs = spell_quoted_spans(runs);
    for (const auto& [text, weight] : runs) {
        if (is_break_marker({text, weight})) continue;
        const std::vector<int> part = tokenizer_->encode(text);
        ids.insert(ids.end(), part.begin(), part.end());
        weights.insert(weights.end(), part.size(), weight);
    }
    const std::vector<int> suffix = tokenizer_->encode(tmpl.suffix);
    ids.insert(ids.end(), suffix.begin(), suffix.end());
    weights.insert(weights.end(), suffix.size(), 1.0f);
    int64_t padding = 0;
    if (static_cast<int64_t>(ids.size()) < tmpl.pad_tokens) {
        const int pad = tokenizer_->token_to_id("<|endoftext|>");
        if (pad < 0) {
            return Status::Error(
                "the LLM tokenizer has no <|endoftext|> token to pad the prompt with");
        }
        padding = tmpl.pad_tokens - static_cast<int64_t>(ids.size());
        ids.resize(static_cast<size_t>(tmpl.pad_tokens), pad);
        weights.resize(ids.size(), 1.0f);
    }
    const int64_t n = static_cast<int64_t>(ids.size());
    if (n <= tmpl.drop_tokens) {
        return Status::Error("the chat template gave " + std::to_string(n) +
                             " tokens, fewer than the " + std::to_string(tmpl.drop_tokens) +
                             " it should drop: the tokenizer does not match the text encoder");
    }
    auto embeds = models::qwen_llm_embed(*index_, cfg_, ids);
    if (!embeds.ok()) return embeds.status();
    for (const EmbeddingSplice& s : splices) {
        const HostTensor& rows = *s.rows;
        const int64_t count = rows.numel() / std::max<int64_t>(1, rows.dim(0));
        if (rows.dim(0) != cfg_.hidden) {
            return Status::Error(string_format(
                "image embeddings of width %lld for a text encoder %lld wide (the vision tower "
                "does not belong to this LLM)",
                (long long)rows.dim(0), (long long)cfg_.hidden));
        }
        if (s.position < 0 || s.position + count > n) {
            return Status::Error(string_format(
                "image embeddings for tokens %lld..%lld of a %lld-token prompt: the tokenizer "
                "does not match the text encoder",
                (long long)s.position, (long long)(s.position + count - 1), (long long)n));
        }
        std::copy(rows.data.begin(), rows.data.begin() + count * cfg_.hidden,
                  embeds->data.begin() + s.position * cfg_.hidden);
    }
    const std::vector<int32_t> pos = position_ids(n);
    auto r = runner_->run([&](GraphBuilder& gb) {
        ggml_tensor* x = gb.input(*embeds);
        ggml_tensor* p = gb.input_i32(pos, {n});
        return std::vector<ggml_tensor*>{
            models::build_qwen_llm(gb.nn(), cfg_, x, p, tmpl.out_layers, padding)};
    });
    if (!r.ok()) return r.status();
    HostTensor& h = (*r)[0];
    const int64_t width = tmpl.width(cfg_.hidden);
    apply_weights(h, width, weights);
    const int64_t keep = n - tmpl.drop_tokens;
    HostTensor out({width, std::max<int64_t>(keep, tmpl.pad_states), 1});
    std::copy(h.data.begin() + tmpl.drop_tokens * width, h.data.end(), out.data.begin());
    return out;
}

Result<Conditioning> LlmConditioner::encode(const TextRequest& request) {
    auto h = encoder_->encode(request.prompt, template_);
    if (!h.ok()) return h.status();
    Conditioning c;
    c.context = std::move(*h);
    return c;
}

}  // namespace ggdiff
