#include "sampling/std_default_rng.h"

#include <cmath>

namespace ggdiff::sampling {

float StdDefaultRng::canonical() {
    // generate_canonical<float, 24>: one draw suffices (the engine yields ~31 bits). The
    // range 2^31 - 2 rounds to 2^31 as a float divisor, exactly as libstdc++ computes it.
    const float range = static_cast<float>(static_cast<long double>(MinStdRand0::kModulus - 1));
    const float sum = static_cast<float>(engine_.next() - 1u);
    float r = sum / range;
    if (r >= 1.0f) r = std::nextafter(1.0f, 0.0f);
    return r;
}

std::vector<float> StdDefaultRng::randn(size_t n) {
    std::vector<float> out;
    out.reserve(n);
    bool has_spare = false;
    float spare = 0.0f;
    while (out.size() < n) {
        if (has_spare) {
            has_spare = false;
            out.push_back(spare);
            continue;
        }
        float x, y, r2;
        do {
            // 2u - 1 is formed in double and rounded once, as libstdc++'s mixed
            // float/double expression does.
            x = static_cast<float>(2.0f * canonical() - 1.0);
            y = static_cast<float>(2.0f * canonical() - 1.0);
            r2 = x * x + y * y;
        } while (r2 > 1.0f || r2 == 0.0f);
        const float mult = std::sqrt(-2 * std::log(r2) / r2);
        spare = x * mult;
        has_spare = true;
        out.push_back(y * mult);
    }
    return out;
}

}  // namespace ggdiff::sampling
