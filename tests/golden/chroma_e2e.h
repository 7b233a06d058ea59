// The chroma_tiny golden suite (../shared/golden/chroma_tiny: Chroma, FLUX.1's layout without
// modulation inputs, T5 only) for end-to-end tests outside tests/golden: its three fixture files
// (the Chroma DiT made by the ctest fixture test fixture_chroma_tiny_dit; T5 and the VAE are
// flux_tiny's), the arguments that load them, its reference images and the arguments and
// outputs of its cases.
#pragma once

#include "e2e_support.h"
#include "flux_e2e.h"

namespace ggdiff::e2e::chroma {

inline std::string suite_dir() {
    return shared_dir() + "/golden/chroma_tiny";
}
inline std::string golden(const std::string& file) {
    return suite_dir() + "/" + file;
}
// T5, the VAE and the T5 tokenizer are flux_tiny's; Chroma takes no CLIP.
using flux::fixture;
using flux::t5;
using flux::t5_tokenizer;
using flux::vae;
inline std::string dit() {
    return fixture("chroma_tiny_dit");
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

// The three component files as the golden set was recorded and the T5 tokenizer.
inline std::vector<std::string> model_args() {
    return {"--diffusion-model", dit(),         "--t5xxl", t5(), "--vae", vae(),
            "--t5xxl-tokenizer", t5_tokenizer()};
}

// model_args() with the value of `flag` replaced by `file` (or dropped with its flag when
// `file` is empty).
inline std::vector<std::string> model_args_with(const std::string& flag, const std::string& file) {
    return with_flag_value(model_args(), flag, file);
}

// Records a failure (and returns false) unless the binary, the fixture files and the suite's
// reference images exist.
inline bool prerequisites_ok() {
    bool ok = true;
    for (const std::string& f : {binary_path(), dit(), t5(), vae(), golden("chroma_euler.png"),
                                 golden("chroma_cfg.png")}) {
        if (!fs::is_regular_file(f)) {
            ADD_FAILURE() << "missing " << f
                          << " (run the tests through ctest: its fixture_chroma_tiny_dit and "
                             "fixture_flux_* tests make the fixture files)";
            ok = false;
        }
    }
    return ok;
}

}  // namespace ggdiff::e2e::chroma
