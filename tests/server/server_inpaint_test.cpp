// Inpainting through the server: the A1111 img2img `mask` (with mask_blur,
// inpainting_mask_invert, and refusals for the fills and modes not built) and the OpenAI
// edits `mask` (transparent = repaint) give the CLI's --mask images.
#include <cstdlib>

#include "core/base64.h"
#include "image/image_io.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

const std::string kInpaint = e2e::shared_dir() + "/golden/sd1_inpaint";
const std::string kInpaintModel =
    std::string(GGDIFF_BINARY_DIR) + "/fixtures/sd1_inpaint_mc32.safetensors";

std::string file_b64(const std::string& path) {
    return base64_encode(read_bytes(path));
}

std::string image_b64(const Image& img) {
    auto png = encode_image(img, ImageFormat::Png);
    EXPECT_TRUE(png.ok());
    return png.ok() ? base64_encode(*png) : "";
}

Image a1111_image(const httplib::Result& r) {
    if (!r || r->status != 200) {
        ADD_FAILURE() << (r ? std::to_string(r->status) + ": " + r->body.substr(0, 300)
                            : std::string("no answer"));
        return {};
    }
    return decode_b64_image(body_json(r)["images"][0]);
}

double mean_abs(const Image& a, const Image& b) {
    if (a.empty() || a.pixels.size() != b.pixels.size()) return 1e9;
    double s = 0;
    for (size_t i = 0; i < a.pixels.size(); ++i) s += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
    return s / static_cast<double>(a.pixels.size());
}

Image inverted(Image img) {
    for (auto& p : img.pixels) p = static_cast<uint8_t>(255 - p);
    return img;
}

json inpaint_request(const std::string& mask_b64) {
    return {{"prompt", "a photograph of an astronaut riding a horse"},
            {"init_images", {file_b64(kInpaint + "/init.png")}},
            {"mask", mask_b64},
            {"width", 64},
            {"height", 64},
            {"steps", 4},
            {"sampler_name", "Euler"},
            {"cfg_scale", 7},
            {"seed", 42}};
}

// An inpainting checkpoint: the A1111 mask (unblurred) gives the reference image; an inverted
// mask with inpainting_mask_invert gives it too; unsupported fills are refused by name.
TEST(ServerInpaint, A1111MaskOnAnInpaintingModelMatchesTheReference) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({"-m", kInpaintModel}, true, "", false);
    auto c = server.client();
    auto golden = read_image(kInpaint + "/inpaint_center.png");
    ASSERT_TRUE(golden.ok());
    auto mask = read_image(kInpaint + "/mask_center.png");
    ASSERT_TRUE(mask.ok());

    json sharp = inpaint_request(file_b64(kInpaint + "/mask_center.png"));
    sharp["mask_blur"] = 0;
    const Image a = a1111_image(post_json(c, "/sdapi/v1/img2img", sharp));
    EXPECT_LE(mean_abs(a, *golden), 1.5);

    json inv = inpaint_request(image_b64(inverted(*mask)));
    inv["mask_blur"] = 0;
    inv["inpainting_mask_invert"] = 1;
    const Image b = a1111_image(post_json(c, "/sdapi/v1/img2img", inv));
    EXPECT_LE(mean_abs(b, *golden), 1.5);

    json fill = sharp;
    fill["inpainting_fill"] = 2;
    auto refused = post_json(c, "/sdapi/v1/img2img", fill);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400);
    EXPECT_NE(refused->body.find("inpainting_fill"), std::string::npos) << refused->body;
    EXPECT_NE(refused->body.find("not supported yet"), std::string::npos) << refused->body;
    json whole = sharp;
    whole["inpaint_full_res"] = true;
    auto refused2 = post_json(c, "/sdapi/v1/img2img", whole);
    ASSERT_TRUE(refused2);
    EXPECT_EQ(refused2->status, 400);
    EXPECT_NE(refused2->body.find("inpaint_full_res"), std::string::npos) << refused2->body;

    // OpenAI edits: the mask's transparent pixels repaint.
    Image rgba;
    rgba.width = mask->width;
    rgba.height = mask->height;
    rgba.channels = 4;
    for (int i = 0; i < mask->width * mask->height; ++i) {
        const uint8_t v = mask->pixels[static_cast<size_t>(i) * mask->channels];
        rgba.pixels.insert(rgba.pixels.end(),
                           {10, 20, 30, static_cast<uint8_t>(v > 127 ? 0 : 255)});
    }
    auto rgba_png = encode_image(rgba, ImageFormat::Png);
    ASSERT_TRUE(rgba_png.ok());
    const std::string init = e2e::read_text(kInpaint + "/init.png");
    httplib::MultipartFormDataItems items = {
        {"prompt", "a photograph of an astronaut riding a horse", "", ""},
        {"image", init, "init.png", "image/png"},
        {"mask", std::string(rgba_png->begin(), rgba_png->end()), "mask.png", "image/png"},
        {"steps", "4", "", ""},
        {"sampler", "euler", "", ""},
        {"cfg_scale", "7", "", ""},
        {"strength", "0.75", "", ""},
        {"seed", "42", "", ""}};
    auto edit = c.Post("/v1/images/edits", items);
    ASSERT_TRUE(edit);
    ASSERT_EQ(edit->status, 200) << edit->body.substr(0, 500);
    const Image e = decode_b64_image(body_json(edit)["data"][0]["b64_json"]);
    EXPECT_LE(mean_abs(e, *golden), 1.5);
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    EXPECT_EQ(caps["features"]["mask_image"], true) << caps.dump();
}

// A plain checkpoint takes the mask as soft weights: A1111's mask_blur changes the picture,
// and without blur the server's image is the CLI's.
TEST(ServerInpaint, A1111MaskBlurActs) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();
    json sharp = inpaint_request(file_b64(kInpaint + "/mask_center.png"));
    sharp["mask_blur"] = 0;
    const Image a = a1111_image(post_json(c, "/sdapi/v1/img2img", sharp));
    json soft = sharp;
    soft["mask_blur"] = 8;
    const Image b = a1111_image(post_json(c, "/sdapi/v1/img2img", soft));
    ASSERT_FALSE(a.empty());
    ASSERT_FALSE(b.empty());
    EXPECT_GT(mean_abs(a, b), 0.5) << "mask_blur had no effect";

    const std::string dir = e2e::fresh_dir("ServerInpaint.cli");
    std::vector<std::string> args = e2e::model_args();
    const std::vector<std::string> request = e2e::euler_request(4);
    args.insert(args.end(), request.begin(), request.end());
    args.insert(args.end(),
                {"-i", kInpaint + "/init.png", "--mask", kInpaint + "/mask_center.png",
                 "--strength", "0.75", "--tokenizer", e2e::merges_path(), "-o", dir + "/cli.png"});
    const e2e::RunResult r = e2e::run_ggdiff(args, dir);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    auto cli = read_image(dir + "/cli.png");
    ASSERT_TRUE(cli.ok());
    EXPECT_LE(mean_abs(a, *cli), 0.01);
}

}  // namespace
}  // namespace ggdiff::server_test
