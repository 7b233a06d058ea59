// The tiny LTX-2.3 parts made at test time (tests/fixtures/ltx_recipe_*.tensors: DiT, embeddings
// connectors, Gemma 3, video VAE, audio VAE; the Gemma tokenizer of tests/golden/pid_tiny) as
// the CLI, server, LoRA and hires tests pass them, and the length of the sound track they make.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../golden/e2e_support.h"

namespace ggdiff::ltx_parts {

inline std::string part(const std::string& name) {
    return e2e::built_fixture("ltx_recipe_" + name);
}

inline std::string tokenizer() {
    return e2e::repo_suite_dir("pid_tiny") + "/gemma2_tokenizer.json";
}

// The part flags and their files: every part, or all but `drop` (a flag: "--audio-vae" for a
// video without sound).
inline std::vector<std::string> part_args(const std::string& drop = "") {
    const std::vector<std::pair<std::string, std::string>> all = {
        {"--diffusion-model", part("dit")},
        {"--embeddings-connectors", part("connectors")},
        {"--llm", part("llm")},
        {"--llm-tokenizer", tokenizer()},
        {"--vae", part("vae")},
        {"--audio-vae", part("audio_vae")}};
    std::vector<std::string> a;
    for (const auto& [flag, path] : all) {
        if (flag != drop) a.insert(a.end(), {flag, path});
    }
    return a;
}

// 16 kHz, hop 160, 4x: audio latent steps ceil(frames / fps * 25), 160 (4 steps - 3) samples.
inline int64_t expected_samples(int frames, int fps) {
    const int64_t steps = static_cast<int64_t>(
        std::ceil(static_cast<float>(frames) / static_cast<float>(fps) * 25.0f));
    return 160 * (4 * steps - 3);
}

}  // namespace ggdiff::ltx_parts
