#include "pipeline/parts/prediction.h"

namespace ggdiff {

Result<sampling::Prediction> family_prediction(const FamilyContext& ctx,
                                               const std::string& family) {
    std::string p = ctx.options.prediction;
    if (p.empty()) {
        for (const auto& [k, v] : ctx.index.metadata()) {
            if ((k.find("prediction_type") != std::string::npos && v.rfind("v", 0) == 0) ||
                k == "v_pred") {
                p = "v";
            }
        }
        if (ctx.index.has("v_pred")) p = "v";
    }
    if (p == "v") return sampling::Prediction::V;
    if (p.empty() || p == "eps") return sampling::Prediction::Eps;
    return Status::Error("--prediction " + p + " does not apply to " + family +
                         " models (use eps or v)");
}

}  // namespace ggdiff
