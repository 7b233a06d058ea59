// A progress bar on stderr for one phase: "sampling  3/20 [#####.....] 1.23 s/it".
#pragma once

#include <string>

namespace ggdiff {

// Prints (or redraws) the bar; a newline follows the last step.
void print_progress_bar(const std::string& phase, int step, int total, double secs);

}  // namespace ggdiff
