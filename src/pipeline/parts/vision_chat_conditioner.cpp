#include "families/qwen_image/edit_text.h"

#include <string>

#include "core/log.h"

namespace ggdiff {

namespace {

constexpr int64_t kEditDropTokens = 64;   // the edit system prompt's tokens
constexpr int64_t kFirstImageToken = 70;  // + "Picture 1: <|vision_start|>"
constexpr int64_t kTokensBetween = 7;     // "<|vision_end|>" + "Picture i: <|vision_start|>"

}  // namespace

ChatTemplate qwen_image_edit_template(const std::vector<int64_t>& image_tokens) {
    ChatTemplate t;
    t.prefix =
        "<|im_start|>system\nDescribe the key features of the input image (color, shape, size, "
        "texture, objects, background), then explain how the user's text instruction should "
        "alter or modify the image. Generate a new image that meets the user's requirements "
        "while maintaining consistency with the original input where appropriate.<|im_end|>\n"
        "<|im_start|>user\n";
    for (size_t i = 0; i < image_tokens.size(); ++i) {
        t.prefix += "Picture " + std::to_string(i + 1) + ": <|vision_start|>";
        for (int64_t k = 0; k < image_tokens[i]; ++k) t.prefix += "<|image_pad|>";
        t.prefix += "<|vision_end|>";
    }
    t.suffix = "<|im_end|>\n<|im_start|>assistant\n";
    t.drop_tokens = static_cast<int>(kEditDropTokens);
    return t;
}

std::vector<int64_t> qwen_image_edit_positions(const std::vector<int64_t>& image_tokens) {
    std::vector<int64_t> at;
    int64_t next = kFirstImageToken;
    for (int64_t n : image_tokens) {
        at.push_back(next);
        next += n + kTokensBetween;
    }
    return at;
}

Result<Conditioning> QwenEditConditioner::encode(const TextRequest& request) {
    const bool refs = request.ref_images && !request.ref_images->empty();
    if (refs && !vision_ && !warned_) {
        GGDIFF_LOG_WARN(
            "the LLM file has no vision tower (visual.* weights; or pass --llm_vision FILE): the "
            "reference images reach the DiT only, the text encoder does not see them");
        warned_ = true;
    }
    Result<HostTensor> h = Status::Error("");
    if (!refs || !vision_) {
        h = llm_->encode(request.prompt, t2i_);
    } else {
        if (encoded_for_ != request.ref_images) {
            rows_.clear();
            for (size_t i = 0; i < request.ref_images->size(); ++i) {
                auto r = vision_->encode((*request.ref_images)[i]);
                if (!r.ok()) {
                    return r.status().with_context("vision tower, reference image " +
                                                   std::to_string(i + 1));
                }
                GGDIFF_LOG_DEBUG("reference image %zu: %lld vision tokens", i + 1,
                                 (long long)r->dim(1));
                rows_.push_back(std::move(*r));
            }
            encoded_for_ = request.ref_images;
        }
        std::vector<int64_t> counts;
        for (const HostTensor& r : rows_) counts.push_back(r.dim(1));
        const std::vector<int64_t> at = qwen_image_edit_positions(counts);
        std::vector<EmbeddingSplice> splices;
        for (size_t i = 0; i < rows_.size(); ++i) splices.push_back({at[i], &rows_[i]});
        h = llm_->encode(request.prompt, qwen_image_edit_template(counts), splices);
    }
    if (!h.ok()) return h.status();
    Conditioning c;
    c.context = std::move(*h);
    return c;
}

void QwenEditConditioner::end_phase() {
    encoded_for_ = nullptr;
    rows_.clear();
    llm_->end_phase();
    if (vision_) vision_->end_phase();
}

}  // namespace ggdiff
