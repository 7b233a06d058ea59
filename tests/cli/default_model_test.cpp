// Without -m the CLI uses the built-in model: $GGDIFF_DEFAULT_MODEL, else
// models/ggdiff-toy-shapes.safetensors found next to the executable's folder.
#include <gtest/gtest.h>

#include <cstdlib>

#include "../golden/e2e_support.h"

namespace ggdiff::e2e {
namespace {

TEST(DefaultModel, EnvironmentNamesTheModelUsedWithoutDashM) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    ScopedEnv env("GGDIFF_DEFAULT_MODEL", fixture_path());
    const RunResult r = run_ggdiff(
        {"-p", "a photograph of an astronaut riding a horse", "-W", "64", "-H", "64", "--steps",
         "4", "--sampling-method", "euler", "--cfg-scale", "7", "-s", "42", "-o", dir + "/out.png"},
        dir);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    // The same request as the golden case `euler`.
    const ImageDiff d = compare_images(dir + "/out.png", golden_dir() + "/euler.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, manifest_tolerance());
    auto text = read_image_parameters(dir + "/out.png");
    ASSERT_TRUE(text.ok());
    EXPECT_TRUE(contains(*text, "Model: sd1_mc32")) << *text;
}

TEST(DefaultModel, MissingDefaultModelIsAClearError) {
    const std::string dir = fresh_dir();
    ScopedEnv env("GGDIFF_DEFAULT_MODEL", dir + "/no_such_model.safetensors");
    const RunResult r = run_ggdiff({"-p", "x", "-o", dir + "/out.png"}, dir);
    ASSERT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "no_such_model.safetensors")) << r.err;
}

}  // namespace
}  // namespace ggdiff::e2e
