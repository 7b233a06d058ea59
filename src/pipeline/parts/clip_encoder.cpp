#include "pipeline/parts/clip_encoder.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"
#include "tokenizers/find_tokenizer.h"
#include "tokenizers/prompt_limits.h"
#include "tokenizers/token_windows.h"

namespace ggdiff {
namespace {

// Multiplies each token's hidden state by its prompt weight, then rescales the whole
// window so that its mean is what it was (A1111's emphasis rule).
void apply_token_weights(float* h, int64_t width, int64_t tokens, const float* weights) {
    const int64_t n = width * tokens;
    double before = 0.0;
    for (int64_t i = 0; i < n; ++i) before += h[i];
    before /= static_cast<double>(n);
    double after = 0.0;
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t i = 0; i < width; ++i) {
            h[t * width + i] *= weights[t];
            after += h[t * width + i];
        }
    }
    after /= static_cast<double>(n);
    if (after == 0.0) return;
    const float s = static_cast<float>(before / after);
    for (int64_t i = 0; i < n; ++i) h[i] *= s;
}

}  // namespace

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

Result<std::unique_ptr<ClipTextEncoder>> ClipTextEncoder::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::ClipTextConfig& cfg,
    std::shared_ptr<const ClipTokenizer> tokenizer, int pad_token, const char* label) {
    auto enc = std::unique_ptr<ClipTextEncoder>(new ClipTextEncoder());
    enc->cfg_ = cfg;
    enc->tokenizer_ = std::move(tokenizer);
    enc->pad_token_ = pad_token;
    auto runner = make_module(ctx, where, label, [&cfg](GraphBuilder& gb) {
        std::vector<int32_t> ids(kClipWindowLength, 0);
        ggml_tensor* t = gb.input_i32(ids, {kClipWindowLength, 1});
        return std::vector<ggml_tensor*>{models::build_clip_text(gb.nn(), cfg, t, 1)};
    });
    if (!runner.ok()) return runner.status();
    enc->runner_ = std::move(*runner);
    return enc;
}

Result<HostTensor> ClipTextEncoder::encode(const std::string& prompt, int clip_skip) {
    const TokenWindows tw = tokenize_weighted(*tokenizer_, prompt, pad_token_);
    const int64_t width = cfg_.width;
    const int64_t win = kClipWindowLength;
    HostTensor out({width, win * tw.n_windows, 1});
    for (int w = 0; w < tw.n_windows; ++w) {
        std::vector<int32_t> ids(tw.tokens.begin() + w * win, tw.tokens.begin() + (w + 1) * win);
        auto r = runner_->run([&](GraphBuilder& gb) {
            ggml_tensor* t = gb.input_i32(ids, {win, 1});
            return std::vector<ggml_tensor*>{models::build_clip_text(gb.nn(), cfg_, t, clip_skip)};
        });
        if (!r.ok()) return r.status();
        HostTensor& h = (*r)[0];
        apply_token_weights(h.ptr(), width, win, tw.weights.data() + w * win);
        std::copy(h.data.begin(), h.data.end(), out.data.begin() + w * win * width);
    }
    return out;
}

Status ClipTextEncoder::check(const std::string& prompt, const std::string& what) const {
    return check_clip_prompt(*tokenizer_, prompt, what);
}

Status ClipConditioner::check(const TextRequest& request) const {
    return encoder_->check(request.prompt, request.negative ? "the negative prompt" : "the prompt");
}

Result<Conditioning> ClipConditioner::encode(const TextRequest& request) {
    const int skip = request.clip_skip > 0 ? request.clip_skip : default_clip_skip_;
    auto h = encoder_->encode(request.prompt, skip);
    if (!h.ok()) return h.status();
    Conditioning c;
    c.context = std::move(*h);
    return c;
}

}  // namespace ggdiff
