// What the family CLI file suites (tests/cli/<family>_e2e_test.cpp, "files as users have
// them") share: one golden case of a tests/golden set run with other files, -M info and
// -M convert, and the checks every such suite makes (the q8_0 GGUF and --type q8_0 runs near
// the golden image, a batch of two carrying seeds s and s + 1).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "../golden/e2e_support.h"
#include "image/image_metadata.h"
#include "part_files.h"

namespace ggdiff::e2e {

// A suite's fixture: each test gets a fresh folder (dir_), after the files the suite reads,
// the ggdiff binary and the golden image are checked to exist.
class CaseFiles : public ::testing::Test {
  protected:
    // The golden set under tests/golden and its case the runs reproduce.
    virtual std::string suite() const = 0;
    virtual std::string case_id() const = 0;
    // The fixture files the suite reads.
    virtual std::vector<std::string> files() const = 0;

    void SetUp() override {
        std::vector<std::string> needed = files();
        needed.insert(needed.begin(), binary_path());
        needed.push_back(golden());
        for (const std::string& f : needed) {
            ASSERT_TRUE(std::filesystem::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        dir_ = fresh_dir();
    }

    // The golden case's arguments (a suite may leave some out).
    virtual std::vector<std::string> case_args() const {
        return suite_case_args(suite_dir(), case_id());
    }

    std::string suite_dir() const { return repo_suite_dir(suite()); }
    std::string golden() const { return suite_dir() + "/" + case_id() + ".png"; }
    double tolerance() const { return suite_tolerance(suite_dir()); }

    // The golden case with `model` (its files) and `extra` after the case's arguments, into
    // `out`.
    RunResult generate(const std::vector<std::string>& model, const std::string& out,
                       const std::vector<std::string>& extra = {}) const {
        std::vector<std::string> args = model;
        for (const std::string& a : case_args()) args.push_back(a);
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return run_ggdiff(args, dir_, 600);
    }

    // A request that fails before any compute: `model` with a tiny image.
    RunResult refused(const std::vector<std::string>& model, const std::string& out) const {
        return run_refused(model, out, dir_);
    }

    // -M info with `files`.
    RunResult info(const std::vector<std::string>& files) const {
        std::vector<std::string> args = {"-M", "info"};
        args.insert(args.end(), files.begin(), files.end());
        return run_ggdiff(args, dir_, 60);
    }

    // -M info with `files` succeeds and prints `family` (a "family:      id (Name)" line).
    void expect_info_names(const std::vector<std::string>& files, const std::string& family) const {
        const RunResult r = info(files);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        EXPECT_TRUE(contains(r.out, family)) << r.describe();
    }

    // The part `file`, given as `flag`, converted to a q8_0 GGUF in dir_ named `name`; its path
    // ("" after a failure, recorded as such).
    std::string convert_q8_0(const std::string& flag, const std::string& file,
                             const std::string& name) const {
        const std::string out = dir_ + "/" + name;
        const RunResult c = convert_part(flag, file, "q8_0", out, dir_);
        if (!c.succeeded()) {
            ADD_FAILURE() << c.describe();
            return "";
        }
        return out;
    }

    // The DiT converted to a q8_0 GGUF named `dit_stem`_q8_0.gguf (and, unless `encoder` is
    // empty, the text encoder given as `encoder_flag` converted too): -M info names `family`
    // and the q8_0 type; the golden case with `model(dit, encoder)` stays within 6 of the f16
    // golden and the PNG's A1111 parameters name the DiT file; every part of `model("", "")`
    // converted on load with --type q8_0 stays within 6 as well.
    void check_q8_0_gguf_and_type(
        const std::string& family, const std::string& dit_stem, const std::string& dit,
        const std::string& encoder_flag, const std::string& encoder,
        const std::function<std::vector<std::string>(const std::string&, const std::string&)>&
            model) const {
        const std::string dit_q8 = convert_q8_0("--diffusion-model", dit, dit_stem + "_q8_0.gguf");
        ASSERT_FALSE(dit_q8.empty());
        std::string encoder_q8;
        if (!encoder.empty()) {
            encoder_q8 = convert_q8_0(encoder_flag, encoder, encoder_flag.substr(2) + "_q8_0.gguf");
            ASSERT_FALSE(encoder_q8.empty());
        }
        const RunResult i = info({"--diffusion-model", dit_q8});
        ASSERT_TRUE(i.succeeded()) << i.describe();
        EXPECT_TRUE(contains(i.out, family)) << i.describe();
        EXPECT_TRUE(contains(i.out, "q8_0=")) << i.describe();
        const std::string out = dir_ + "/gguf.png";
        const RunResult r = generate(model(dit_q8, encoder_q8), out);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        const std::string what = "q8_0 GGUF DiT" +
                                 (encoder.empty() ? std::string() : " and " + encoder_flag) +
                                 " against the f16 golden";
        expect_images_near(out, golden(), 6.0, what.c_str());
        auto params = read_image_parameters(out);
        ASSERT_TRUE(params.ok());
        EXPECT_TRUE(contains(*params, "Model: " + dit_stem + "_q8_0")) << *params;

        const std::string out2 = dir_ + "/type.png";
        const RunResult t = generate(model("", ""), out2, {"--type", "q8_0"});
        ASSERT_TRUE(t.succeeded()) << t.describe();
        expect_images_near(out2, golden(), 6.0, "--type q8_0 against the f16 golden");
    }

    // -b 2 with `model` (the case's seed is `seed`): two images, the first within the suite's
    // tolerance of the golden image, the second carrying seed + 1 and within 0.5 of the image
    // that seed gives alone.
    void check_batch_seeds(const std::vector<std::string>& model, int seed) const {
        const RunResult b = generate(model, dir_ + "/batch.png", {"-b", "2"});
        ASSERT_TRUE(b.succeeded()) << b.describe();
        const std::vector<std::string> pngs = pngs_in(dir_);
        ASSERT_EQ(pngs.size(), 2u) << b.describe();
        const std::string first = "batch image 1 (seed " + std::to_string(seed) + ")";
        expect_images_near(pngs[0], golden(), tolerance(), first.c_str());
        auto p2 = read_image_parameters(pngs[1]);
        ASSERT_TRUE(p2.ok());
        const std::string next = std::to_string(seed + 1);
        EXPECT_TRUE(contains(*p2, "Seed: " + next)) << *p2;
        std::filesystem::create_directories(dir_ + "/seed" + next);
        const std::string alone = dir_ + "/seed" + next + "/alone.png";
        const RunResult s = generate(model, alone, {"-s", next});
        ASSERT_TRUE(s.succeeded()) << s.describe();
        const std::string second = "batch image 2 against seed " + next + " alone";
        expect_images_near(pngs[1], alone, 0.5, second.c_str());
    }

    std::string dir_;
};

}  // namespace ggdiff::e2e
