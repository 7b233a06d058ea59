// ggdiff-server with the model of a golden set (tests/golden/<suite>) for the families whose
// server behaviour has no suite of its own (Ovis-Image, LongCat-Image and its edit mode,
// ERNIE-Image, Anima): /sdcpp/v1/capabilities names the family and the settings a request
// leaves out (the reference's defaults, as docs/<family>.md lists them), and golden cases sent
// as an A1111 client sends them (txt2img, img2img with init_images, reference images in
// stable-diffusion.cpp's extra_images) give the golden image within the set's tolerance, with
// PNG parameters that name the model.
//
// A case's CLI arguments become the request body the way an A1111 client writes it; a flag
// that has no A1111 field fails the test rather than being dropped.
#include <map>

#include "../golden/e2e_support.h"
#include "../golden/manifest_args.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

struct GoldenRequest {
    std::string path;  // /sdapi/v1/txt2img or /sdapi/v1/img2img
    json body;
};

// A1111's display names for the CLI's sampler names used by the golden sets.
std::string a1111_sampler(const std::string& cli) {
    static const std::map<std::string, std::string> names = {
        {"euler", "Euler"}, {"euler_a", "Euler a"}, {"dpm++2m", "DPM++ 2M"}};
    auto it = names.find(cli);
    return it == names.end() ? cli : it->second;
}

// The A1111 request for a golden case's arguments (its @FILE paths already resolved).
Result<GoldenRequest> a1111_request(const std::vector<std::string>& args) {
    GoldenRequest r{"/sdapi/v1/txt2img", json::object()};
    std::vector<std::string> refs;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& flag = args[i];
        if (i + 1 >= args.size()) return Status::Error("flag " + flag + " without a value");
        const std::string& v = args[++i];
        if (flag.find("tokenizer") != std::string::npos) {
            continue;  // a model file: the server loads it at start (Family::extra_args)
        } else if (flag == "-p") {
            r.body["prompt"] = v;
        } else if (flag == "-n") {
            r.body["negative_prompt"] = v;
        } else if (flag == "-W") {
            r.body["width"] = std::stoi(v);
        } else if (flag == "-H") {
            r.body["height"] = std::stoi(v);
        } else if (flag == "--steps") {
            r.body["steps"] = std::stoi(v);
        } else if (flag == "--cfg-scale") {
            r.body["cfg_scale"] = std::stod(v);
        } else if (flag == "-s") {
            r.body["seed"] = std::stoll(v);
        } else if (flag == "--sampling-method") {
            r.body["sampler_name"] = a1111_sampler(v);
        } else if (flag == "-i") {
            r.path = "/sdapi/v1/img2img";
            r.body["init_images"] = {base64_encode(read_bytes(v))};
        } else if (flag == "--strength") {
            r.body["denoising_strength"] = std::stod(v);
        } else if (flag == "-r") {
            refs.push_back(base64_encode(read_bytes(v)));
        } else {
            return Status::Error("no A1111 field for " + flag);
        }
    }
    if (!refs.empty()) r.body["extra_images"] = refs;
    return r;
}

// Everything but the case's own arguments: the server's start options.
struct Family {
    std::string suite;
    std::string model_key;  // the manifest's `models` key ("" for `files`)
    std::vector<std::string> extra_args;
    std::string family_id;
    std::string model_stem;  // what capabilities and the PNG parameters name as the model
    double flow_shift = 0;   // 0: none listed (the shift is FLUX's mu)
    bool ref_images = false;
    std::vector<std::string> cases;
};

std::vector<std::string> server_args(const Family& f, const json& manifest) {
    std::vector<std::string> args = e2e::manifest_model_args(f.suite, manifest, f.model_key);
    args.insert(args.end(), f.extra_args.begin(), f.extra_args.end());
    return args;
}

void check_family(const Family& f) {
    const std::string dir = e2e::repo_suite_dir(f.suite);
    const json manifest = e2e::read_manifest(dir + "/manifest.json");
    ASSERT_TRUE(manifest.contains("cases")) << "no manifest in " << dir;
    const std::vector<std::string> args = server_args(f, manifest);
    for (size_t i = 1; i < args.size(); i += 2) {
        ASSERT_TRUE(std::filesystem::exists(args[i]))
            << args[i - 1] << ": missing " << args[i]
            << " (run through ctest: it makes the fixtures)";
    }
    ServerProcess server(args, /*wait_ready=*/true, "", /*with_model=*/false);
    auto c = server.client();

    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    SCOPED_TRACE(f.suite + " " + f.model_key + " capabilities:\n" + caps.dump(1));
    EXPECT_EQ(caps["model"]["family_id"], f.family_id);
    EXPECT_EQ(caps["model"]["stem"], f.model_stem);
    const json& defaults = caps["model"]["defaults"];
    EXPECT_EQ(defaults["sample_method"], "euler");
    EXPECT_EQ(defaults["cfg_scale"], 7.0);
    EXPECT_EQ(defaults["width"], 512);
    EXPECT_EQ(defaults["height"], 512);
    if (f.flow_shift > 0) {
        ASSERT_TRUE(defaults.contains("flow_shift"));
        EXPECT_NEAR(defaults["flow_shift"].get<double>(), f.flow_shift, 1e-5);
    } else {
        EXPECT_FALSE(defaults.contains("flow_shift"));
    }
    EXPECT_EQ(caps["features"]["ref_images"], f.ref_images);

    for (const std::string& id : f.cases) {
        SCOPED_TRACE(f.suite + "/" + id);
        auto request = a1111_request(e2e::suite_case_args(dir, id));
        ASSERT_TRUE(request.ok()) << request.status().message();
        const std::string parameters =
            expect_a1111_golden(c, request->path, request->body, dir + "/" + id + ".png", server);
        auto info = parse_infotext(parameters);
        ASSERT_TRUE(info.ok()) << parameters;
        EXPECT_EQ(info->model, f.model_stem) << parameters;
        EXPECT_EQ(info->seed, request->body["seed"].get<int64_t>()) << parameters;
    }
}

Family family(const std::string& suite, const std::string& model_key, const std::string& id,
              std::vector<std::string> cases) {
    Family f;
    f.suite = suite;
    f.model_key = model_key;
    f.family_id = id;
    f.model_stem = suite.substr(0, suite.size() - 5) + "_tiny_dit";  // <name>_tiny -> DiT file
    f.cases = std::move(cases);
    return f;
}

// Ovis-Image is a FLUX-style DiT: reference images join its sequence as Kontext's do, and its
// shift is FLUX's mu from the image size.
TEST(ServerGoldenFamilies, OvisTxt2ImgAndImg2Img) {
    Family f = family("ovis_tiny", "O", "ovis_image", {"ovis_dpmpp2m_neg", "ovis_img2img"});
    f.ref_images = true;
    check_family(f);
}

// LongCat's shift 3 is FLUX's mu, so no fixed flow shift is listed. Reference images are taken
// even without a vision tower in the LLM file: they join the DiT's sequence as Kontext's do (the
// tower only adds them to the text, the edit mode).
TEST(ServerGoldenFamilies, LongCatTxt2Img) {
    Family f = family("longcat_tiny", "L", "longcat", {"longcat_dpmpp2m_neg"});
    f.ref_images = true;
    check_family(f);
}

// The edit mode: its references in extra_images (the LLM file holds the vision tower).
TEST(ServerGoldenFamilies, LongCatEditWithExtraImages) {
    Family f = family("longcat_tiny", "E", "longcat", {"longcat_edit_ref2_neg"});
    f.ref_images = true;
    check_family(f);
}

TEST(ServerGoldenFamilies, ErnieTxt2ImgAndImg2Img) {
    Family f = family("ernie_tiny", "", "ernie_image", {"ernie_dpmpp2m_neg", "ernie_img2img"});
    f.extra_args = {"--llm-tokenizer",
                    e2e::repo_suite_dir("ernie_tiny") + "/mistral_tokenizer.json"};
    f.flow_shift = 4.0;
    check_family(f);
}

TEST(ServerGoldenFamilies, AnimaTxt2ImgAndImg2Img) {
    Family f = family("anima_tiny", "A", "anima", {"anima_dpmpp2m_neg", "anima_img2img"});
    f.flow_shift = 3.0;
    check_family(f);
}

}  // namespace
}  // namespace ggdiff::server_test
