// The end-to-end fixture the file-layout tests of the families that run FLUX.1's DiT on an
// LLM's text share (tests/cli/longcat_e2e_test.cpp, ovis_e2e_test.cpp): the family's golden
// set of tests/golden, its split files, one case of it run with other files.
#pragma once

#include <gtest/gtest.h>

#include "../golden/e2e_support.h"

namespace ggdiff::e2e {

class LlmFluxFiles : public ::testing::Test {
  protected:
    // suite: tests/golden/SUITE; dit, llm: fixture stems; id: the case generate() runs.
    LlmFluxFiles(std::string suite, std::string dit, std::string llm, std::string id)
        : suite_(std::move(suite)),
          dit_(std::move(dit)),
          llm_(std::move(llm)),
          id_(std::move(id)) {}

    void SetUp() override {
        for (const std::string& f :
             {binary_path(), dit(), built_fixture(llm_), built_fixture("flux_ae"), golden()}) {
            ASSERT_TRUE(std::filesystem::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        dir_ = fresh_dir();
    }

    std::string suite_dir() const { return repo_suite_dir(suite_); }
    std::string dit() const { return built_fixture(dit_); }
    std::string golden() const { return suite_dir() + "/" + id_ + ".png"; }
    // The split files, the DiT replaced by `dit_file` when given.
    std::vector<std::string> model_args(const std::string& dit_file = "") const {
        std::vector<std::string> args = llm_flux_args(dit_, llm_);
        return dit_file.empty() ? args : with_flag_value(args, "--diffusion-model", dit_file);
    }

    // The case with `model` into `out`.
    RunResult generate(const std::vector<std::string>& model, const std::string& out) const {
        std::vector<std::string> args = model;
        for (const std::string& a : suite_case_args(suite_dir(), id_)) args.push_back(a);
        args.insert(args.end(), {"-o", out});
        return run_ggdiff(args, dir_, 600);
    }

    static void expect_same(const std::string& a, const std::string& b, double max_mean,
                            const char* what) {
        const ImageDiff d = compare_images(a, b);
        ASSERT_TRUE(d.ok) << d.error;
        EXPECT_LE(d.mean_abs, max_mean) << what << " (max " << d.max_abs << ")";
        std::printf("%s: mean_abs_diff %.3f\n", what, d.mean_abs);
    }

    std::string suite_, dit_, llm_, id_;
    std::string dir_;
};

}  // namespace ggdiff::e2e
