#include "pipeline/phase_text.h"

#include <utility>

namespace ggdiff {

Result<TextConditions> encode_text(Family& f, const GeneratePlan& plan, const GenerateOptions& o,
                                   const std::string& prompt) {
    TextRequest tr;
    tr.prompt = prompt;
    tr.clip_skip = o.clip_skip;
    tr.width = plan.width;
    tr.height = plan.height;
    tr.ref_images = &o.ref_images;
    TextConditions out;
    if (f.id_conditions) {
        auto id = f.id_conditions(o, tr);
        if (!id.ok()) return id.status();
        if (*id) {
            out.id_cond = std::move((*id)->cond);
            out.id_after_step = (*id)->after_step;
            tr.prompt = (*id)->prompt;
        }
    }
    auto cond = f.text->encode(tr);
    if (!cond.ok()) return cond.status();
    out.cond = std::move(*cond);
    // The high-noise expert may guide where the model does not (its own --high-noise-cfg-scale).
    if (plan.use_uncond || (plan.high_noise && plan.high_noise->use_uncond)) {
        tr.prompt = o.negative_prompt;
        tr.negative = true;
        auto u = f.text->encode(tr);
        if (!u.ok()) return u.status();
        out.uncond = std::move(*u);
    }
    if (plan.use_img_uncond) {
        tr.prompt = o.negative_prompt;
        tr.negative = true;
        tr.ref_images = nullptr;
        auto u = f.text->encode(tr);
        if (!u.ok()) return u.status();
        out.img_uncond = std::move(*u);
    }
    f.text->end_phase();
    return out;
}

}  // namespace ggdiff
