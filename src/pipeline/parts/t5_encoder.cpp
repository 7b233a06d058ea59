#include "pipeline/parts/t5_encoder.h"

#include <algorithm>
#include <cmath>

#include "pipeline/parts/module_setup.h"
#include "pipeline/parts/token_weights.h"
#include "tokenizers/find_tokenizer.h"
#include "tokenizers/prompt_attention.h"

namespace ggdiff {

Result<std::shared_ptr<const UnigramTokenizer>> load_t5_tokenizer(const FamilyContext& ctx) {
    std::vector<std::string> near = {ctx.options.t5xxl, ctx.options.model,
                                     ctx.options.diffusion_model};
    auto path = find_t5_tokenizer(near, ctx.options.t5xxl_tokenizer);
    if (!path.ok()) return path.status();
    auto t = UnigramTokenizer::from_file(*path);
    if (!t.ok()) return t.status().with_context("T5 tokenizer");
    return std::make_shared<const UnigramTokenizer>(std::move(*t));
}

Result<std::unique_ptr<T5TextEncoder>> T5TextEncoder::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::T5Config& cfg,
    std::shared_ptr<const UnigramTokenizer> tokenizer, int chunk_tokens) {
    if (static_cast<int64_t>(tokenizer->vocab_size()) > cfg.vocab) {
        return Status::Error("the T5 tokenizer has " + std::to_string(tokenizer->vocab_size()) +
                             " tokens but the T5 weights embed only " + std::to_string(cfg.vocab) +
                             ": tokenizer and encoder do not belong together");
    }
    auto enc = std::unique_ptr<T5TextEncoder>(new T5TextEncoder());
    enc->cfg_ = cfg;
    enc->tokenizer_ = std::move(tokenizer);
    enc->chunk_ = std::max(2, chunk_tokens);
    enc->buckets_ = models::t5_relative_buckets(enc->chunk_, cfg.buckets, cfg.max_distance);
    T5TextEncoder* e = enc.get();
    auto runner = make_module(ctx, where, "T5", [e](GraphBuilder& gb) {
        const int64_t len = e->chunk_;
        std::vector<int32_t> ids(static_cast<size_t>(len), 0);
        ggml_tensor* t = gb.input_i32(ids, {len, 1});
        ggml_tensor* b = gb.input_i32(e->buckets_, {len * len});
        return std::vector<ggml_tensor*>{models::build_t5(gb.nn(), e->cfg_, t, b)};
    });
    if (!runner.ok()) return runner.status();
    enc->runner_ = std::move(*runner);
    return enc;
}

Result<HostTensor> T5TextEncoder::encode(const std::string& prompt) {
    auto r = encode_masked(prompt, false);
    if (!r.ok()) return r.status();
    return std::move(r->hidden);
}

Result<T5TextEncoder::Masked> T5TextEncoder::encode_masked(const std::string& prompt,
                                                           bool mask_padding) {
    std::vector<int> tokens;
    std::vector<float> weights;
    for (const auto& item : parse_prompt_attention(prompt)) {
        if (is_break_marker(item)) continue;  // BREAK only means something to CLIP windows
        const std::vector<int> ids = tokenizer_->encode(item.first);
        tokens.insert(tokens.end(), ids.begin(), ids.end());
        weights.insert(weights.end(), ids.size(), item.second);
    }
    const T5Chunks chunks =
        make_t5_chunks(tokens, weights, tokenizer_->eos_id(), tokenizer_->pad_id(), chunk_);
    const int64_t width = cfg_.width;
    HostTensor out({width, static_cast<int64_t>(chunk_) * chunks.n_chunks, 1});
    for (int c = 0; c < chunks.n_chunks; ++c) {
        const size_t at = static_cast<size_t>(c) * static_cast<size_t>(chunk_);
        std::vector<int32_t> ids(chunks.tokens.begin() + at, chunks.tokens.begin() + at + chunk_);
        std::vector<uint8_t> real(chunks.real.begin() + at, chunks.real.begin() + at + chunk_);
        auto r = encode_ids(ids, mask_padding ? &real : nullptr);
        if (!r.ok()) return r.status();
        HostTensor& h = *r;
        apply_token_weights(h.ptr(), width, chunk_, chunks.weights.data() + at);
        std::copy(h.data.begin(), h.data.end(), out.data.begin() + at * width);
    }
    return Masked{std::move(out), std::move(chunks.real)};
}

Result<HostTensor> T5TextEncoder::encode_ids(const std::vector<int32_t>& ids,
                                             const std::vector<uint8_t>* real) {
    if (static_cast<int>(ids.size()) != chunk_ || (real && real->size() != ids.size())) {
        return Status::Error("T5: " + std::to_string(ids.size()) + " tokens, the encoder runs " +
                             std::to_string(chunk_));
    }
    HostTensor mask;
    if (real) {
        mask = HostTensor({chunk_, 1});
        for (int i = 0; i < chunk_; ++i) {
            mask.data[static_cast<size_t>(i)] = (*real)[static_cast<size_t>(i)] ? 0.0f : -INFINITY;
        }
    }
    auto r = runner_->run([&](GraphBuilder& gb) {
        ggml_tensor* t = gb.input_i32(ids, {chunk_, 1});
        ggml_tensor* b = gb.input_i32(buckets_, {chunk_ * chunk_});
        ggml_tensor* m = real ? gb.input(mask) : nullptr;
        return std::vector<ggml_tensor*>{models::build_t5(gb.nn(), cfg_, t, b, m)};
    });
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
}

}  // namespace ggdiff
