#include "pipeline/parts/token_weights.h"

namespace ggdiff {

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

}  // namespace ggdiff
