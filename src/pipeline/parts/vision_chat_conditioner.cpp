#include "pipeline/parts/vision_chat_conditioner.h"

#include <string>

#include "core/log.h"

namespace ggdiff {

std::vector<int64_t> VisionChat::positions(const std::vector<int64_t>& image_tokens) const {
    std::vector<int64_t> at;
    int64_t next = first_image_token;
    for (int64_t n : image_tokens) {
        at.push_back(next);
        next += n + tokens_between;
    }
    return at;
}

Result<Conditioning> VisionChatConditioner::encode(const TextRequest& request) {
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
        const std::vector<int64_t> at = edit_.positions(counts);
        std::vector<EmbeddingSplice> splices;
        for (size_t i = 0; i < rows_.size(); ++i) splices.push_back({at[i], &rows_[i]});
        h = llm_->encode(request.prompt, edit_.make_template(counts), splices);
    }
    if (!h.ok()) return h.status();
    Conditioning c;
    c.context = std::move(*h);
    return c;
}

void VisionChatConditioner::end_phase() {
    encoded_for_ = nullptr;
    rows_.clear();
    llm_->end_phase();
    if (vision_) vision_->end_phase();
}

}  // namespace ggdiff
