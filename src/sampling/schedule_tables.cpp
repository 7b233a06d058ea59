#include "sampling/schedule_tables.h"

#include <algorithm>
#include <cmath>

namespace ggdiff::sampling {

const std::vector<float>& ays_table(AysModel model) {
    // https://research.nvidia.com/labs/toronto-ai/AlignYourSteps/howto.html
    static const std::vector<float> sd1 = {
        14.6146412293f, 6.4745760956f, 3.8636745985f, 2.6946151520f, 1.8841921177f, 1.3943805092f,
        0.9642583904f,  0.6523686016f, 0.3977456272f, 0.1515232662f, 0.0291671582f};
    static const std::vector<float> sdxl = {
        14.6146412293f, 6.3184485287f, 3.7681790315f, 2.1811480769f, 1.3405244945f, 0.8620721141f,
        0.5550693289f,  0.3798540708f, 0.2332364134f, 0.1114188177f, 0.0291671582f};
    static const std::vector<float> svd = {700.00f, 54.5f,  15.886f, 7.977f, 4.248f, 1.789f,
                                           0.981f,  0.403f, 0.173f,  0.034f, 0.002f};
    switch (model) {
        case AysModel::Sdxl:
            return sdxl;
        case AysModel::Svd:
            return svd;
        case AysModel::Sd1:
            break;
    }
    return sd1;
}

const std::vector<std::vector<float>>& gits_table() {
    static const std::vector<std::vector<float>> table = {
        {14.61464119f, 0.803307f, 0.02916753f},
        {14.61464119f, 1.56271636f, 0.52423614f, 0.02916753f},
        {14.61464119f, 2.36326075f, 0.92192322f, 0.36617002f, 0.02916753f},
        {14.61464119f, 2.84484982f, 1.24153244f, 0.59516323f, 0.25053367f, 0.02916753f},
        {14.61464119f, 5.85520077f, 2.05039096f, 0.95350921f, 0.45573691f, 0.17026083f,
         0.02916753f},
        {14.61464119f, 5.85520077f, 2.45070267f, 1.24153244f, 0.64427125f, 0.29807833f, 0.09824532f,
         0.02916753f},
        {14.61464119f, 5.85520077f, 2.45070267f, 1.36964464f, 0.803307f, 0.45573691f, 0.25053367f,
         0.09824532f, 0.02916753f},
        {14.61464119f, 5.85520077f, 2.84484982f, 1.61558151f, 0.95350921f, 0.59516323f, 0.36617002f,
         0.19894916f, 0.09824532f, 0.02916753f},
        {14.61464119f, 5.85520077f, 2.84484982f, 1.67050016f, 1.08895338f, 0.74807048f, 0.50118381f,
         0.32104823f, 0.19894916f, 0.09824532f, 0.02916753f},
        {14.61464119f, 5.85520077f, 2.95596409f, 1.84880662f, 1.24153244f, 0.83188516f, 0.59516323f,
         0.41087446f, 0.27464288f, 0.17026083f, 0.09824532f, 0.02916753f},
        {14.61464119f, 5.85520077f, 3.07277966f, 1.98035145f, 1.36964464f, 0.95350921f, 0.69515091f,
         0.50118381f, 0.36617002f, 0.25053367f, 0.17026083f, 0.09824532f, 0.02916753f},
        {14.61464119f, 6.77309084f, 3.46139455f, 2.36326075f, 1.56271636f, 1.08895338f, 0.803307f,
         0.59516323f, 0.45573691f, 0.34370604f, 0.25053367f, 0.17026083f, 0.09824532f, 0.02916753f},
        {14.61464119f, 6.77309084f, 3.46139455f, 2.45070267f, 1.61558151f, 1.162866f, 0.86115354f,
         0.64427125f, 0.50118381f, 0.38853383f, 0.29807833f, 0.22545385f, 0.17026083f, 0.09824532f,
         0.02916753f},
        {14.61464119f, 7.49001646f, 4.65472794f, 3.07277966f, 2.12350607f, 1.51179266f, 1.08895338f,
         0.83188516f, 0.64427125f, 0.50118381f, 0.38853383f, 0.29807833f, 0.22545385f, 0.17026083f,
         0.09824532f, 0.02916753f},
        {14.61464119f, 7.49001646f, 4.65472794f, 3.07277966f, 2.12350607f, 1.51179266f, 1.08895338f,
         0.83188516f, 0.64427125f, 0.50118381f, 0.41087446f, 0.32104823f, 0.25053367f, 0.19894916f,
         0.13792117f, 0.09824532f, 0.02916753f},
        {14.61464119f, 7.49001646f, 4.65472794f, 3.07277966f, 2.12350607f, 1.51179266f, 1.08895338f,
         0.83188516f, 0.64427125f, 0.50118381f, 0.41087446f, 0.34370604f, 0.27464288f, 0.22545385f,
         0.17026083f, 0.13792117f, 0.09824532f, 0.02916753f},
        {14.61464119f, 7.49001646f, 4.65472794f, 3.07277966f, 2.19988537f, 1.61558151f, 1.20157266f,
         0.92192322f, 0.72133851f, 0.57119018f, 0.45573691f, 0.36617002f, 0.29807833f, 0.25053367f,
         0.19894916f, 0.17026083f, 0.13792117f, 0.09824532f, 0.02916753f},
        {14.61464119f, 7.49001646f, 4.65472794f, 3.07277966f, 2.19988537f, 1.61558151f, 1.24153244f,
         0.95350921f,  0.74807048f, 0.59516323f, 0.4783645f,  0.38853383f, 0.32104823f, 0.27464288f,
         0.22545385f,  0.19894916f, 0.17026083f, 0.13792117f, 0.09824532f, 0.02916753f},
        {14.61464119f, 7.49001646f, 4.65472794f, 3.07277966f, 2.19988537f, 1.61558151f,
         1.24153244f,  0.95350921f, 0.74807048f, 0.59516323f, 0.50118381f, 0.41087446f,
         0.34370604f,  0.29807833f, 0.25053367f, 0.22545385f, 0.19894916f, 0.17026083f,
         0.13792117f,  0.09824532f, 0.02916753f},
    };
    return table;
}

namespace {

// n points from start to end by repeated addition of a float increment (not start + i*inc):
// the accumulated rounding is part of the schedules this reproduces.
std::vector<float> accumulated_linspace(float start, float end, size_t n) {
    std::vector<float> out(n);
    if (n == 0) return out;
    const float inc = (end - start) / static_cast<float>(n - 1);
    out[0] = start;
    for (size_t i = 1; i < n; ++i) out[i] = out[i - 1] + inc;
    return out;
}

}  // namespace

std::vector<float> log_linear_interpolation(const std::vector<float>& sigmas, size_t new_len) {
    const size_t len = sigmas.size();
    if (len == 0 || new_len == 0) return {};
    if (len == 1 || new_len == 1) return std::vector<float>(new_len, sigmas.front());
    const std::vector<float> xs = accumulated_linspace(0.0f, 1.0f, len);
    std::vector<float> ys(len);
    for (size_t i = 0; i < len; ++i) ys[i] = std::log(sigmas[len - 1 - i]);  // ascending

    std::vector<float> new_xs = accumulated_linspace(0.0f, 1.0f, new_len);
    new_xs.front() = std::max(new_xs.front(), xs.front());
    new_xs.back() = std::min(new_xs.back(), xs.back());

    std::vector<float> out(new_len);
    size_t j = 0;
    for (size_t i = 0; i < new_len; ++i) {
        // Find the bracketing segment; the grids are ascending so j only moves forward.
        while (j + 2 < len && new_xs[i] > xs[j + 1]) ++j;
        const double perc =
            static_cast<double>(new_xs[i] - xs[j]) / static_cast<double>(xs[j + 1] - xs[j]);
        const double y = static_cast<double>(ys[j]) * (1.0 - perc) + ys[j + 1] * perc;
        out[new_len - 1 - i] = static_cast<float>(std::exp(y));
    }
    return out;
}

}  // namespace ggdiff::sampling
