#include "pipeline/parts/clip_encoder.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"
#include "pipeline/parts/token_weights.h"
#include "tokenizers/find_tokenizer.h"
#include "tokenizers/prompt_limits.h"
#include "tokenizers/token_windows.h"

namespace ggdiff {

Result<std::shared_ptr<const ClipTokenizer>> load_clip_tokenizer(const FamilyContext& ctx) {
    const auto& meta = ctx.index.metadata();
    auto embedded = meta.find("tokenizer.clip.merges");
    std::string source;
    auto t = open_clip_tokenizer(ctx.main_file, ctx.options.tokenizer,
                                 embedded != meta.end() ? &embedded->second : nullptr, &source);
    if (!t.ok()) return t.status();
    GGDIFF_LOG_DEBUG("CLIP tokenizer: %s", source.c_str());
    return std::make_shared<const ClipTokenizer>(std::move(*t));
}

Result<std::shared_ptr<TextEmbeddings>> open_clip_embeddings(const FamilyContext& ctx,
                                                             std::vector<int64_t> widths,
                                                             std::vector<std::string> encoders) {
    if (ctx.options.embd_dir.empty()) return std::shared_ptr<TextEmbeddings>();
    return TextEmbeddings::open(ctx.options.embd_dir, std::move(widths), std::move(encoders),
                                ClipTokenizer::kVocabSize);
}

Result<std::unique_ptr<ClipTextEncoder>> ClipTextEncoder::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::ClipTextConfig& cfg,
    std::shared_ptr<const ClipTokenizer> tokenizer, int pad_token, const char* label,
    ClipPooled pooled) {
    auto enc = std::unique_ptr<ClipTextEncoder>(new ClipTextEncoder());
    enc->cfg_ = cfg;
    enc->tokenizer_ = std::move(tokenizer);
    enc->pad_token_ = pad_token;
    auto runner = make_module(ctx, where, label, [&cfg, pooled](GraphBuilder& gb) {
        std::vector<int32_t> ids(kClipWindowLength, 0);
        ggml_tensor* t = gb.input_i32(ids, {kClipWindowLength, 1});
        const models::ClipOutputs o =
            models::build_clip(gb.nn(), cfg, t, 1, true, pooled == ClipPooled::No ? -1 : 1);
        if (pooled == ClipPooled::Only) return std::vector<ggml_tensor*>{o.pooled};
        std::vector<ggml_tensor*> outs{o.hidden};
        if (pooled == ClipPooled::Also) outs.push_back(o.pooled);
        return outs;
    });
    if (!runner.ok()) return runner.status();
    enc->runner_ = std::move(*runner);
    return enc;
}

Result<HostTensor> ClipTextEncoder::encode(const std::string& prompt, int clip_skip,
                                           const PromptEmbeddings* embeddings) {
    const bool custom = embeddings && !embeddings->empty();
    const TokenWindows tw = tokenize_weighted(*tokenizer_, prompt, pad_token_, true,
                                              custom ? &embeddings->words : nullptr);
    // Embedding rows lengthen the prompt past what check() counted.
    if (custom) GGDIFF_TRY(check_prompt_windows(tw.n_windows, tw.tokens.size(), "the prompt"));
    const int64_t width = cfg_.width;
    const int64_t win = kClipWindowLength;
    HostTensor out({width, win * tw.n_windows, 1});
    for (int w = 0; w < tw.n_windows; ++w) {
        std::vector<int32_t> ids(tw.tokens.begin() + w * win, tw.tokens.begin() + (w + 1) * win);
        PromptEmbeddings::Override ov;
        if (custom) ov = embeddings->override_for(0, width, ids);
        auto r = hidden(ids, clip_skip, /*final_norm=*/true, -1, nullptr, ov.any ? &ov : nullptr);
        if (!r.ok()) return r.status();
        HostTensor& h = *r;
        apply_token_weights(h.ptr(), width, win, tw.weights.data() + w * win);
        std::copy(h.data.begin(), h.data.end(), out.data.begin() + w * win * width);
    }
    return out;
}

Result<HostTensor> ClipTextEncoder::hidden(const std::vector<int32_t>& ids, int clip_skip,
                                           bool final_norm, int64_t pooled_index,
                                           HostTensor* pooled,
                                           const PromptEmbeddings::Override* custom) {
    const bool want_pooled = pooled && pooled_index >= 0;
    const int64_t n = static_cast<int64_t>(ids.size());
    HostTensor vectors, keep;
    if (custom && custom->any) {
        vectors = HostTensor({cfg_.width, n, 1});
        vectors.data = custom->vectors;
        keep = HostTensor({1, n, 1});
        keep.data = custom->keep;
    }
    auto r = runner_->run([&](GraphBuilder& gb) {
        ggml_tensor* t = gb.input_i32(ids, {n, 1});
        models::ClipTokenOverride over;
        if (!vectors.data.empty()) {
            over.vectors = gb.input(vectors);
            over.keep = gb.input(keep);
        }
        const models::ClipOutputs o =
            models::build_clip(gb.nn(), cfg_, t, clip_skip, final_norm,
                               want_pooled ? pooled_index : -1, over.vectors ? &over : nullptr);
        std::vector<ggml_tensor*> outs{o.hidden};
        if (want_pooled) outs.push_back(o.pooled);
        return outs;
    });
    if (!r.ok()) return r.status();
    if (want_pooled) *pooled = std::move((*r)[1]);
    return std::move((*r)[0]);
}

Status ClipTextEncoder::check(const std::string& prompt, const std::string& what) const {
    return check_clip_prompt(*tokenizer_, prompt, what);
}

Status ClipConditioner::check(const TextRequest& request) const {
    return encoder_->check(request.prompt, request.negative ? "the negative prompt" : "the prompt");
}

Result<HostTensor> ClipTextEncoder::encode_pooled(const std::string& prompt) {
    const TokenWindows tw = tokenize_weighted(*tokenizer_, prompt, pad_token_);
    std::vector<int32_t> ids(tw.tokens.begin(), tw.tokens.begin() + kClipWindowLength);
    // The first EOS of the window (the pooled position of a causal CLIP).
    int64_t eos = kClipWindowLength - 1;
    for (int64_t i = 1; i < kClipWindowLength; ++i) {
        if (ids[static_cast<size_t>(i)] == tokenizer_->eos()) {
            eos = i;
            break;
        }
    }
    auto r = runner_->run([&](GraphBuilder& gb) {
        ggml_tensor* t = gb.input_i32(ids, {kClipWindowLength, 1});
        return std::vector<ggml_tensor*>{models::build_clip(gb.nn(), cfg_, t, 1, true, eos).pooled};
    });
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
}

Result<Conditioning> ClipConditioner::encode(const TextRequest& request) {
    const int skip = request.clip_skip > 0 ? request.clip_skip : default_clip_skip_;
    PromptEmbeddings emb;
    if (embeddings_) {
        auto e = embeddings_->for_prompt(request.prompt);
        if (!e.ok()) return e.status();
        emb = std::move(*e);
    }
    auto h = encoder_->encode(request.prompt, skip, &emb);
    if (!h.ok()) return h.status();
    Conditioning c;
    c.context = std::move(*h);
    return c;
}

}  // namespace ggdiff
