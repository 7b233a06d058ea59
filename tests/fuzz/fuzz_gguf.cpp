// Fuzz target: GGUF files (seeds in corpus/gguf), see checkpoint_target.h.
#include "checkpoint_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    ggdiff::fuzz::fuzz_checkpoint(data, size);
    return 0;
}
