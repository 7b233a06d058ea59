// ggdiff-server with the FLUX.1 Kontext part files of the kontext_tiny golden suite: the
// capabilities say FLUX.1 takes reference images; A1111 img2img makes its init image a
// reference too (an image unlike the same request as txt2img); stable-diffusion.cpp's
// `extra_images` on A1111 txt2img gives the golden kontext_ref1 edit; bad `extra_images` are a
// 400 naming the item and the server keeps serving; OpenAI /v1/images/edits returns an edit.
// A model without reference images (sd1_mc32) refuses `extra_images` and a second init image.
#include "../golden/kontext_e2e.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

namespace kontext = e2e::kontext;

double mean_abs(const Image& a, const Image& b) {
    if (a.empty() || a.pixels.size() != b.pixels.size()) return 1e9;
    double s = 0;
    for (size_t i = 0; i < a.pixels.size(); ++i) s += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
    return s / static_cast<double>(a.pixels.size());
}

// The image file `path` with the channels of `like` (a PNG may be read as RGB or RGBA).
Image file_like(const std::string& path, const Image& like) {
    auto g = read_image(path);
    if (!g.ok()) {
        ADD_FAILURE() << g.status().message();
        return {};
    }
    return like.empty() || g->channels == like.channels ? *g : convert_channels(*g, like.channels);
}

std::string b64_file(const std::string& path) {
    return base64_encode(read_bytes(path));
}

// The Kontext part files; the server passes the CLIP merges itself.
std::vector<std::string> server_args() {
    return kontext::model_args_with("--tokenizer", "");
}

// The golden case kontext_ref1's settings in A1111's schema, without its reference image.
json ref1_request() {
    return {{"prompt", "make the red circle green"},
            {"width", 64},
            {"height", 64},
            {"steps", 4},
            {"sampler_name", "Euler"},
            {"cfg_scale", 1},
            {"seed", 42}};
}

// An A1111 request's only image (empty, and a failure, unless it answered 200 with one).
Image a1111_image(httplib::Client& c, const std::string& route, const json& body,
                  const ServerProcess& server) {
    auto r = post_json(c, route, body);
    if (!r || r->status != 200) {
        ADD_FAILURE() << route << ": "
                      << (r ? r->body.substr(0, 1000) : httplib::to_string(r.error())) << "\n"
                      << server.log();
        return {};
    }
    const json j = body_json(r);
    if (!j.is_object() || !j["images"].is_array() || j["images"].size() != 1u) {
        ADD_FAILURE() << "expected one image: " << r->body.substr(0, 500);
        return {};
    }
    return decode_b64_image(j["images"][0]);
}

TEST(ServerKontext, CapabilitiesSayFlux1TakesReferenceImages) {
    if (!kontext::prerequisites_ok()) return;
    ServerProcess server(server_args(), true, "", false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    SCOPED_TRACE(caps.dump(1));
    EXPECT_EQ(caps["model"]["family_id"], "flux");
    EXPECT_EQ(caps["model"]["stem"], "kontext_tiny_dit");
    EXPECT_EQ(caps["features"]["ref_images"], true);
}

// A1111 img2img on a model that takes references: init_images[0] is the init image and the
// reference; the edit is another image than the same request as txt2img (no reference) and
// than the golden edit (no init image).
TEST(ServerKontext, A1111Img2ImgTakesTheInitImageAsReference) {
    if (!kontext::prerequisites_ok()) return;
    ServerProcess server(server_args(), true, "", false);
    auto c = server.client();
    const Image txt = a1111_image(c, "/sdapi/v1/txt2img", ref1_request(), server);
    ASSERT_FALSE(txt.empty());
    json img2img = ref1_request();
    img2img["init_images"] = {b64_file(kontext::ref_shapes())};
    img2img["denoising_strength"] = 0.9;
    const Image edit = a1111_image(c, "/sdapi/v1/img2img", img2img, server);
    ASSERT_FALSE(edit.empty());
    EXPECT_EQ(edit.width, 64);
    EXPECT_EQ(edit.height, 64);
    EXPECT_GT(mean_abs(edit, txt), 3.0) << "img2img with the reference gave the txt2img image";
    // A second init image is a second reference: another image again.
    img2img["init_images"].push_back(b64_file(kontext::ref_stripes()));
    const Image two = a1111_image(c, "/sdapi/v1/img2img", img2img, server);
    ASSERT_FALSE(two.empty());
    EXPECT_GT(mean_abs(edit, two), 1.0) << "the second init image (a reference) changed nothing";
    // An extra_images field (here empty) names the references itself: the init image is then
    // only the init image (plain img2img, as stable-diffusion.cpp's server does it), and a
    // second init image is refused.
    json plain = ref1_request();
    plain["init_images"] = {b64_file(kontext::ref_shapes())};
    plain["denoising_strength"] = 0.9;
    plain["extra_images"] = json::array();
    const Image no_ref = a1111_image(c, "/sdapi/v1/img2img", plain, server);
    ASSERT_FALSE(no_ref.empty());
    EXPECT_GT(mean_abs(edit, no_ref), 1.0)
        << "extra_images: [] still used the init image as a reference";
    plain["extra_images"] = {b64_file(kontext::ref_shapes())};
    const Image same = a1111_image(c, "/sdapi/v1/img2img", plain, server);
    ASSERT_FALSE(same.empty());
    EXPECT_LT(mean_abs(edit, same), 0.5)
        << "the reference given in extra_images differs from init_images[0] as reference";
    plain["init_images"].push_back(b64_file(kontext::ref_stripes()));
    auto r = c.Post("/sdapi/v1/img2img", plain.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find("init_images"), std::string::npos) << r->body;
    EXPECT_TRUE(server.alive());
}

// stable-diffusion.cpp's extra_images on txt2img with kontext_ref1's settings: the golden image
// (as -r in the CLI); without them the same request is another picture.
TEST(ServerKontext, ExtraImagesOnTxt2ImgGiveTheGoldenEdit) {
    if (!kontext::prerequisites_ok()) return;
    const std::vector<std::string> golden = kontext::case_outputs("kontext_ref1");
    ASSERT_EQ(golden.size(), 1u);
    ServerProcess server(server_args(), true, "", false);
    auto c = server.client();
    json body = ref1_request();
    body["extra_images"] = {b64_file(kontext::ref_shapes())};
    const Image edit = a1111_image(c, "/sdapi/v1/txt2img", body, server);
    ASSERT_FALSE(edit.empty());
    const double d = mean_abs(edit, file_like(golden.front(), edit));
    std::printf("extra_images vs kontext_ref1: mean_abs_diff %.3f\n", d);
    EXPECT_LE(d, kontext::tolerance());
    const Image plain = a1111_image(c, "/sdapi/v1/txt2img", ref1_request(), server);
    ASSERT_FALSE(plain.empty());
    EXPECT_GT(mean_abs(edit, plain), 3.0) << "extra_images had no effect";
}

// Bad extra_images are refused when the request arrives, naming the item; the server then still
// serves a request with a good one.
TEST(ServerKontext, BadExtraImagesAreA400AndTheServerKeepsServing) {
    if (!kontext::prerequisites_ok()) return;
    ServerProcess server(server_args(), true, "", false);
    auto c = server.client();
    const std::string good = b64_file(kontext::ref_shapes());
    struct Bad {
        const char* name;
        const char* route;
        json extra;
        const char* mentions;
    };
    const std::vector<Bad> bad = {
        {"not_base64", "/sdapi/v1/txt2img", json::array({"%%%%"}), "extra_images[0]"},
        {"not_an_image", "/sdapi/v1/txt2img", json::array({"aGVsbG8gd29ybGQ="}), "extra_images[0]"},
        {"truncated_png", "/sdapi/v1/txt2img", json::array({good.substr(0, 40)}),
         "extra_images[0]"},
        {"second_bad", "/sdapi/v1/img2img", json::array({good, "%%%%"}), "extra_images[1]"},
        {"not_a_string", "/sdapi/v1/txt2img", json::array({7}), "extra_images[0]"},
        {"not_an_array", "/sdapi/v1/txt2img", json(good), "extra_images"},
    };
    for (const Bad& b : bad) {
        SCOPED_TRACE(b.name);
        json body = ref1_request();
        body["extra_images"] = b.extra;
        if (std::string(b.route) == "/sdapi/v1/img2img") body["init_images"] = {good};
        auto r = post_json(c, b.route, body);
        ASSERT_TRUE(r) << "no answer: " << httplib::to_string(r.error()) << "\n" << server.log();
        EXPECT_EQ(r->status, 400) << r->body;
        EXPECT_NE(r->body.find(b.mentions), std::string::npos)
            << "the error should mention '" << b.mentions << "': " << r->body;
        EXPECT_FALSE(json::parse(r->body, nullptr, false).is_discarded())
            << "error bodies are JSON: " << r->body;
        auto health = c.Get("/health");
        ASSERT_TRUE(health) << "the server stopped answering\n" << server.log();
        EXPECT_EQ(health->status, 200);
    }
    json one_step = ref1_request();
    one_step["steps"] = 1;
    one_step["extra_images"] = {good};
    EXPECT_FALSE(a1111_image(c, "/sdapi/v1/txt2img", one_step, server).empty());
    EXPECT_TRUE(server.alive());
}

// OpenAI /v1/images/edits on the Kontext model: the input image is the reference (and the init
// image); an image of the requested size comes back.
TEST(ServerKontext, OpenAiEditsReturnAnImage) {
    if (!kontext::prerequisites_ok()) return;
    ServerProcess server(server_args(), true, "", false);
    auto c = server.client();
    const std::vector<unsigned char> bytes = read_bytes(kontext::ref_shapes());
    const std::string png(bytes.begin(), bytes.end());
    httplib::MultipartFormDataItems items = {{"prompt", "make the red circle green", "", ""},
                                             {"size", "64x64", "", ""},
                                             {"seed", "42", "", ""},
                                             {"steps", "4", "", ""},
                                             {"cfg_scale", "1", "", ""},
                                             {"image", png, "in.png", "image/png"}};
    auto r = c.Post("/v1/images/edits", items);
    ASSERT_TRUE(r) << httplib::to_string(r.error()) << "\n" << server.log();
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 1000) << "\n" << server.log();
    const Image img = decode_b64_image(body_json(r)["data"][0]["b64_json"]);
    ASSERT_FALSE(img.empty());
    EXPECT_EQ(img.width, 64);
    EXPECT_EQ(img.height, 64);
    EXPECT_TRUE(server.alive());
}

// A model that takes no reference images (SD1) refuses extra_images (txt2img and img2img) and
// more than one init image with a 400 naming the field, instead of ignoring them.
TEST(ServerKontext, ModelsWithoutReferencesRefuseThem) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();
    auto png = std::string(b64_file(kontext::ref_shapes()));
    const json base = {{"prompt", "a red cube"}, {"width", 64}, {"height", 64}, {"steps", 1}};
    json txt = base;
    txt["extra_images"] = {png};
    json img = base;
    img["init_images"] = {png};
    img["extra_images"] = {png};
    json two = base;
    two["init_images"] = {png, png};
    for (const auto& [route, body, field] : std::vector<std::tuple<std::string, json, std::string>>{
             {"/sdapi/v1/txt2img", txt, "extra_images"},
             {"/sdapi/v1/img2img", img, "extra_images"},
             {"/sdapi/v1/img2img", two, "init_images"}}) {
        SCOPED_TRACE(route + " " + field);
        auto r = post_json(c, route, body);
        ASSERT_TRUE(r) << httplib::to_string(r.error()) << "\n" << server.log();
        EXPECT_EQ(r->status, 400) << r->body;
        EXPECT_NE(r->body.find(field), std::string::npos) << r->body;
        EXPECT_NE(r->body.find("reference images"), std::string::npos) << r->body;
    }
    // An empty list asks for nothing.
    json empty = base;
    empty["extra_images"] = json::array();
    EXPECT_FALSE(a1111_image(c, "/sdapi/v1/txt2img", empty, server).empty());
    EXPECT_TRUE(server.alive());
}

}  // namespace
}  // namespace ggdiff::server_test
