// Without -m the server serves the built-in model ($GGDIFF_DEFAULT_MODEL here, pointed at the
// fixture), names it in its model routes and generates with it.
#include <cstdlib>
#include <optional>

#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

// Restores the environment variable when the test ends, even on failure.
struct ScopedEnv {
    ScopedEnv(const char* name, const std::string& value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (old_) {
            setenv(name_, old_->c_str(), 1);
        } else {
            unsetenv(name_);
        }
    }
    const char* name_;
    std::optional<std::string> old_;
};

TEST(ServerDefaultModel, ServesTheBuiltInModelWithoutDashM) {
    if (!e2e::prerequisites_ok()) return;
    ScopedEnv env("GGDIFF_DEFAULT_MODEL", e2e::fixture_path());
    ServerProcess server({}, /*wait_ready=*/true, "", /*with_model=*/false);
    ASSERT_NE(server.port(), 0);
    EXPECT_NE(server.stderr_text().find("built-in model " + e2e::fixture_path()), std::string::npos)
        << server.log();
    auto c = server.client();
    json models = body_json(c.Get("/sdapi/v1/sd-models"));
    ASSERT_EQ(models.size(), 1u) << models.dump();
    EXPECT_EQ(models[0]["model_name"], "sd1_mc32");
    EXPECT_EQ(models[0]["title"], "sd1_mc32.safetensors");
    json oai = body_json(c.Get("/v1/models"));
    EXPECT_EQ(oai["data"][0]["id"], "sd1_mc32") << oai.dump();

    auto r = post_json(c, "/sdapi/v1/txt2img",
                       {{"prompt", "a red cube"},
                        {"width", 64},
                        {"height", 64},
                        {"steps", 2},
                        {"seed", 3},
                        {"sampler_name", "Euler"}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
    json j = body_json(r);
    ASSERT_EQ(j["images"].size(), 1u);
    const Image img = decode_b64_image(j["images"][0]);
    EXPECT_EQ(img.width, 64);
    EXPECT_EQ(img.height, 64);
    const json info = json::parse(j["info"].get<std::string>(), nullptr, false);
    EXPECT_EQ(info.value("sd_model_name", ""), "sd1_mc32") << j["info"];
}

}  // namespace
}  // namespace ggdiff::server_test
