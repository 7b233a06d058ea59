// A1111's prompt emphasis on encoder outputs, shared by the text encoder parts.
#pragma once

#include <cstdint>

namespace ggdiff {

// Multiplies each token's hidden state (h: tokens x width floats, token-major) by its
// weight, then rescales the whole window so that its mean is what it was.
void apply_token_weights(float* h, int64_t width, int64_t tokens, const float* weights);

}  // namespace ggdiff
