// --models-dir: the model library behind every API. Two different SD1-layout models (the test
// fixture and the built-in toy model) in a folder; requests switch between them as A1111
// clients do (options, override_settings), by the OpenAI `model` field and the native one, and
// each image is the CLI's for that model. The load test alternates the two with one model
// loaded at a time: every request answers, and the memory stays bounded.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>

#include "../golden/kontext_e2e.h"
#include "model_catalog.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

namespace fs = std::filesystem;

std::string toy_model() {
    return std::string(GGDIFF_SOURCE_DIR) + "/models/ggdiff-toy-shapes.safetensors";
}

// DIR/sd/mc32.safetensors (the fixture), DIR/toy.safetensors (the built-in model),
// DIR/VAE/kl-f8.safetensors (listed as a VAE), DIR/broken.safetensors (not a model), and a
// models.json bundle "toy-fast" with its own default steps over DIR/parts/toy.safetensors.
std::string make_models_dir(const std::string& base, bool broken = false) {
    const std::string dir = base + "/models";
    fs::create_directories(dir + "/sd");
    fs::create_directories(dir + "/VAE");
    fs::create_directories(dir + "/parts");
    fs::create_symlink(e2e::fixture_path(), dir + "/sd/mc32.safetensors");
    fs::create_symlink(toy_model(), dir + "/toy.safetensors");
    fs::create_symlink(toy_model(), dir + "/parts/toy.safetensors");
    fs::create_symlink(e2e::fixture_path(), dir + "/VAE/kl-f8.safetensors");
    if (broken) std::ofstream(dir + "/broken.safetensors") << "not a safetensors file";
    std::ofstream(dir + "/models.json") << R"({"models": [
        {"name": "toy-fast", "description": "the toy model at 3 steps",
         "files": {"model": "parts/toy.safetensors"}, "defaults": {"steps": 3}}]})";
    return dir;
}

// The CLI's image for `model` at the request below (64x64, euler, seed, steps).
Image cli_image(const std::string& model, const std::string& dir, int steps, int64_t seed,
                const std::string& vae = "") {
    const std::string out = dir + "/cli_" + fs::path(model).stem().string() + "_" +
                            std::to_string(steps) + "_" + std::to_string(seed) +
                            (vae.empty() ? "" : "_vae") + ".png";
    std::vector<std::string> args = e2e::with_flag_value(
        e2e::euler_request(steps, "7", "a red ring"), "-s", std::to_string(seed));
    args.insert(args.begin(), {"-m", model});
    args.insert(args.end(), {"-o", out});
    if (!vae.empty()) args.insert(args.end(), {"--vae", vae});
    const e2e::RunResult r = e2e::run_ggdiff(args, dir);
    EXPECT_TRUE(r.succeeded()) << r.describe();
    auto img = read_image(out);
    EXPECT_TRUE(img.ok());
    return img.ok() ? *img : Image{};
}

json a1111_request(int steps, int64_t seed) {
    return {{"prompt", "a red ring"}, {"width", 64},  {"height", 64},
            {"steps", steps},         {"seed", seed}, {"sampler_name", "Euler"},
            {"cfg_scale", 7}};
}

int64_t rss_kib(pid_t pid, const char* field = "VmRSS:") {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::strlen(field)));
    }
    return -1;
}

std::vector<std::string> titles(const json& list) {
    std::vector<std::string> out;
    for (const auto& m : list) out.push_back(m.value("title", ""));
    return out;
}

TEST(ServerModels, ListsTheFolderInEveryApi) {
    if (!e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir("ServerModels.lists");
    const std::string models = make_models_dir(dir);
    ServerProcess server({"--models-dir", models}, true, "", false);
    auto c = server.client();

    // A1111: the bundle first (models.json), then the files; parts and VAEs are not models.
    const json sd = body_json(c.Get("/sdapi/v1/sd-models"));
    EXPECT_EQ(titles(sd),
              (std::vector<std::string>{"toy-fast", "sd/mc32.safetensors", "toy.safetensors"}));
    ASSERT_EQ(sd.size(), 3u);
    EXPECT_EQ(sd[1]["model_name"], "sd/mc32");
    const json vaes = body_json(c.Get("/sdapi/v1/sd-vae"));
    ASSERT_EQ(vaes.size(), 1u);
    EXPECT_EQ(vaes[0]["model_name"], "kl-f8.safetensors");

    // OpenAI: ids are the names requests use.
    const json oa = body_json(c.Get("/v1/models"));
    ASSERT_EQ(oa["data"].size(), 3u);
    EXPECT_EQ(oa["data"][1]["id"], "sd/mc32");

    // Native: states; the first one is current and loaded at start.
    const json native = body_json(c.Get("/sdcpp/v1/models"));
    EXPECT_EQ(native["current"], "toy-fast");
    ASSERT_EQ(native["models"].size(), 3u);
    EXPECT_EQ(native["models"][0]["state"], "loaded");
    EXPECT_EQ(native["models"][0]["source"], "bundle");
    EXPECT_EQ(native["models"][0]["family"], "SD1");
    EXPECT_EQ(native["models"][1]["state"], "unloaded");
    EXPECT_EQ(native["max_loaded"], 1);
    // The bundle's default steps are what its requests start from.
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities?model=toy-fast"));
    EXPECT_EQ(caps["defaults"]["sample_params"]["sample_steps"], 3);
    const json options = body_json(c.Get("/sdapi/v1/options"));
    EXPECT_EQ(options["sd_model_checkpoint"], "toy-fast");
    EXPECT_EQ(options["sd_vae"], "Automatic");

    // A file added while the server runs shows after refresh-checkpoints.
    fs::create_symlink(toy_model(), models + "/sd/late.safetensors");
    EXPECT_EQ(body_json(c.Get("/sdapi/v1/sd-models")).size(), 3u);
    auto r = c.Post("/sdapi/v1/refresh-checkpoints", "", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(titles(body_json(c.Get("/sdapi/v1/sd-models"))),
              (std::vector<std::string>{"toy-fast", "sd/late.safetensors", "sd/mc32.safetensors",
                                        "toy.safetensors"}));

    // Unknown names are 400s naming the field, in each API's shape.
    r = post_json(c, "/sdapi/v1/options", {{"sd_model_checkpoint", "nope.safetensors"}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(body_json(r)["field"], "sd_model_checkpoint");
    json req = a1111_request(2, 1);
    req["override_settings"] = {{"sd_model_checkpoint", "missing"}};
    r = post_json(c, "/sdapi/v1/txt2img", req);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(body_json(r)["field"], "override_settings.sd_model_checkpoint");
    r = post_json(c, "/v1/images/generations", {{"prompt", "x"}, {"model", "missing"}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(body_json(r)["error"]["param"], "model");
    json native_req = small_job();
    native_req["model"] = "missing";
    r = post_json(c, "/sdcpp/v1/img_gen", native_req);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(body_json(r)["field"], "model");
    r = post_json(c, "/sdapi/v1/options", {{"sd_vae", "missing.safetensors"}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(body_json(r)["field"], "sd_vae");
}

// What an A1111 client does: list the checkpoints, switch with /options, generate while
// reading /progress with a live preview, switch back.
TEST(ServerModels, A1111ClientSwitchesModelsAndReadsPreviews) {
    if (!e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir("ServerModels.a1111");
    const std::string models = make_models_dir(dir);
    const Image toy = cli_image(toy_model(), dir, 12, 42);
    const Image mc32 = cli_image(e2e::fixture_path(), dir, 12, 42);
    ASSERT_NE(toy.pixels, mc32.pixels) << "the two models should draw different images";

    ServerProcess server({"--models-dir", models}, true, "", false);
    auto c = server.client();
    const json sd = body_json(c.Get("/sdapi/v1/sd-models"));
    ASSERT_EQ(sd.size(), 3u);
    const std::string toy_title = sd[2]["title"], mc32_title = sd[1]["title"];

    for (const auto& [title, expected] : std::vector<std::pair<std::string, const Image*>>{
             {mc32_title, &mc32}, {toy_title, &toy}}) {
        SCOPED_TRACE(title);
        // A1111 clients often send the title with the hash.
        auto r =
            post_json(c, "/sdapi/v1/options", {{"sd_model_checkpoint", title + " [0123456789]"}});
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body;
        EXPECT_EQ(body_json(c.Get("/sdapi/v1/options"))["sd_model_checkpoint"], title);

        // Progress with a preview while it runs (live previews every step).
        std::atomic<bool> done{false}, saw_preview{false};
        std::thread watcher([&] {
            auto pc = server.client();
            while (!done) {
                const json p = body_json(pc.Get("/sdapi/v1/progress"));
                if (p.is_object() && p["current_image"].is_string() &&
                    !p["current_image"].get<std::string>().empty()) {
                    const Image preview = decode_b64_image(p["current_image"]);
                    if (preview.width > 0) saw_preview = true;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        });
        json req = a1111_request(12, 42);
        req["override_settings"] = {{"show_progress_every_n_steps", 1}};
        r = post_json(c, "/sdapi/v1/txt2img", req);
        done = true;
        watcher.join();
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body.substr(0, 400);
        const json body = body_json(r);
        const Image served = decode_b64_image(body["images"][0]);
        EXPECT_EQ(served.pixels, expected->pixels) << "not the chosen model's image";
        EXPECT_TRUE(saw_preview) << "no current_image in /sdapi/v1/progress while sampling";
        const json info = json::parse(body["info"].get<std::string>());
        EXPECT_EQ(info["sd_model_name"], fs::path(title).stem().string());
    }

    // One request on another model (override_settings) leaves the current one as it was.
    json req = a1111_request(12, 42);
    req["override_settings"] = {{"sd_model_checkpoint", mc32_title}};
    auto r = post_json(c, "/sdapi/v1/txt2img", req);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 400);
    EXPECT_EQ(decode_b64_image(body_json(r)["images"][0]).pixels, mc32.pixels);
    EXPECT_EQ(body_json(c.Get("/sdapi/v1/options"))["sd_model_checkpoint"], toy_title);
}

// The OpenAI `model` field and the native one choose per request; with
// --max-loaded-models 2 both stay loaded, with 1 the older goes.
TEST(ServerModels, PerRequestModelsAndTheLoadedBound) {
    if (!e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir("ServerModels.lru");
    const std::string models = make_models_dir(dir);
    const Image toy = cli_image(toy_model(), dir, 2, 7);
    const Image mc32 = cli_image(e2e::fixture_path(), dir, 2, 7);
    for (int limit : {1, 2}) {
        SCOPED_TRACE("--max-loaded-models " + std::to_string(limit));
        ServerProcess server({"--models-dir", models, "--max-loaded-models", std::to_string(limit)},
                             true, "ServerModels.lru" + std::to_string(limit), false);
        auto c = server.client();
        auto r = post_json(c, "/v1/images/generations",
                           {{"prompt", "a red ring"},
                            {"model", "sd/mc32"},
                            {"size", "64x64"},
                            {"steps", 2},
                            {"seed", 7},
                            {"sampler", "euler"},
                            {"cfg_scale", 7}});
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body.substr(0, 400);
        EXPECT_EQ(decode_b64_image(body_json(r)["data"][0]["b64_json"]).pixels, mc32.pixels);

        json native = {
            {"prompt", "a red ring"},
            {"model", "toy.safetensors"},
            {"width", 64},
            {"height", 64},
            {"seed", 7},
            {"sample_params",
             {{"sample_method", "euler"}, {"sample_steps", 2}, {"guidance", {{"txt_cfg", 7}}}}}};
        r = post_json(c, "/sdcpp/v1/img_gen", native);
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 202) << r->body;
        const json job = wait_job(c, body_json(r)["id"]);
        ASSERT_EQ(job["status"], "completed") << job.dump().substr(0, 400);
        EXPECT_EQ(decode_b64_image(job["result"]["images"][0]["b64_json"]).pixels, toy.pixels);

        const json list = body_json(c.Get("/sdcpp/v1/models"));
        // The bundle loaded at start, then mc32, then toy: the newest `limit` stay.
        std::vector<std::string> expected = {"toy"};
        if (limit == 2) expected.push_back("sd/mc32");
        EXPECT_EQ(list["loaded"].get<std::vector<std::string>>(), expected) << list.dump();
        // The current model is still the first one: per-request choices do not switch it.
        EXPECT_EQ(list["current"], "toy-fast");
    }
}

// A model that cannot load fails its jobs with the reason; the server goes on serving.
TEST(ServerModels, ABrokenFileFailsItsJobOnly) {
    if (!e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir("ServerModels.broken");
    const std::string models = make_models_dir(dir, true);
    ServerProcess server({"--models-dir", models}, true, "", false);
    auto c = server.client();
    json req = small_job();
    req["model"] = "broken";
    auto r = post_json(c, "/sdcpp/v1/img_gen", req);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 202) << r->body;
    const json job = wait_job(c, body_json(r)["id"]);
    EXPECT_EQ(job["status"], "failed");
    EXPECT_EQ(job["error"]["code"], "model_load_failed");
    EXPECT_NE(job["error"]["message"].get<std::string>().find("broken.safetensors"),
              std::string::npos)
        << job.dump();
    const json list = body_json(c.Get("/sdcpp/v1/models"));
    bool found = false;
    for (const auto& m : list["models"]) {
        if (m["name"] != "broken") continue;
        found = true;
        EXPECT_EQ(m["state"], "failed");
        EXPECT_TRUE(m["error"].is_string());
    }
    EXPECT_TRUE(found);
    r = post_json(c, "/sdcpp/v1/img_gen", small_job());
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 202);
    EXPECT_EQ(wait_job(c, body_json(r)["id"])["status"], "completed");
}

// What the folder scan lists: a diffusers folder (model_index.json) is one model and its
// parts are not listed; hidden folders, the LoRA folder and other files are skipped; more
// than one entry with one name keeps the first and warns.
TEST(ServerModels, CatalogListsDiffusersFoldersOnce) {
    const std::string dir = e2e::fresh_dir("ServerModels.catalog");
    const std::string models = dir + "/models";
    for (const char* sub : {"pipe/unet", "pipe/vae", "pipe/text_encoder", ".cache", "loras", "x"})
        fs::create_directories(models + "/" + sub);
    std::ofstream(models + "/pipe/model_index.json") << "{}";
    for (const char* f : {"pipe/unet/diffusion_pytorch_model.safetensors",
                          "pipe/vae/diffusion_pytorch_model.safetensors", ".cache/a.safetensors",
                          "loras/style.safetensors", "x/notes.txt", "x/m.gguf", "x/m.safetensors",
                          "a.SAFETENSORS"}) {
        std::ofstream(models + "/" + f) << "x";
    }
    server::ServerConfig config;
    config.models_dir = models;
    config.lora_model_dir = models + "/loras";
    server::Catalog catalog;
    ASSERT_EQ(server::scan_catalog(config, &catalog), "");
    std::vector<std::string> names, sources;
    for (const auto& e : catalog.models) {
        names.push_back(e.name);
        sources.push_back(e.source);
    }
    EXPECT_EQ(names, (std::vector<std::string>{"a", "pipe", "x/m"}))
        << testing::PrintToString(names);
    EXPECT_EQ(sources, (std::vector<std::string>{"file", "folder", "file"}));
    ASSERT_EQ(catalog.warnings.size(), 1u);
    EXPECT_NE(catalog.warnings[0].find("x/m.safetensors"), std::string::npos)
        << catalog.warnings[0];
}

// models.json mistakes name the entry and key (the server exits 2 with this text at start);
// on refresh-checkpoints they are a 400 and the list stays as it was.
TEST(ServerModels, BadModelsJsonIsNamed) {
    if (!e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir("ServerModels.badjson");
    const std::string models = make_models_dir(dir);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"models": [{"name": "x", "files": {"model": "toy.safetensors"},
             "defaults": {"stepz": 3}}]})",
         "models.json models[0].defaults.stepz: not an option of the engine"},
        {R"({"models": [{"name": "x", "files": {"model": "missing.safetensors"}}]})",
         "models.json models[0].files.model: "},
        {R"({"models": [{"name": "x", "files": {"vae": "toy.safetensors"}}]})",
         "models.json models[0].files: needs \"model\" or \"diffusion-model\""},
        {R"({"models": [{"name": "x", "files": {"model": "toy.safetensors"},
             "options": {"steps": 3}}]})",
         "models.json models[0].options.steps: not a model option"},
        {R"({"models": [{"name": "x", "files": {"model": "toy.safetensors"}, "extra": 1}]})",
         "models.json models[0].extra: unknown key"},
        {R"({"models": [)", "models.json: not valid JSON"},
    };
    server::ServerConfig config;
    config.models_dir = models;
    for (const auto& [text, expected] : cases) {
        std::ofstream(models + "/models.json") << text;
        server::Catalog catalog;
        const std::string error = server::scan_catalog(config, &catalog);
        EXPECT_NE(error.find(expected), std::string::npos) << "error: " << error;
    }

    std::ofstream(models + "/models.json") << R"({"models": []})";
    ServerProcess server({"--models-dir", models}, true, "", false);
    auto c = server.client();
    const std::vector<std::string> before = titles(body_json(c.Get("/sdapi/v1/sd-models")));
    std::ofstream(models + "/models.json") << cases[0].first;
    auto r = c.Post("/sdapi/v1/refresh-checkpoints", "", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find("defaults.stepz"), std::string::npos) << r->body;
    EXPECT_EQ(titles(body_json(c.Get("/sdapi/v1/sd-models"))), before);
}

// Two models alternating from four clients at once with one loaded at a time: no request is
// lost, each image is its model's, and the resident memory after many swaps stays near what
// one round of both took (models are freed when they are unloaded).
TEST(ServerModels, LoadTestTwoModelsAlternating) {
    if (!e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir("ServerModels.load");
    const std::string models = make_models_dir(dir);
    const Image toy = cli_image(toy_model(), dir, 2, 3);
    const Image mc32 = cli_image(e2e::fixture_path(), dir, 2, 3);
    ServerProcess server({"--models-dir", models, "--max-loaded-models", "1"}, true, "", false);
    auto one = [&](const std::string& model) {
        auto c = server.client();
        json req = a1111_request(2, 3);
        req["override_settings"] = {{"sd_model_checkpoint", model}};
        auto r = post_json(c, "/sdapi/v1/txt2img", req);
        if (!r || r->status != 200) return std::string("no answer");
        const Image img = decode_b64_image(body_json(r)["images"][0]);
        return img.pixels == (model == "toy" ? toy.pixels : mc32.pixels) ? std::string("ok")
                                                                         : std::string("wrong");
    };
    ASSERT_EQ(one("toy"), "ok");
    ASSERT_EQ(one("sd/mc32"), "ok");
    const int64_t rss_after_one_round = rss_kib(server.pid());
    ASSERT_GT(rss_after_one_round, 0);

    constexpr int kClients = 4, kPerClient = 5;
    std::vector<std::string> outcomes(kClients * kPerClient);
    std::vector<std::thread> clients;
    for (int t = 0; t < kClients; ++t) {
        clients.emplace_back([&, t] {
            for (int i = 0; i < kPerClient; ++i)
                outcomes[t * kPerClient + i] = one((t + i) % 2 ? "toy" : "sd/mc32");
        });
    }
    for (auto& t : clients) t.join();
    for (size_t i = 0; i < outcomes.size(); ++i) EXPECT_EQ(outcomes[i], "ok") << "request " << i;
    const int64_t rss_end = rss_kib(server.pid());
    const int64_t fixture_kib =
        static_cast<int64_t>(fs::file_size(e2e::fixture_path()) + fs::file_size(toy_model())) /
        1024;
    // Twenty requests and many swaps later: within one copy of both models' weights.
    EXPECT_LT(rss_end, rss_after_one_round + fixture_kib)
        << "RSS " << rss_after_one_round << " KiB after one round, " << rss_end
        << " KiB after the load test";
    EXPECT_LE(body_json(server.client().Get("/sdcpp/v1/models"))["loaded"].size(), 1u);
}

// Checks that depend on the model's family wait for a model that never loaded: FLUX.1
// Kontext's reference images work on its first request (the golden edit), and a plain SD model
// given reference images fails that job, naming the field; once a model has loaded, the same
// mistake is a 400 at once.
TEST(ServerModels, ReferenceImagesForModelsNotLoadedYet) {
    namespace kontext = e2e::kontext;
    if (!e2e::prerequisites_ok() || !kontext::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir("ServerModels.refs");
    const std::string models = make_models_dir(dir);
    const json bundle = {{"models",
                          {{{"name", "kontext"},
                            {"files",
                             {{"diffusion-model", kontext::dit()},
                              {"clip_l", kontext::clip_l()},
                              {"t5xxl", kontext::t5()},
                              {"vae", kontext::vae()},
                              {"t5xxl-tokenizer", kontext::t5_tokenizer()}}}}}}};
    std::ofstream(models + "/models.json") << bundle.dump();
    // -m: the fixture is the current model (listed first, loaded at start).
    ServerProcess server({"--models-dir", models}, true, "", true);
    auto c = server.client();
    EXPECT_EQ(body_json(c.Get("/sdcpp/v1/models"))["current"], "sd1_mc32");

    const std::vector<std::string> golden = kontext::case_outputs("kontext_ref1");
    ASSERT_EQ(golden.size(), 1u);
    json body = {{"prompt", "make the red circle green"},
                 {"width", 64},
                 {"height", 64},
                 {"steps", 4},
                 {"sampler_name", "Euler"},
                 {"cfg_scale", 1},
                 {"seed", 42},
                 {"extra_images", {base64_encode(read_bytes(kontext::ref_shapes()))}},
                 {"override_settings", {{"sd_model_checkpoint", "kontext"}}}};
    std::vector<std::vector<uint8_t>> edits;
    for (int i = 0; i < 2; ++i) {  // not loaded yet, then loaded
        auto r = post_json(c, "/sdapi/v1/txt2img", body);
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body.substr(0, 400) << server.log();
        edits.push_back(decode_b64_image(body_json(r)["images"][0]).pixels);
    }
    EXPECT_EQ(edits[0], edits[1]);
    auto g = read_image(golden.front());
    ASSERT_TRUE(g.ok());
    const Image gold = g->channels == 3 ? *g : convert_channels(*g, 3);
    ASSERT_EQ(gold.pixels.size(), edits[0].size());
    double sum = 0;
    for (size_t i = 0; i < gold.pixels.size(); ++i)
        sum += std::abs(int(gold.pixels[i]) - int(edits[0][i]));
    EXPECT_LT(sum / static_cast<double>(gold.pixels.size()), kontext::tolerance());

    // "toy" never loaded: the job fails once it has, naming the field (a 400 still: the
    // request is at fault).
    body["override_settings"] = {{"sd_model_checkpoint", "toy"}};
    auto r = post_json(c, "/sdapi/v1/txt2img", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find("extra_images[0]: this model takes no reference images"),
              std::string::npos)
        << r->body;
    // Now it is known: a 400 before any work.
    r = post_json(c, "/sdapi/v1/txt2img", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(body_json(r)["field"], "extra_images");
}

// --models-memory-mb by the planner's figures: the fixture's weights and compute buffers at
// its default size are over 1000 MiB, so with that budget the second model unloads the first
// even though two may stay loaded by count.
TEST(ServerModels, MemoryBudgetUnloadsTheOlder) {
    if (!e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir("ServerModels.memory");
    const std::string models = make_models_dir(dir);
    ServerProcess server(
        {"--models-dir", models, "--max-loaded-models", "2", "--models-memory-mb", "1000"}, true,
        "", false);
    auto c = server.client();
    for (const char* model : {"sd/mc32", "toy", "sd/mc32"}) {
        json req = small_job();
        req["model"] = model;
        auto r = post_json(c, "/sdcpp/v1/img_gen", req);
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 202) << r->body;
        EXPECT_EQ(wait_job(c, body_json(r)["id"])["status"], "completed");
        const json list = body_json(c.Get("/sdcpp/v1/models"));
        EXPECT_EQ(list["loaded"], json::array({model})) << list.dump();
        EXPECT_LE(list["memory_used_bytes"].get<int64_t>(), 1000ll << 20 << 2);
    }
    EXPECT_NE(server.stderr_text().find("--models-memory-mb"), std::string::npos) << server.log();
}

// Per-request LoRA (a prompt tag, the sd-server lora field) on a library model: applied
// without loading the model again; LoRA files added while the server runs are offered.
TEST(ServerModels, PerRequestLoraKeepsTheModelLoaded) {
    if (!e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir("ServerModels.lora");
    const std::string models = make_models_dir(dir);
    // The LoRA folder (copies: the folder lists regular files, not links): kohya now, locon
    // added while the server runs.
    const std::string fixtures = std::string(GGDIFF_BINARY_DIR) + "/fixtures/sd1_lora_loras";
    const std::string loras = dir + "/loras";
    fs::create_directories(loras);
    fs::copy_file(fixtures + "/kohya.safetensors", loras + "/kohya.safetensors");
    ServerProcess server({"--models-dir", models, "--lora-model-dir", loras}, true, "", false);
    auto c = server.client();
    std::vector<std::vector<uint8_t>> images;
    for (const std::string& tag :
         {std::string(""), std::string("<lora:kohya:1>"), std::string("")}) {
        json req = a1111_request(2, 5);
        req["prompt"] = "a red ring" + tag;
        req["override_settings"] = {{"sd_model_checkpoint", "sd/mc32"}};
        auto r = post_json(c, "/sdapi/v1/txt2img", req);
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
        images.push_back(decode_b64_image(body_json(r)["images"][0]).pixels);
    }
    EXPECT_NE(images[0], images[1]) << "the LoRA changed nothing";
    EXPECT_EQ(images[0], images[2]) << "the LoRA stayed applied after its request";
    // The sd-server `lora` field too.
    json native = small_job(2, 5);
    native["model"] = "sd/mc32";
    native["lora"] = {{{"path", "kohya"}, {"multiplier", 1.0}}};
    auto r = post_json(c, "/sdcpp/v1/img_gen", native);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 202) << r->body;
    EXPECT_EQ(wait_job(c, body_json(r)["id"])["status"], "completed");
    // /sdapi/v1/loras reads the folder on each call: a file added now is listed and usable.
    EXPECT_EQ(body_json(c.Get("/sdapi/v1/loras")).size(), 1u);
    fs::copy_file(fixtures + "/locon.safetensors", loras + "/locon.safetensors");
    const json listed = body_json(c.Get("/sdapi/v1/loras"));
    ASSERT_EQ(listed.size(), 2u) << listed.dump();
    EXPECT_EQ(listed[1]["name"], "locon");
    json with_locon = a1111_request(2, 5);
    with_locon["prompt"] = "a red ring<lora:locon:1>";
    with_locon["override_settings"] = {{"sd_model_checkpoint", "sd/mc32"}};
    r = post_json(c, "/sdapi/v1/txt2img", with_locon);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
    EXPECT_NE(decode_b64_image(body_json(r)["images"][0]).pixels, images[0]);
    const std::string log = server.stderr_text();
    size_t loads = 0;
    for (size_t p = log.find("loading sd/mc32..."); p != std::string::npos;
         p = log.find("loading sd/mc32...", p + 1)) {
        ++loads;
    }
    EXPECT_EQ(loads, 1u) << server.log();
}

// A1111's sd_vae: a file of the VAE folder replaces the model's own VAE (the model loads
// again with it); "Automatic" goes back to the model's own.
TEST(ServerModels, SdVaeSwapsTheVae) {
    if (!e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir("ServerModels.vae");
    const std::string models = make_models_dir(dir);
    fs::create_symlink(toy_model(), models + "/VAE/toy-vae.safetensors");
    const Image own = cli_image(e2e::fixture_path(), dir, 2, 9);
    const Image swapped = cli_image(e2e::fixture_path(), dir, 2, 9, toy_model());
    ASSERT_NE(own.pixels, swapped.pixels) << "the two VAEs should decode differently";
    ServerProcess server({"--models-dir", models}, true, "", false);
    auto c = server.client();
    EXPECT_EQ(body_json(c.Get("/sdapi/v1/sd-vae")).size(), 2u);
    for (const auto& [vae, expected] : std::vector<std::pair<std::string, const Image*>>{
             {"toy-vae.safetensors", &swapped}, {"Automatic", &own}}) {
        SCOPED_TRACE(vae);
        auto r = post_json(c, "/sdapi/v1/options",
                           {{"sd_model_checkpoint", "sd/mc32.safetensors"}, {"sd_vae", vae}});
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body;
        EXPECT_EQ(body_json(c.Get("/sdapi/v1/options"))["sd_vae"], vae);
        r = post_json(c, "/sdapi/v1/txt2img", a1111_request(2, 9));
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
        const json body = body_json(r);
        EXPECT_EQ(decode_b64_image(body["images"][0]).pixels, expected->pixels);
        const json info = json::parse(body["info"].get<std::string>());
        if (vae == "Automatic") {
            EXPECT_TRUE(info["sd_vae_name"].is_null()) << info.dump();
        } else {
            EXPECT_EQ(info["sd_vae_name"], "toy-vae") << info.dump();
        }
    }
}

// A job on a model that is not loaded waits in the state "loading" (its event stream shows
// it) and then generates.
TEST(ServerModels, JobsWaitInTheLoadingState) {
    if (!e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir("ServerModels.loading");
    const std::string models = make_models_dir(dir);
    ServerProcess server({"--models-dir", models}, true, "", false);
    auto c = server.client();
    // A job on the loaded model holds the queue while the next one's stream connects.
    auto r = post_json(c, "/sdcpp/v1/img_gen", small_job(20, 1));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 202) << r->body;
    json req = small_job(2, 1);
    req["model"] = "sd/mc32";
    r = post_json(c, "/sdcpp/v1/img_gen", req);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 202) << r->body;
    const std::string id = body_json(r)["id"];
    std::vector<std::string> statuses;
    std::string events;
    auto ev = c.Get(("/sdcpp/v1/jobs/" + id + "/events").c_str(), [&](const char* data, size_t n) {
        events.append(data, n);
        return true;
    });
    ASSERT_TRUE(ev);
    for (size_t p = events.find("\"status\":\""); p != std::string::npos;
         p = events.find("\"status\":\"", p + 1)) {
        const size_t b = p + 10;
        const std::string s = events.substr(b, events.find('"', b) - b);
        if (statuses.empty() || statuses.back() != s) statuses.push_back(s);
    }
    const auto at = [&](const std::string& s) {
        return std::find(statuses.begin(), statuses.end(), s) - statuses.begin();
    };
    ASSERT_LT(static_cast<size_t>(at("loading")), statuses.size()) << events.substr(0, 3000);
    EXPECT_LT(at("queued"), at("loading"));
    EXPECT_LT(at("loading"), at("generating"));
    EXPECT_EQ(statuses.back(), "completed");
}

}  // namespace
}  // namespace ggdiff::server_test
