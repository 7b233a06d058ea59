// The qwen_edit_tiny golden suite (../shared/golden/qwen_edit_tiny: Qwen Image Edit, 2509
// style) for end-to-end tests outside tests/golden: its three fixture files (made by the ctest
// fixture tests fixture_qwen_edit_tiny_dit, fixture_qwen_edit_tiny_llm and fixture_qwen_edit_vae;
// the LLM file holds the Qwen2.5-VL vision tower under "visual."), the arguments that load
// them, the arguments of its cases, and the repository's own qwen_edit_2511 set (the same files
// with zero_cond_t).
#pragma once

#include "e2e_support.h"

namespace ggdiff::e2e::qwen_edit {

inline std::string suite_dir() {
    return shared_dir() + "/golden/qwen_edit_tiny";
}
inline std::string golden(const std::string& file) {
    return suite_dir() + "/" + file;
}
// This repository's golden set of Qwen Image Edit 2511 (zero_cond_t), tests/golden/.
inline std::string suite_2511_dir() {
    return std::string(GGDIFF_SOURCE_DIR) + "/tests/golden/qwen_edit_2511";
}
// The reference images of the suite's cases.
inline std::string ref_shapes() {
    return golden("ref_shapes.png");
}
inline std::string ref_stripes() {
    return golden("ref_stripes.png");
}
inline std::string tokenizer_dir() {
    return shared_dir() + "/data/qwen2_synthetic";
}
inline std::string fixture(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".safetensors";
}
inline std::string dit() {
    return fixture("qwen_edit_tiny_dit");
}
inline std::string llm() {
    return fixture("qwen_edit_tiny_llm");
}
inline std::string vae() {
    return fixture("qwen_edit_vae");
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

// The golden image of case qedit_ref1 (one reference, euler, 64x64).
inline std::string ref1_golden() {
    return golden("qedit_ref1.png");
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

// Runs tests/tools/qwen_edit_layouts.py with `args` (each quoted); true when it succeeded.
inline bool run_layouts(const std::vector<std::string>& args) {
    std::string cmd = "/usr/bin/python3 '" + std::string(GGDIFF_SOURCE_DIR) +
                      "/tests/tools/qwen_edit_layouts.py'";
    for (const std::string& a : args) cmd += " '" + a + "'";
    const int rc = std::system(cmd.c_str());
    if (rc != 0) ADD_FAILURE() << "failed: " << cmd;
    return rc == 0;
}

// Records a failure (and returns false) unless the binary, the fixture files and the tokenizer
// exist.
inline bool prerequisites_ok() {
    bool ok = true;
    for (const std::string& f : {binary_path(), dit(), llm(), vae(), ref_shapes(), ref1_golden()}) {
        if (!fs::is_regular_file(f)) {
            ADD_FAILURE() << "missing " << f
                          << " (run the tests through ctest: its fixture_qwen_edit_* tests make "
                             "the fixture files)";
            ok = false;
        }
    }
    if (!fs::is_regular_file(tokenizer_dir() + "/vocab.json")) {
        ADD_FAILURE() << "missing the Qwen2 tokenizer in " << tokenizer_dir();
        ok = false;
    }
    return ok;
}

}  // namespace ggdiff::e2e::qwen_edit
