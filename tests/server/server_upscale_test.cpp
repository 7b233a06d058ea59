// The server's ESRGAN upscalers: /sdapi/v1/upscalers lists --upscale-model, and
// /sdapi/v1/extra-single-image runs it (as many passes as the factor asks, then a resize to
// the asked size); what it cannot do is refused by field. A model loaded with
// --upscale-model upscales its generations too.
#include "core/base64.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

const std::string kEsrgan =
    std::string(GGDIFF_BINARY_DIR) + "/fixtures/sd1_extras_esrgan_x2.safetensors";

std::string plain_b64() {
    const std::vector<uint8_t> bytes =
        read_bytes(e2e::shared_dir() + "/golden/sd1_extras/plain.png");
    return base64_encode(bytes.data(), bytes.size());
}

TEST(ServerUpscale, ListsAndRunsTheUpscaler) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({"--upscale-model", kEsrgan});
    auto c = server.client();
    c.set_read_timeout(600);
    const json list = body_json(c.Get("/sdapi/v1/upscalers"));
    ASSERT_TRUE(list.is_array()) << list.dump();
    ASSERT_EQ(list.size(), 2u) << list.dump();
    EXPECT_EQ(list[0]["name"], "None");
    EXPECT_EQ(list[1]["name"], "sd1_extras_esrgan_x2");
    EXPECT_EQ(list[1]["scale"], 2);
    EXPECT_EQ(list[1]["model_path"], kEsrgan);

    // x4 = two passes of the x2 model: the reference's -M upscale --upscale-repeats 2.
    const json body = {
        {"image", plain_b64()}, {"upscaler_1", "sd1_extras_esrgan_x2"}, {"upscaling_resize", 4}};
    auto r = post_json(c, "/sdapi/v1/extra-single-image", body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 400);
    const json j = body_json(r);
    EXPECT_TRUE(j["html_info"].is_string());
    std::string params;
    const Image img = decode_b64_image(j["image"].get<std::string>(), &params);
    ASSERT_EQ(img.width, 256);
    ASSERT_EQ(img.height, 256);
    EXPECT_NE(params.find("Postprocess upscale by: 4"), std::string::npos) << params;
    const std::string dir = e2e::fresh_dir("ServerUpscale");
    ImageWriteOptions wo;
    ASSERT_TRUE(write_image(dir + "/r2.png", img, wo).ok());
    const e2e::ImageDiff d = e2e::compare_images(
        dir + "/r2.png", e2e::shared_dir() + "/golden/sd1_extras/upscale_only_r2.png");
    ASSERT_TRUE(d.ok) << d.error;
    std::printf("[ server   ] extra-single-image x4 vs upscale_only_r2.png: mean %.3f\n",
                d.mean_abs);
    EXPECT_LE(d.mean_abs, 1.5);

    // resize_mode 1: one pass reaches 100 px, then a resize to exactly 100x60.
    auto sized = post_json(c, "/sdapi/v1/extra-single-image",
                           {{"image", plain_b64()},
                            {"upscaler_1", "sd1_extras_esrgan_x2"},
                            {"resize_mode", 1},
                            {"upscaling_resize_w", 100},
                            {"upscaling_resize_h", 60}});
    ASSERT_TRUE(sized);
    ASSERT_EQ(sized->status, 200) << sized->body.substr(0, 400);
    const Image small = decode_b64_image(body_json(sized)["image"].get<std::string>());
    EXPECT_EQ(small.width, 100);
    EXPECT_EQ(small.height, 60);

    // What cannot be done is refused by field.
    auto refused = [&](const json& b, const std::string& field) {
        auto res = post_json(c, "/sdapi/v1/extra-single-image", b);
        ASSERT_TRUE(res);
        EXPECT_EQ(res->status, 400) << res->body;
        EXPECT_NE(res->body.find(field), std::string::npos) << res->body;
    };
    refused({{"image", plain_b64()}, {"upscaler_1", "nope"}}, "upscaler_1");
    refused({{"image", plain_b64()}, {"upscaler_1", "None"}}, "upscaler_1");
    refused({{"upscaler_1", "sd1_extras_esrgan_x2"}}, "image");
    refused({{"image", plain_b64()},
             {"upscaler_1", "sd1_extras_esrgan_x2"},
             {"gfpgan_visibility", 0.5}},
            "not supported");
    refused({{"image", plain_b64()},
             {"upscaler_1", "sd1_extras_esrgan_x2"},
             {"upscaler_2", "sd1_extras_esrgan_x2"},
             {"extras_upscaler_2_visibility", 0.3}},
            "upscaler_2");
    refused({{"image", "not base64 at all!"}, {"upscaler_1", "sd1_extras_esrgan_x2"}}, "image");

    // The model itself upscales what it generates (--upscale-model).
    auto gen = post_json(
        c, "/sdapi/v1/txt2img",
        {{"prompt", "a red cube"}, {"width", 64}, {"height", 64}, {"steps", 1}, {"seed", 3}});
    ASSERT_TRUE(gen);
    ASSERT_EQ(gen->status, 200) << gen->body.substr(0, 400);
    const Image g = decode_b64_image(body_json(gen)["images"][0].get<std::string>());
    EXPECT_EQ(g.width, 128);
}

TEST(ServerUpscale, WithoutUpscalersOnlyNone) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();
    const json list = body_json(c.Get("/sdapi/v1/upscalers"));
    ASSERT_EQ(list.size(), 1u) << list.dump();
    auto r = post_json(c, "/sdapi/v1/extra-single-image",
                       {{"image", plain_b64()}, {"upscaler_1", "anything"}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
}

}  // namespace
}  // namespace ggdiff::server_test
