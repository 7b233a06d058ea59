// The flux_tiny golden suite for end-to-end tests outside tests/golden: its fixture files
// (made by the ctest fixture tests fixture_flux_*), the arguments that load them, and the
// arguments of its cases.
#pragma once

#include "e2e_support.h"

namespace ggdiff::e2e::flux {

inline std::string suite_dir() {
    return shared_dir() + "/golden/flux_tiny";
}
inline std::string golden(const std::string& file) {
    return suite_dir() + "/" + file;
}
inline std::string t5_tokenizer() {
    return shared_dir() + "/data/t5_synthetic/tokenizer.json";
}
inline std::string fixture(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".safetensors";
}
inline std::string dit() {
    return fixture("flux_tiny_dit");
}
inline std::string clip_l() {
    return fixture("flux_clip_l");
}
inline std::string t5() {
    return fixture("flux_tiny_t5");
}
inline std::string vae() {
    return fixture("flux_ae");
}

inline nlohmann::json manifest() {
    return read_manifest(suite_dir() + "/manifest.json");
}

inline double tolerance() {
    return suite_tolerance(suite_dir());
}

// The request arguments of case `id`, `@FILE` resolved (empty when there is no such case).
inline std::vector<std::string> case_args(const std::string& id) {
    return suite_case_args(suite_dir(), id);
}

// The four component files and both tokenizers.
inline std::vector<std::string> model_args() {
    return {"--diffusion-model",
            dit(),
            "--clip_l",
            clip_l(),
            "--t5xxl",
            t5(),
            "--vae",
            vae(),
            "--tokenizer",
            merges_path(),
            "--t5xxl-tokenizer",
            t5_tokenizer()};
}

// Records a failure (and returns false) unless the binary and the fixture files exist.
inline bool prerequisites_ok() {
    bool ok = true;
    for (const std::string& f : {binary_path(), dit(), clip_l(), t5(), vae()}) {
        if (!fs::is_regular_file(f)) {
            ADD_FAILURE() << "missing " << f
                          << " (run the tests through ctest: its fixture_flux_* tests make "
                             "the fixture files)";
            ok = false;
        }
    }
    return ok;
}

}  // namespace ggdiff::e2e::flux
