// The wan_tiny golden suite (../shared/golden/wan_tiny: a Wan 2.1 T2V DiT at the real 1.3B
// size, a 2-block umT5 and the Wan 2.1 VAE of qwen_tiny) for end-to-end tests outside
// tests/golden: its fixture files (made by the ctest fixture tests), the arguments that load
// them and its cases' arguments and frames.
#pragma once

#include "e2e_support.h"

namespace ggdiff::e2e::wan {

inline std::string suite_dir() {
    return shared_dir() + "/golden/wan_tiny";
}
inline std::string golden(const std::string& file) {
    return suite_dir() + "/" + file;
}
inline std::string fixture(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".safetensors";
}
// A fixture written as a sparse GGUF (tests/tools/make_gguf_fixture.py: most blocks zero holes).
inline std::string gguf_fixture(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".gguf";
}
inline std::string dit() {
    return fixture("wan_1_3b_dit");
}
inline std::string umt5() {
    return fixture("wan_umt5");
}
inline std::string vae() {
    return fixture("qwen_vae");
}
inline std::string tokenizer() {
    return shared_dir() + "/data/umt5_synthetic/tokenizer.json";
}

inline double tolerance() {
    return suite_tolerance(suite_dir());
}

// The request arguments of case `id` (empty when there is no such case).
inline std::vector<std::string> case_args(const std::string& id) {
    return suite_case_args(suite_dir(), id);
}

inline std::vector<std::string> model_args() {
    return {"--diffusion-model", dit(),      "--t5xxl", umt5(), "--vae", vae(),
            "--t5xxl-tokenizer", tokenizer()};
}

// Records a failure (and returns false) unless the binary and the fixture files exist.
inline bool prerequisites_ok() {
    bool ok = true;
    for (const std::string& f : {binary_path(), dit(), umt5(), vae()}) {
        if (!fs::is_regular_file(f)) {
            ADD_FAILURE() << "missing " << f
                          << " (run the tests through ctest: its fixture tests make the files)";
            ok = false;
        }
    }
    return ok;
}

}  // namespace ggdiff::e2e::wan
