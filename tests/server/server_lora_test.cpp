// LoRA through the server: A1111 prompt tags load files from
// --lora-model-dir, and give the reference engine's images (the sd1_lora golden cases).
#include <fstream>

#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

const std::string kLoras = std::string(GGDIFF_BINARY_DIR) + "/fixtures/sd1_lora_loras";

// The first A1111 image of an answer, written as a PNG file (for compare_images).
std::string save_first_image(const httplib::Result& r, const std::string& path) {
    if (!r || r->status != 200) {
        ADD_FAILURE() << (r ? std::to_string(r->status) + ": " + r->body.substr(0, 300)
                            : std::string("no answer"));
        return "";
    }
    auto bytes = base64_decode(body_json(r)["images"][0].get<std::string>());
    if (!bytes.ok()) {
        ADD_FAILURE() << bytes.status().message();
        return "";
    }
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes->data()),
               static_cast<std::streamsize>(bytes->size()));
    return path;
}

double mean_diff(const std::string& path, const std::string& golden) {
    const e2e::ImageDiff d =
        e2e::compare_images(path, e2e::shared_dir() + "/golden/sd1_lora/" + golden);
    if (!d.ok) {
        ADD_FAILURE() << d.error;
        return 1e9;
    }
    return d.mean_abs;
}

TEST(ServerLora, PromptTagsMatchTheReference) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({"--lora-model-dir", kLoras});
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    EXPECT_EQ(caps["features"]["lora"], true) << caps.dump();
    const std::string dir = e2e::fresh_dir("ServerLora");
    const json base = {{"prompt", "a photograph of an astronaut riding a horse<lora:kohya:1>"},
                       {"width", 64},
                       {"height", 64},
                       {"steps", 4},
                       {"sampler_name", "Euler"},
                       {"cfg_scale", 7},
                       {"seed", 42}};

    // A1111: a prompt tag.
    const std::string tagged =
        save_first_image(post_json(c, "/sdapi/v1/txt2img", base), dir + "/tagged.png");
    ASSERT_FALSE(tagged.empty());
    EXPECT_LE(mean_diff(tagged, "lora_kohya.png"), 1.5);

    // Half weight is the reference's half-weight image, not the full one.
    json half = base;
    half["prompt"] = "a photograph of an astronaut riding a horse<lora:kohya:0.5>";
    const std::string halved =
        save_first_image(post_json(c, "/sdapi/v1/txt2img", half), dir + "/half.png");
    ASSERT_FALSE(halved.empty());
    EXPECT_LE(mean_diff(halved, "lora_kohya_half.png"), 1.5);
    EXPECT_GT(mean_diff(halved, "lora_kohya.png"), 5.0);

    // The next request without a tag is the plain image again (the LoRA is undone).
    json plain = base;
    plain["prompt"] = "a photograph of an astronaut riding a horse";
    const std::string bare =
        save_first_image(post_json(c, "/sdapi/v1/txt2img", plain), dir + "/plain.png");
    ASSERT_FALSE(bare.empty());
    EXPECT_GT(mean_diff(bare, "lora_kohya.png"), 5.0);

    // Two tags, each with its own weight.
    const json two = {{"prompt", "two cats sleeping<lora:kohya:0.8><lora:locon:1>"},
                      {"width", 64},
                      {"height", 64},
                      {"steps", 5},
                      {"sampler_name", "Euler"},
                      {"cfg_scale", 7},
                      {"seed", 100}};
    const std::string both =
        save_first_image(post_json(c, "/sdapi/v1/txt2img", two), dir + "/two.png");
    ASSERT_FALSE(both.empty());
    EXPECT_LE(mean_diff(both, "lora_two.png"), 1.5);
    EXPECT_EQ(c.Get("/health")->status, 200);
}

}  // namespace
}  // namespace ggdiff::server_test
