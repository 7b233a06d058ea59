// Fuzz target: PyTorch files, zip and legacy (seeds in corpus/pytorch, written by torch through
// make_pytorch_seeds.py): the PyTorch reader on its own, then the whole checkpoint path of
// checkpoint_target.h (index, read every tensor, -M info, -M convert and back).
#include "checkpoint_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    (void)ggdiff::read_pytorch_header(data, size);
    ggdiff::fuzz::fuzz_checkpoint(data, size);
    return 0;
}
