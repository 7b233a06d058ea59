// The process's resident memory as Linux reports it (/proc/self/status), and the reset of
// its high-water mark, so a phase's own peak can be measured (ggdiff-bench, -v).
#pragma once

#include <cstdint>

namespace ggdiff {

// The largest resident set since the start or the last reset (VmHWM); 0 where /proc is not
// available.
uint64_t peak_resident_bytes();
// Sets the high-water mark to the current resident set (/proc/self/clear_refs "5");
// false where the kernel does not allow it (the peak then counts from the start).
bool reset_peak_resident();

}  // namespace ggdiff
