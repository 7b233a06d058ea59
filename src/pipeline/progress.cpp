#include "pipeline/progress.h"

#include <unistd.h>

#include <cstdio>

namespace ggdiff {

void print_progress_bar(const std::string& phase, int step, int total, double secs) {
    if (total <= 0) return;
    constexpr int kWidth = 30;
    const int filled = step * kWidth / total;
    char bar[kWidth + 1];
    for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : '.';
    bar[kWidth] = '\0';
    const double per = step > 0 ? secs / step : 0.0;
    const bool tty = isatty(fileno(stderr));
    if (!tty && step != total) return;  // logs get one line per phase
    if (per >= 1.0 || per == 0.0) {
        std::fprintf(stderr, "\r%-9s %3d/%-3d [%s] %.2f s/it", phase.c_str(), step, total, bar,
                     per);
    } else {
        std::fprintf(stderr, "\r%-9s %3d/%-3d [%s] %.2f it/s", phase.c_str(), step, total, bar,
                     1.0 / per);
    }
    if (step >= total) std::fprintf(stderr, "  (%.2fs)\n", secs);
    std::fflush(stderr);
}

}  // namespace ggdiff
