// The Qwen Image fixture of ../shared/golden/qwen_tiny for the end-to-end suites: model
// arguments (DiT, LLM, VAE, synthetic tokenizer) and the golden folder.
#pragma once

#include <string>
#include <vector>

#include "e2e_support.h"

namespace ggdiff::e2e {

inline std::string qwen_golden_dir() {
    return shared_dir() + "/golden/qwen_tiny";
}

inline std::string qwen_fixture(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".safetensors";
}

// Qwen Image (or, with `layered`, Qwen Image Layered with its RGBA VAE).
inline std::vector<std::string> qwen_model_args(bool layered = false) {
    return {"--diffusion-model",
            qwen_fixture(layered ? "qwen_layered_tiny_dit" : "qwen_tiny_dit"),
            "--llm",
            qwen_fixture("qwen_tiny_llm"),
            "--vae",
            qwen_fixture(layered ? "qwen_layered_vae" : "qwen_vae"),
            "--llm-tokenizer",
            shared_dir() + "/data/qwen2_synthetic"};
}

// The request of the golden case qwen_euler (64x64, 4 steps).
inline std::vector<std::string> qwen_euler_args() {
    return {"-p",          "a photograph of an astronaut riding a horse",
            "-W",          "64",
            "-H",          "64",
            "--steps",     "4",
            "--cfg-scale", "2.5",
            "-s",          "42"};
}

}  // namespace ggdiff::e2e
