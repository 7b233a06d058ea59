// The Z-Image fixture of ../shared/golden/zimage_tiny for the end-to-end suites: model
// arguments (DiT, Qwen3 text model, FLUX VAE, synthetic tokenizer) and the golden folder.
#pragma once

#include <string>
#include <vector>

#include "e2e_support.h"

namespace ggdiff::e2e {

inline std::string zimage_golden_dir() {
    return shared_dir() + "/golden/zimage_tiny";
}

inline std::string zimage_fixture(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".safetensors";
}

inline std::vector<std::string> zimage_model_args() {
    return {"--diffusion-model",
            zimage_fixture("zimage_tiny_dit"),
            "--llm",
            zimage_fixture("zimage_tiny_llm"),
            "--vae",
            zimage_fixture("flux_ae"),
            "--llm-tokenizer",
            shared_dir() + "/data/qwen2_synthetic"};
}

// The request of the golden case zimage_euler (64x64, 4 steps) without sampler and cfg.
inline std::vector<std::string> zimage_euler_args() {
    return {"-p",      "a photograph of an astronaut riding a horse",
            "-W",      "64",
            "-H",      "64",
            "--steps", "4",
            "-s",      "42"};
}

}  // namespace ggdiff::e2e
