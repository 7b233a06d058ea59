// The sd3_tiny golden suite (../shared/golden/sd3_tiny) for end-to-end tests outside
// tests/golden: its five fixture files (made by the ctest fixture tests fixture_sd3_* and
// fixture_flux_*), the arguments that load them, and the arguments of its cases.
#pragma once

#include "e2e_support.h"

namespace ggdiff::e2e::sd3 {

inline std::string suite_dir() {
    return shared_dir() + "/golden/sd3_tiny";
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
inline std::string mmdit() {
    return fixture("sd3_tiny_mmdit");
}
inline std::string clip_l() {
    return fixture("flux_clip_l");
}
inline std::string clip_g() {
    return fixture("sd3_clip_g");
}
inline std::string t5() {
    return fixture("sd3_t5_4096");
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

// The five part files (as the golden set was recorded: --diffusion-model, --clip_l, --clip_g,
// --t5xxl, --vae) and both tokenizers.
inline std::vector<std::string> model_args() {
    return {"--diffusion-model", mmdit(),       "--clip_l", clip_l(), "--clip_g",    clip_g(),
            "--t5xxl",           t5(),          "--vae",    vae(),    "--tokenizer", merges_path(),
            "--t5xxl-tokenizer", t5_tokenizer()};
}

// model_args() with the file at `flag` replaced by `file` (or dropped with its value when
// `file` is empty).
inline std::vector<std::string> model_args_with(const std::string& flag, const std::string& file) {
    return with_flag_value(model_args(), flag, file);
}

// Records a failure (and returns false) unless the binary and the fixture files exist.
inline bool prerequisites_ok() {
    bool ok = true;
    for (const std::string& f : {binary_path(), mmdit(), clip_l(), clip_g(), t5(), vae()}) {
        if (!fs::is_regular_file(f)) {
            ADD_FAILURE() << "missing " << f
                          << " (run the tests through ctest: its fixture_sd3_* and fixture_flux_* "
                             "tests make the fixture files)";
            ok = false;
        }
    }
    return ok;
}

}  // namespace ggdiff::e2e::sd3
