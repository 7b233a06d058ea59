#include "pipeline/parts/dual_clip_conditioner.h"

#include <algorithm>
#include <cmath>

#include "core/log.h"
#include "pipeline/parts/token_weights.h"
#include "tokenizers/prompt_limits.h"
#include "tokenizers/token_windows.h"

namespace ggdiff {

void append_size_embedding(const std::vector<float>& values, int dim, std::vector<float>& out) {
    const int half = dim / 2;
    for (float v : values) {
        const size_t base = out.size();
        out.resize(base + static_cast<size_t>(dim), 0.0f);
        for (int j = 0; j < half; ++j) {
            const float freq = std::exp(-std::log(10000.0f) * static_cast<float>(j) / half);
            const float arg = v * freq;
            out[base + j] = std::cos(arg);
            out[base + half + j] = std::sin(arg);
        }
    }
}

Result<Conditioning> DualClipConditioner::encode(const TextRequest& request) {
    const int eos = tokenizer_->eos();
    // Both encoders see EOS padding, bigG with everything after the first EOS set to 0
    // (OpenCLIP's padding).
    PromptEmbeddings emb;
    if (embeddings_) {
        auto e = embeddings_->for_prompt(request.prompt);
        if (!e.ok()) return e.status();
        emb = std::move(*e);
    }
    const TokenWindows tw = tokenize_weighted(*tokenizer_, request.prompt, eos, true,
                                              emb.empty() ? nullptr : &emb.words);
    // Embedding rows lengthen the prompt past what check() counted.
    if (!emb.empty()) {
        GGDIFF_TRY(check_prompt_windows(tw.n_windows, tw.tokens.size(),
                                        request.negative ? "the negative prompt" : "the prompt"));
    }
    return encode_windows(tw, request, emb.empty() ? nullptr : &emb);
}

Result<Conditioning> DualClipConditioner::encode_windows(const TokenWindows& tw,
                                                         const TextRequest& request,
                                                         const PromptEmbeddings* embp) {
    const int skip = request.clip_skip > 0 ? request.clip_skip : default_clip_skip_;
    const int64_t wl = clip_l_->config().width, wg = clip_g_->config().width;
    const int64_t width = wl + wg, win = kClipWindowLength;
    const int eos = tokenizer_->eos();
    static const PromptEmbeddings kNone;
    const PromptEmbeddings& emb = embp ? *embp : kNone;
    const bool zero = request.negative && request.prompt.empty();

    Conditioning c;
    c.context = HostTensor({width, win * tw.n_windows, 1});
    HostTensor pooled;
    for (int w = 0; w < tw.n_windows; ++w) {
        std::vector<int32_t> ids_l(tw.tokens.begin() + w * win, tw.tokens.begin() + (w + 1) * win);
        std::vector<int32_t> ids_g = ids_l;
        auto first_eos = std::find(ids_g.begin(), ids_g.end(), eos);
        const int64_t eos_at = std::min<int64_t>(first_eos - ids_g.begin(), win - 1);
        if (first_eos != ids_g.end()) std::fill(first_eos + 1, ids_g.end(), 0);
        // Each encoder reads its own vectors of an embedding at the same positions.
        const PromptEmbeddings::Override ov_l = emb.override_for(0, wl, ids_l);
        const PromptEmbeddings::Override ov_g = emb.override_for(1, wg, ids_g);

        // A zeroed context still needs bigG's pooled output, not CLIP-L at all.
        if (zero) {
            if (w == 0) {
                auto hg = clip_g_->hidden(ids_g, skip, false, eos_at, &pooled,
                                          ov_g.any ? &ov_g : nullptr);
                if (!hg.ok()) return hg.status().with_context("OpenCLIP bigG");
            }
            continue;
        }
        auto hl = clip_l_->hidden(ids_l, skip, /*final_norm=*/false, -1, nullptr,
                                  ov_l.any ? &ov_l : nullptr);
        if (!hl.ok()) return hl.status().with_context("CLIP-L");
        auto hg = clip_g_->hidden(ids_g, skip, /*final_norm=*/false, w == 0 ? eos_at : -1,
                                  w == 0 ? &pooled : nullptr, ov_g.any ? &ov_g : nullptr);
        if (!hg.ok()) return hg.status().with_context("OpenCLIP bigG");
        // Concatenate per token: [wl | wg].
        float* dst = c.context.ptr() + w * win * width;
        for (int64_t t = 0; t < win; ++t) {
            std::copy_n(hl->ptr() + t * wl, wl, dst + t * width);
            std::copy_n(hg->ptr() + t * wg, wg, dst + t * width + wl);
        }
        apply_token_weights(dst, width, win, tw.weights.data() + w * win);
    }

    std::vector<float> y(pooled.data.begin(), pooled.data.end());
    const float h = static_cast<float>(request.height), wd = static_cast<float>(request.width);
    append_size_embedding({h, wd}, 256, y);       // original size
    append_size_embedding({0.0f, 0.0f}, 256, y);  // crop top-left
    append_size_embedding({h, wd}, 256, y);       // target size
    if (static_cast<int>(y.size()) != label_width_) {
        return Status::Error(string_format(
            "SDXL label input: pooled text (%zu) and size conditioning give %zu values, the UNet "
            "takes %d",
            pooled.data.size(), y.size(), label_width_));
    }
    c.pooled = HostTensor({static_cast<int64_t>(y.size())});
    c.pooled.data = std::move(y);
    return c;
}

}  // namespace ggdiff
