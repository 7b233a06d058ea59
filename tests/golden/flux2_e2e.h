// The flux2_tiny golden suite (../shared/golden/flux2_tiny: FLUX.2 klein) for end-to-end tests
// outside tests/golden: its three fixture files (made by the ctest fixture tests
// fixture_flux2_tiny_dit, fixture_flux2_tiny_llm and fixture_flux2_vae), the arguments that
// load them, and the arguments of its cases.
#pragma once

#include "e2e_support.h"

namespace ggdiff::e2e::flux2 {

inline std::string suite_dir() {
    return shared_dir() + "/golden/flux2_tiny";
}
inline std::string golden(const std::string& file) {
    return suite_dir() + "/" + file;
}
// The reference image of the case flux2_edit.
inline std::string ref_image() {
    return golden("flux2_ref.png");
}
inline std::string tokenizer_dir() {
    return shared_dir() + "/data/qwen2_synthetic";
}
inline std::string fixture(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".safetensors";
}
inline std::string dit() {
    return fixture("flux2_tiny_dit");
}
inline std::string llm() {
    return fixture("flux2_tiny_llm");
}
inline std::string vae() {
    return fixture("flux2_vae");
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

// The output files of case `id` in the suite folder (empty when there is no such case).
inline std::vector<std::string> case_outputs(const std::string& id) {
    for (const auto& c : manifest().value("cases", nlohmann::json::array())) {
        if (c.value("id", "") != id) continue;
        std::vector<std::string> out;
        for (const auto& f : c.value("outputs", std::vector<std::string>{}))
            out.push_back(golden(f));
        return out;
    }
    return {};
}

// The three part files as the golden set was recorded (--diffusion-model, --llm, --vae) and the
// synthetic Qwen2 tokenizer.
inline std::vector<std::string> model_args() {
    return {"--diffusion-model", dit(),          "--llm", llm(), "--vae", vae(),
            "--llm-tokenizer",   tokenizer_dir()};
}

// model_args() with the value of `flag` replaced by `file` (or dropped with its flag when
// `file` is empty).
inline std::vector<std::string> model_args_with(const std::string& flag, const std::string& file) {
    return with_flag_value(model_args(), flag, file);
}

// Records a failure (and returns false) unless the binary, the fixture files and the tokenizer
// exist.
inline bool prerequisites_ok() {
    bool ok = true;
    for (const std::string& f : {binary_path(), dit(), llm(), vae(), ref_image()}) {
        if (!fs::is_regular_file(f)) {
            ADD_FAILURE() << "missing " << f
                          << " (run the tests through ctest: its fixture_flux2_* tests make the "
                             "fixture files)";
            ok = false;
        }
    }
    if (!fs::is_regular_file(tokenizer_dir() + "/vocab.json")) {
        ADD_FAILURE() << "missing the Qwen2 tokenizer in " << tokenizer_dir();
        ok = false;
    }
    return ok;
}

}  // namespace ggdiff::e2e::flux2
