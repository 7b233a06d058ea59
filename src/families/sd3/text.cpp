#include "families/sd3/text.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/token_weights.h"
#include "tokenizers/prompt_limits.h"
#include "tokenizers/token_windows.h"

namespace ggdiff {
namespace {

constexpr int64_t kWin = kClipWindowLength;

// One CLIP encoder's hidden states of every window [width, 77 * windows] (weighted, each
// window's mean restored) and, from the first window, its pooled output.
struct ClipPass {
    HostTensor hidden;
    HostTensor pooled;
    int windows = 0;
};

Result<ClipPass> run_clip(ClipTextEncoder& enc, const ClipTokenizer& tok, const std::string& prompt,
                          int pad, int skip, const char* label) {
    const TokenWindows tw = tokenize_weighted(tok, prompt, pad);
    const int64_t width = enc.config().width;
    ClipPass out;
    out.windows = tw.n_windows;
    out.hidden = HostTensor({width, kWin * tw.n_windows, 1});
    for (int w = 0; w < tw.n_windows; ++w) {
        std::vector<int32_t> ids(tw.tokens.begin() + w * kWin, tw.tokens.begin() + (w + 1) * kWin);
        int64_t eos_at = -1;
        if (w == 0) {
            auto first = std::find(ids.begin(), ids.end(), tok.eos());
            eos_at = std::min<int64_t>(first - ids.begin(), kWin - 1);
        }
        auto h =
            enc.hidden(ids, skip, /*final_norm=*/false, eos_at, w == 0 ? &out.pooled : nullptr);
        if (!h.ok()) return h.status().with_context(label);
        apply_token_weights(h->ptr(), width, kWin, tw.weights.data() + w * kWin);
        std::copy(h->data.begin(), h->data.end(), out.hidden.data.begin() + w * kWin * width);
    }
    return out;
}

}  // namespace

Sd3Conditioner::Sd3Conditioner(std::unique_ptr<ClipTextEncoder> clip_l,
                               std::unique_ptr<ClipTextEncoder> clip_g,
                               std::unique_ptr<T5TextEncoder> t5,
                               std::shared_ptr<const ClipTokenizer> tokenizer,
                               int64_t context_width, int default_clip_skip)
    : clip_l_(std::move(clip_l)),
      clip_g_(std::move(clip_g)),
      t5_(std::move(t5)),
      tokenizer_(std::move(tokenizer)),
      context_width_(context_width),
      default_clip_skip_(default_clip_skip) {}

Status Sd3Conditioner::check(const TextRequest& request) const {
    // The CLIP window limit bounds T5's chunks as well (both count about a token per word
    // piece), so a huge prompt is refused before any encoder runs.
    return check_clip_prompt(*tokenizer_, request.prompt,
                             request.negative ? "the negative prompt" : "the prompt");
}

void Sd3Conditioner::end_phase() {
    if (clip_l_) clip_l_->end_phase();
    if (clip_g_) clip_g_->end_phase();
    if (t5_) t5_->end_phase();
}

Result<Conditioning> Sd3Conditioner::encode(const TextRequest& request) {
    const int skip = request.clip_skip > 0 ? request.clip_skip : default_clip_skip_;
    const int eos = tokenizer_->eos();
    ClipPass l, g;
    if (clip_l_) {
        auto r = run_clip(*clip_l_, *tokenizer_, request.prompt, eos, skip, "CLIP-L");
        if (!r.ok()) return r.status();
        l = std::move(*r);
    }
    if (clip_g_) {
        auto r = run_clip(*clip_g_, *tokenizer_, request.prompt, 0, skip, "OpenCLIP bigG");
        if (!r.ok()) return r.status();
        g = std::move(*r);
    }
    HostTensor t5;
    int t5_chunks = 0;
    if (t5_) {
        auto r = t5_->encode(request.prompt);
        if (!r.ok()) return r.status().with_context("T5");
        t5 = std::move(*r);
        t5_chunks = static_cast<int>(t5.dim(1) / t5_->chunk_tokens());
    }
    const int64_t t5_len = t5_ ? t5_->chunk_tokens() : kWin;
    const int chunks = std::max({l.windows, g.windows, t5_chunks, 1});
    const int64_t wl = clip_l_ ? clip_l_->config().width : kClipLWidth;
    const int64_t wg = clip_g_ ? clip_g_->config().width : kClipGWidth;
    const int64_t width = context_width_;
    if (wl + wg > width) {
        return Status::Error(
            string_format("SD3: the CLIP widths %lld + %lld exceed the MMDiT's context width %lld",
                          (long long)wl, (long long)wg, (long long)width));
    }

    // Chunks an encoder has no window for (its tokens ran out earlier) stay zero.
    Conditioning c;
    const int64_t rows = kWin + t5_len;
    c.context = HostTensor({width, rows * chunks, 1});
    for (int k = 0; k < chunks; ++k) {
        float* dst = c.context.ptr() + k * rows * width;
        for (int64_t t = 0; t < kWin; ++t) {
            if (k < l.windows)
                std::copy_n(l.hidden.ptr() + (k * kWin + t) * wl, wl, dst + t * width);
            if (k < g.windows) {
                std::copy_n(g.hidden.ptr() + (k * kWin + t) * wg, wg, dst + t * width + wl);
            }
        }
        if (k < t5_chunks) {
            std::copy_n(t5.ptr() + k * t5_len * width, t5_len * width, dst + kWin * width);
        }
    }

    const int64_t pl = clip_l_ ? clip_l_->pooled_width() : kClipLWidth;
    const int64_t pg = clip_g_ ? clip_g_->pooled_width() : kClipGWidth;
    c.pooled = HostTensor({pl + pg});
    if (clip_l_) std::copy(l.pooled.data.begin(), l.pooled.data.end(), c.pooled.data.begin());
    if (clip_g_) {
        std::copy(g.pooled.data.begin(), g.pooled.data.end(), c.pooled.data.begin() + pl);
    }
    return c;
}

}  // namespace ggdiff
