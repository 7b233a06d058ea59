// The pulid_tiny golden set of tests/golden for end-to-end tests outside tests/golden: the tiny
// FLUX.1 files of flux_tiny plus the PuLID-FLUX weights and the two identity embeddings
// (.pulidembd GGUFs), made by the ctest fixture tests fixture_pulid_tiny*.
#pragma once

#include "flux_e2e.h"

namespace ggdiff::e2e::pulid {

inline std::string suite_dir() {
    return repo_suite_dir("pulid_tiny");
}
inline std::string golden(const std::string& file) {
    return suite_dir() + "/" + file;
}
inline std::string weights() {
    return built_fixture("pulid_tiny");
}
// The identity of model key id1 (`second`: id2).
inline std::string identity(bool second = false) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/pulid_tiny_id" + (second ? "2" : "") +
           ".gguf";
}
inline double tolerance() {
    return suite_tolerance(suite_dir());
}
inline std::vector<std::string> case_args(const std::string& id) {
    return suite_case_args(suite_dir(), id);
}

// FLUX.1's files with the PuLID weights (no identity: a request names it).
inline std::vector<std::string> model_args() {
    std::vector<std::string> a = flux::model_args();
    a.insert(a.end(), {"--pulid-weights", weights()});
    return a;
}

// Records a failure (and returns false) unless the binary and the fixture files exist.
inline bool prerequisites_ok() {
    bool ok = flux::prerequisites_ok();
    for (const std::string& f : {weights(), identity(false), identity(true)}) {
        if (!fs::is_regular_file(f)) {
            ADD_FAILURE() << "missing " << f
                          << " (run the tests through ctest: its fixture_pulid_tiny* tests make "
                             "the fixture files)";
            ok = false;
        }
    }
    return ok;
}

}  // namespace ggdiff::e2e::pulid
