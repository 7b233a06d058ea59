// What the family file suites (tests/cli/*_e2e_test.cpp) do with a model's parts besides
// generating: convert one part to a quantized GGUF, and list the images a batch wrote.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "../golden/e2e_support.h"

namespace ggdiff::e2e {

// `-M convert` of the one part `flag` FILE (--diffusion-model, --llm, --t5xxl, ...) to `type`,
// written to `out`; logs go to `dir`.
inline RunResult convert_part(const std::string& flag, const std::string& file,
                              const std::string& type, const std::string& out,
                              const std::string& dir) {
    return run_ggdiff({"-M", "convert", flag, file, "--type", type, "-o", out}, dir, 300);
}

// The PNG files directly in `dir`, sorted by name (a batch's images in order).
inline std::vector<std::string> pngs_in(const std::string& dir) {
    std::vector<std::string> pngs;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() == ".png") pngs.push_back(e.path().string());
    }
    std::sort(pngs.begin(), pngs.end());
    return pngs;
}

}  // namespace ggdiff::e2e
