// Golden tests: every case of ../shared/golden/sd1_mc32/manifest.json run through the ggdiff
// CLI on the fixture checkpoint, each output within the manifest's tolerance of the
// reference image, and each output's PNG `parameters` text reading back with the request's
// prompt, negative prompt, seed (seed + i for batch image i), steps, sampler and size.
//
// The cases are read from the manifest at run time (one test per case id); `INIT` in a
// case's arguments stands for the manifest's init image (the golden euler.png).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "e2e_support.h"
#include "sampling/samplers.h"

namespace ggdiff::e2e {
namespace {

struct GoldenCase {
    std::string id;
    std::vector<std::string> args;
    std::vector<std::string> outputs;
};

std::vector<GoldenCase> load_cases() {
    std::vector<GoldenCase> cases;
    const nlohmann::json m = load_manifest();
    if (!m.contains("cases")) return cases;
    for (const auto& c : m["cases"]) {
        GoldenCase gc;
        gc.id = c.value("id", "");
        for (const auto& a : c["args"]) gc.args.push_back(a.get<std::string>());
        for (const auto& o : c["outputs"]) gc.outputs.push_back(o.get<std::string>());
        cases.push_back(gc);
    }
    return cases;
}

std::string param_name(const ::testing::TestParamInfo<GoldenCase>& info) {
    std::string s;
    for (char c : info.param.id) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return s.empty() ? "case" + std::to_string(info.index) : s;
}

// Where ggdiff writes output i of a batch for `-o base.png`: base.png, base_1.png, ...
std::string output_path(const std::string& dir, size_t i) {
    return i == 0 ? dir + "/out.png" : dir + "/out_" + std::to_string(i) + ".png";
}

// The parameters text of `path` parsed back must match what the request asked for.
void expect_metadata(const std::string& path, const ExpectedInfo& e, int64_t seed) {
    auto text = read_image_parameters(path);
    ASSERT_TRUE(text.ok()) << text.status().message();
    auto info = parse_infotext(*text);
    ASSERT_TRUE(info.ok()) << info.status().message() << "\nparameters:\n" << *text;
    const std::string ctx = "parameters of " + path + ":\n" + *text;
    EXPECT_EQ(info->prompt, e.prompt) << ctx;
    EXPECT_EQ(info->negative_prompt, e.negative_prompt) << ctx;
    EXPECT_EQ(info->seed, seed) << ctx;
    EXPECT_EQ(info->steps, e.steps) << ctx;
    EXPECT_EQ(info->width, e.width) << ctx;
    EXPECT_EQ(info->height, e.height) << ctx;
    auto want = sampling::parse_sampler(e.sampler);
    ASSERT_TRUE(want.ok()) << "manifest sampler " << e.sampler;
    auto got = sampling::parse_sampler(info->sampler);
    ASSERT_TRUE(got.ok()) << "metadata sampler '" << info->sampler << "' is not a sampler name\n"
                          << ctx;
    EXPECT_EQ(*got, *want) << "sampler '" << info->sampler << "' vs requested " << e.sampler
                           << "\n"
                           << ctx;
    if (e.cfg_scale) {
        EXPECT_FLOAT_EQ(info->cfg_scale, *e.cfg_scale) << ctx;
    }
    // "Schedule type" (A1111 accepts its name or its label, so compare without case).
    if (!e.scheduler.empty() && e.scheduler != "discrete") {
        EXPECT_EQ(lower(info->schedule), lower(e.scheduler)) << ctx;
    }
    // "Denoising strength" for img2img only.
    if (e.strength) {
        ASSERT_TRUE(info->denoising_strength.has_value()) << ctx;
        EXPECT_FLOAT_EQ(*info->denoising_strength, *e.strength) << ctx;
    } else {
        EXPECT_FALSE(info->denoising_strength.has_value()) << ctx;
    }
}

class GoldenSd1 : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenSd1, MatchesReference) {
    const GoldenCase& c = GetParam();
    ASSERT_TRUE(prerequisites_ok());
    const nlohmann::json manifest = load_manifest();
    const double tolerance = manifest_tolerance();
    const std::string init = golden_dir() + "/" + manifest.value("init", "euler.png");
    const std::string dir = fresh_dir();

    std::vector<std::string> args = model_args();
    for (const std::string& a : c.args) args.push_back(a == "INIT" ? init : a);
    args.push_back("-o");
    args.push_back(dir + "/out.png");
    const RunResult r = run_ggdiff(args, dir);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    std::printf("[ golden   ] %s: ggdiff ran %.1f s\n", c.id.c_str(), r.seconds);

    const ExpectedInfo expected = expected_from_args(c.args);
    ASSERT_EQ(static_cast<int>(c.outputs.size()), expected.batch)
        << "manifest outputs vs -b of case " << c.id;
    for (size_t i = 0; i < c.outputs.size(); ++i) {
        const std::string out = output_path(dir, i);
        const std::string ref = golden_dir() + "/" + c.outputs[i];
        SCOPED_TRACE("output " + out + " vs " + ref);
        ASSERT_TRUE(fs::is_regular_file(out)) << "missing output\n" << r.describe();
        const ImageDiff d = compare_images(out, ref);
        ASSERT_TRUE(d.ok) << d.error;
        std::printf("[ golden   ] %s: %s mean_abs_diff %.3f max_abs_diff %d (tolerance %.2f)\n",
                    c.id.c_str(), c.outputs[i].c_str(), d.mean_abs, d.max_abs, tolerance);
        EXPECT_LE(d.mean_abs, tolerance) << "case " << c.id << " output " << c.outputs[i];
        expect_metadata(out, expected, expected.seed + static_cast<int64_t>(i));
    }
    // Nothing beyond the batch: no out_<batch>.png.
    EXPECT_FALSE(fs::exists(output_path(dir, c.outputs.size())));
}

INSTANTIATE_TEST_SUITE_P(Manifest, GoldenSd1, ::testing::ValuesIn(load_cases()), param_name);

// The manifest is present and parameterizes the tests above (an unreadable manifest would
// otherwise silently give zero cases).
TEST(GoldenManifest, HasCases) {
    const nlohmann::json m = load_manifest();
    ASSERT_TRUE(m.contains("cases")) << "cannot read " << manifest_path();
    EXPECT_GE(m["cases"].size(), 6u);
    EXPECT_TRUE(m.contains("/fixture/sha256"_json_pointer));
    EXPECT_GT(manifest_tolerance(), 0.0);
}

// The batch case really produces different images for seed and seed + 1 (the comparison
// above would not notice two copies of one image if both references were close).
TEST(GoldenManifest, ReferencesAreDistinct) {
    const ImageDiff d =
        compare_images(golden_dir() + "/batch2_0.png", golden_dir() + "/batch2_1.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_GT(d.mean_abs, 3.0);
}

}  // namespace
}  // namespace ggdiff::e2e
