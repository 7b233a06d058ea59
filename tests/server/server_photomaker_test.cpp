// PhotoMaker (v1 and v2) through ggdiff-server, on the photomaker_tiny golden set
// (tests/golden): the PhotoMaker file, the ID images and v2's ID embeddings are server start
// options (--photo-maker, --pm-id-images-dir, --pm-id-embed-path; no HTTP API, neither
// AUTOMATIC1111's nor stable-diffusion.cpp's sd-server, has a field for them). A1111 txt2img
// with a golden case's settings gives its golden image; --pm-style-strength is a per-request
// setting of the "ggdiff" options object; a prompt without the trigger word is refused, and
// a request cannot name ID files.
#include "../golden/e2e_support.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

constexpr const char* kSuite = "photomaker_tiny";

std::string pm_file(const std::string& version) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/photomaker_" + version + "_tiny.gguf";
}

std::string suite_file(const std::string& name) {
    return e2e::repo_suite_dir(kSuite) + "/" + name;
}

std::string golden(const std::string& file) {
    return suite_file(file);
}

bool prerequisites_ok() {
    for (const std::string& f : {pm_file("v1"), pm_file("v2")}) {
        if (!std::filesystem::is_regular_file(f)) {
            ADD_FAILURE() << "missing " << f << " (run through ctest: its fixture tests make it)";
            return false;
        }
    }
    return built_fixtures_present({"sdxl_mc32"});
}

// The server of model `version` ("v1" / "v2") with the ID images of ids/.
std::vector<std::string> server_args(const std::string& version) {
    std::vector<std::string> a = {"-m",
                                  e2e::built_fixture("sdxl_mc32"),
                                  "--photo-maker",
                                  pm_file(version),
                                  "--pm-id-images-dir",
                                  suite_file("ids")};
    if (version == "v2") a.insert(a.end(), {"--pm-id-embed-path", suite_file("id_embeds.bin")});
    return a;
}

// An A1111 txt2img body at 64x64, CFG 5.
json txt2img(const std::string& prompt, const std::string& sampler, int steps, int64_t seed) {
    return {{"prompt", prompt}, {"width", 64},  {"height", 64},           {"steps", steps},
            {"cfg_scale", 5},   {"seed", seed}, {"sampler_name", sampler}};
}

TEST(ServerPhotoMaker, V1IdentityFromStartOptionsAndStylePerRequest) {
    if (!prerequisites_ok()) return;
    ServerProcess server(server_args("v1"), true, "", /*with_model=*/false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    EXPECT_EQ(caps["model"]["family_id"], "sdxl") << caps["model"].dump();

    // pm_v1_euler: the default style strength (20).
    expect_a1111_golden(c, "/sdapi/v1/txt2img",
                        txt2img("a photo of a woman img, in a garden", "Euler", 4, 42),
                        golden("pm_v1_euler.png"), server);

    // pm_v1_style50_neg: --pm-style-strength 50 in the request's "ggdiff" options.
    json styled = txt2img("portrait of a (man:1.1) img wearing a red hat", "Euler a", 4, 7);
    styled["negative_prompt"] = "blurry, lowres";
    styled["ggdiff"] = {{"pm-style-strength", 50}};
    expect_a1111_golden(c, "/sdapi/v1/txt2img", styled, golden("pm_v1_style50_neg.png"), server);

    // Every request draws the server's person, so its prompt needs the trigger word.
    auto bad = post_json(c, "/sdapi/v1/txt2img", txt2img("a woman in a garden", "Euler", 1, 1));
    ASSERT_TRUE(bad);
    // (The check is the family's, at generation; the request is at fault: 400, not 500.)
    EXPECT_EQ(bad->status, 400) << bad->body;
    EXPECT_NE(body_json(bad).value("detail", "").find("no trigger word \"img\""), std::string::npos)
        << bad->body;

    // ID files come from the server's command line, never from a request.
    json file = txt2img("a photo of a woman img", "Euler", 1, 1);
    file["ggdiff"] = {{"pm-id-images-dir", suite_file("ids_alt")}};
    bad = post_json(c, "/sdapi/v1/txt2img", file);
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400) << bad->body;
    EXPECT_NE(bad->body.find("pm-id-images-dir"), std::string::npos) << bad->body;
}

TEST(ServerPhotoMaker, V2WithIdEmbeddings) {
    if (!prerequisites_ok()) return;
    ServerProcess server(server_args("v2"), true, "", /*with_model=*/false);
    auto c = server.client();
    expect_a1111_golden(c, "/sdapi/v1/txt2img",
                        txt2img("a photo of a woman img, in a garden", "Euler", 4, 42),
                        golden("pm_v2_euler.png"), server);
}

}  // namespace
}  // namespace ggdiff::server_test
