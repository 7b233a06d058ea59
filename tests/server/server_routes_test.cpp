// Every route of ggdiff-server against the real binary on the SD1 fixture: health while
// loading and when ready, the listing routes, txt2img equal to the CLI's image, the A1111
// info string and batch seeds, img2img, OpenAI generations and edits, sd-server's async
// jobs and their event stream, and the web page.
#include <set>

#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

TEST(ServerRoutes, HealthIs503WhileLoadingThen200) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({}, /*wait_ready=*/false);
    auto c = server.client();
    auto first = c.Get("/health");
    ASSERT_TRUE(first) << server.log();
    // The model takes well over the time it takes to answer: the first answer is "loading".
    EXPECT_EQ(first->status, 503) << first->body;
    EXPECT_EQ(body_json(first)["status"], "loading");
    EXPECT_FALSE(first->get_header_value("Retry-After").empty());
    // Generation routes say so too, in their API's shape.
    auto gen = post_json(c, "/v1/images/generations", {{"prompt", "x"}});
    ASSERT_TRUE(gen);
    if (gen->status != 200) {  // unless loading already finished
        EXPECT_EQ(gen->status, 503);
        EXPECT_TRUE(body_json(gen)["error"].contains("message"));
    }
    server.wait_until_ready();
    auto ready = c.Get("/health");
    ASSERT_TRUE(ready);
    EXPECT_EQ(ready->status, 200);
    EXPECT_EQ(body_json(ready)["status"], "ok");
}

TEST(ServerRoutes, ListingRoutes) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();

    json samplers = body_json(c.Get("/sdapi/v1/samplers"));
    ASSERT_TRUE(samplers.is_array());
    EXPECT_EQ(samplers.size(), 18u);
    bool found = false;
    for (const json& s : samplers) {
        ASSERT_TRUE(s.contains("name") && s.contains("aliases") && s.contains("options"));
        if (s["name"] == "DPM++ 2M SDE") {
            found = true;
            const auto aliases = s["aliases"].get<std::vector<std::string>>();
            EXPECT_NE(std::find(aliases.begin(), aliases.end(), "k_dpmpp_2m_sde"), aliases.end());
            EXPECT_NE(std::find(aliases.begin(), aliases.end(), "dpm++2m_sde"), aliases.end());
        }
    }
    EXPECT_TRUE(found) << samplers.dump();

    json schedulers = body_json(c.Get("/sdapi/v1/schedulers"));
    ASSERT_TRUE(schedulers.is_array());
    EXPECT_EQ(schedulers.size(), 12u);  // with flux, flux2 and logit_normal (Ideogram 4)
    EXPECT_EQ(schedulers[1]["name"], "karras");
    EXPECT_EQ(schedulers[1]["label"], "Karras");

    json models = body_json(c.Get("/sdapi/v1/sd-models"));
    ASSERT_EQ(models.size(), 1u);
    EXPECT_EQ(models[0]["model_name"], "sd1_mc32");
    EXPECT_EQ(models[0]["title"], "sd1_mc32.safetensors");

    json options = body_json(c.Get("/sdapi/v1/options"));
    EXPECT_EQ(options["sd_model_checkpoint"], "sd1_mc32.safetensors");
    EXPECT_EQ(options["samples_format"], "png");

    EXPECT_EQ(body_json(c.Get("/sdapi/v1/loras")), json::array());
    EXPECT_EQ(body_json(c.Get("/sdapi/v1/upscalers"))[0]["name"], "None");
    EXPECT_TRUE(body_json(c.Get("/sdapi/v1/latent-upscale-modes")).is_array());

    json progress = body_json(c.Get("/sdapi/v1/progress"));
    EXPECT_EQ(progress["progress"], 0.0);
    EXPECT_EQ(progress["state"]["job_count"], 0);
    EXPECT_TRUE(progress.contains("eta_relative"));
    auto interrupt = c.Post("/sdapi/v1/interrupt", "", "application/json");
    ASSERT_TRUE(interrupt);
    EXPECT_EQ(interrupt->status, 200);
    EXPECT_EQ(body_json(interrupt)["interrupted"], false);

    json oai = body_json(c.Get("/v1/models"));
    EXPECT_EQ(oai["object"], "list");
    EXPECT_EQ(oai["data"][0]["id"], "sd1_mc32");

    json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    EXPECT_EQ(caps["model"]["stem"], "sd1_mc32");
    EXPECT_EQ(caps["model"]["family"], "SD1");
    EXPECT_EQ(caps["current_mode"], "img_gen");
    EXPECT_EQ(caps["supported_modes"], json::array({"img_gen", "vid_gen"}));
    EXPECT_EQ(caps["features"]["cancel_generating"], true);
    // No --control-net: no control images, and a request with one is refused, naming it.
    EXPECT_EQ(caps["features"]["control_image"], false);
    auto control = post_json(c, "/sdcpp/v1/img_gen", {{"prompt", "x"}, {"control_image", "AAAA"}});
    ASSERT_TRUE(control);
    EXPECT_EQ(control->status, 400);
    EXPECT_NE(control->body.find("control_image"), std::string::npos) << control->body;
    EXPECT_NE(control->body.find("--control-net"), std::string::npos) << control->body;
    EXPECT_EQ(caps["limits"]["max_queue_size"], 16);
    EXPECT_EQ(caps["samplers"].size(), 18u);
    EXPECT_EQ(caps["defaults_by_mode"]["img_gen"]["sample_params"]["sample_steps"], 20);
    EXPECT_TRUE(caps["defaults"]["sample_params"]["sample_method"].is_null())
        << "the model decides";
    // The per-request options of the engine's schema, for clients that build forms.
    bool eta = false;
    for (const json& o : caps["options"]) {
        EXPECT_NE(o["type"], "path") << "no file paths from requests: " << o.dump();
        if (o["name"] == "eta") eta = o["type"] == "number";
        if (o["name"] == "sampling-method") {
            EXPECT_EQ(o["values"].size(), 18u);
        }
    }
    EXPECT_TRUE(eta) << caps["options"].dump();
    EXPECT_EQ(body_json(c.Get("/sdcpp/v1/jobs"))["jobs"], json::array());

    auto page = c.Get("/");
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
    EXPECT_NE(page->body.find("<title>ggdiff</title>"), std::string::npos);
    EXPECT_NE(page->body.find("/sdcpp/v1/img_gen"), std::string::npos);
}

// Started with a ControlNet, the server says it takes control images.
TEST(ServerRoutes, ControlImageCapabilityFollowsTheControlNet) {
    if (!e2e::prerequisites_ok()) return;
    const std::string control_net =
        std::string(GGDIFF_BINARY_DIR) + "/fixtures/controlnet_sd1_mc32.safetensors";
    ServerProcess server({"--control-net", control_net});
    auto c = server.client();
    json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    EXPECT_EQ(caps["features"]["control_image"], true) << caps.dump();
}

TEST(ServerRoutes, Txt2ImgImageEqualsTheCliImage) {
    if (!e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir();
    std::vector<std::string> args = e2e::model_args();
    const std::vector<std::string> gen = {"-p",
                                          "a red cube on a table",
                                          "-n",
                                          "blurry",
                                          "-W",
                                          "64",
                                          "-H",
                                          "64",
                                          "--steps",
                                          "3",
                                          "--sampling-method",
                                          "euler",
                                          "--cfg-scale",
                                          "6.5",
                                          "-s",
                                          "1234",
                                          "-o",
                                          dir + "/cli.png"};
    args.insert(args.end(), gen.begin(), gen.end());
    const e2e::RunResult cli = e2e::run_ggdiff(args, dir);
    ASSERT_TRUE(cli.succeeded()) << cli.describe();

    ServerProcess server({});
    auto c = server.client();
    auto r = post_json(c, "/sdapi/v1/txt2img",
                       {{"prompt", "a red cube on a table"},
                        {"negative_prompt", "blurry"},
                        {"width", 64},
                        {"height", 64},
                        {"steps", 3},
                        {"sampler_name", "Euler"},
                        {"cfg_scale", 6.5},
                        {"seed", 1234}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 500);
    json body = body_json(r);
    ASSERT_EQ(body["images"].size(), 1u);
    std::string params;
    Image served = decode_b64_image(body["images"][0], &params);
    auto reference = read_image(dir + "/cli.png");
    ASSERT_TRUE(reference.ok());
    ASSERT_EQ(served.width, 64);
    ASSERT_EQ(served.height, 64);
    EXPECT_EQ(served.pixels, reference->pixels) << "the server's image differs from the CLI's";
    auto cli_params = read_image_parameters(dir + "/cli.png");
    ASSERT_TRUE(cli_params.ok());
    EXPECT_EQ(params, *cli_params);
}

TEST(ServerRoutes, A1111InfoStringAndBatchSeeds) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();
    auto r = post_json(c, "/sdapi/v1/txt2img",
                       {{"prompt", "a lighthouse"},
                        {"negative_prompt", "fog"},
                        {"width", 64},
                        {"height", 64},
                        {"steps", 2},
                        {"sampler_name", "DPM++ 2M SDE"},
                        {"scheduler", "karras"},
                        {"cfg_scale", 5},
                        {"seed", 100},
                        {"batch_size", 2},
                        {"n_iter", 1},
                        {"override_settings", {{"CLIP_stop_at_last_layers", 2}}}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 500);
    json body = body_json(r);
    ASSERT_TRUE(body["info"].is_string()) << "info must be a JSON string";
    json info = json::parse(body["info"].get<std::string>());
    std::set<std::string> keys;
    for (auto it = info.begin(); it != info.end(); ++it) keys.insert(it.key());
    const std::set<std::string> expected = {"prompt",        "negative_prompt",
                                            "seed",          "cfg_scale",
                                            "width",         "height",
                                            "steps",         "sampler_name",
                                            "clip_skip",     "extra_generation_params",
                                            "sd_model_name", "sd_vae_name",
                                            "version",       "infotexts",
                                            "all_prompts",   "all_negative_prompts",
                                            "all_seeds"};
    EXPECT_EQ(keys, expected) << info.dump(2);
    EXPECT_EQ(info["prompt"], "a lighthouse");
    EXPECT_EQ(info["negative_prompt"], "fog");
    EXPECT_EQ(info["seed"], 100);
    EXPECT_EQ(info["cfg_scale"], 5.0);
    EXPECT_EQ(info["width"], 64);
    EXPECT_EQ(info["height"], 64);
    EXPECT_EQ(info["steps"], 2);
    EXPECT_EQ(info["sampler_name"], "DPM++ 2M SDE");
    EXPECT_EQ(info["clip_skip"], 2);
    EXPECT_EQ(info["extra_generation_params"], json({{"Schedule type", "Karras"}}));
    EXPECT_EQ(info["sd_model_name"], "sd1_mc32");
    EXPECT_TRUE(info["sd_vae_name"].is_null());
    EXPECT_EQ(info["all_seeds"], json::array({100, 101}));
    EXPECT_EQ(info["all_prompts"], json::array({"a lighthouse", "a lighthouse"}));
    EXPECT_EQ(info["all_negative_prompts"], json::array({"fog", "fog"}));
    ASSERT_EQ(body["images"].size(), 2u);
    ASSERT_EQ(info["infotexts"].size(), 2u);
    for (int i = 0; i < 2; ++i) {
        std::string params;
        decode_b64_image(body["images"][i], &params);
        EXPECT_EQ(params, info["infotexts"][i].get<std::string>());
        EXPECT_NE(params.find("Seed: " + std::to_string(100 + i) + ","), std::string::npos)
            << params;
        EXPECT_NE(params.find("Sampler: DPM++ 2M SDE"), std::string::npos) << params;
    }
    // The A1111 parameters echo the request.
    EXPECT_EQ(body["parameters"]["seed"], 100);

    // The k-diffusion alias picks the same sampler.
    json alias = body_json(post_json(c, "/sdapi/v1/txt2img",
                                     {{"prompt", "x"},
                                      {"width", 64},
                                      {"height", 64},
                                      {"steps", 1},
                                      {"sampler_name", "k_dpmpp_2m_sde"},
                                      {"seed", 3}}));
    EXPECT_EQ(json::parse(alias["info"].get<std::string>())["sampler_name"], "DPM++ 2M SDE");
}

TEST(ServerRoutes, Img2ImgAndOptions) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();
    // samples_format applies to later responses.
    auto set = post_json(c, "/sdapi/v1/options", {{"samples_format", "webp"}});
    ASSERT_TRUE(set);
    ASSERT_EQ(set->status, 200) << set->body;
    EXPECT_EQ(body_json(c.Get("/sdapi/v1/options"))["samples_format"], "webp");

    json t2i = body_json(post_json(
        c, "/sdapi/v1/txt2img",
        {{"prompt", "a house"}, {"width", 64}, {"height", 64}, {"steps", 2}, {"seed", 5}}));
    ASSERT_EQ(t2i["images"].size(), 1u);
    const std::string init = t2i["images"][0];
    auto bytes = base64_decode(init);
    ASSERT_TRUE(bytes.ok());
    ASSERT_GE(bytes->size(), 12u);
    EXPECT_EQ(std::string(bytes->begin() + 8, bytes->begin() + 12), "WEBP");

    auto r = post_json(c, "/sdapi/v1/img2img",
                       {{"prompt", "a house at night"},
                        {"init_images", {"data:image/webp;base64," + init}},
                        {"denoising_strength", 0.5},
                        {"width", 64},
                        {"height", 64},
                        {"steps", 4},
                        {"seed", 6}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 500);
    json body = body_json(r);
    json info = json::parse(body["info"].get<std::string>());
    EXPECT_EQ(info["denoising_strength"], 0.5);
    EXPECT_TRUE(body["parameters"]["init_images"].is_null()) << "init images are not echoed back";
    Image out = decode_b64_image(body["images"][0]);
    EXPECT_EQ(out.width, 64);
}

TEST(ServerRoutes, OpenAiGenerationsAndEdits) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();
    auto r = post_json(c, "/v1/images/generations",
                       {{"prompt", "a blue bird"},
                        {"n", 2},
                        {"size", "64x64"},
                        {"response_format", "b64_json"},
                        {"output_format", "jpeg"},
                        {"output_compression", 80},
                        {"model", "dall-e-3"},
                        {"seed", 7},
                        {"steps", 2},
                        {"negative_prompt", "grey"},
                        {"ggdiff", {{"rng", "cpu"}, {"cfg_scale", 5.5}}}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 500);
    json body = body_json(r);
    EXPECT_TRUE(body["created"].is_number_integer());
    EXPECT_EQ(body["output_format"], "jpeg");
    ASSERT_EQ(body["data"].size(), 2u);
    EXPECT_EQ(body["data"][0]["seed"], 7);
    EXPECT_EQ(body["data"][1]["seed"], 8);
    std::string params;
    Image img = decode_b64_image(body["data"][1]["b64_json"], &params);
    EXPECT_EQ(img.width, 64);
    EXPECT_NE(params.find("Seed: 8,"), std::string::npos) << params;
    // The "ggdiff" object carries any per-request engine option by its schema name.
    EXPECT_NE(params.find("RNG: cpu"), std::string::npos) << params;
    EXPECT_NE(params.find("CFG scale: 5.5"), std::string::npos) << params;

    // Edits: multipart with the image file; the size defaults to the image's.
    auto png = base64_decode(body_json(post_json(
        c, "/v1/images/generations",
        {{"prompt", "a cat"}, {"size", "64x64"}, {"steps", 1}, {"seed", 1}}))["data"][0]["b64_json"]
                                 .get<std::string>());
    ASSERT_TRUE(png.ok());
    httplib::MultipartFormDataItems items = {
        {"prompt", "a cat in the snow", "", ""},
        {"image", std::string(png->begin(), png->end()), "cat.png", "image/png"},
        {"steps", "2", "", ""},
        {"strength", "0.6", "", ""},
        {"seed", "9", "", ""}};
    auto edit = c.Post("/v1/images/edits", items);
    ASSERT_TRUE(edit);
    ASSERT_EQ(edit->status, 200) << edit->body.substr(0, 500);
    json eb = body_json(edit);
    ASSERT_EQ(eb["data"].size(), 1u);
    EXPECT_EQ(eb["size"], "64x64");
    std::string eparams;
    decode_b64_image(eb["data"][0]["b64_json"], &eparams);
    EXPECT_NE(eparams.find("Denoising strength: 0.6"), std::string::npos) << eparams;
}

TEST(ServerRoutes, AsyncJobsWithPollingAndEvents) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();
    auto r = post_json(c, "/sdcpp/v1/img_gen", small_job(3, 11));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 202) << r->body;
    json sub = body_json(r);
    const std::string id = sub["id"];
    EXPECT_EQ(sub["kind"], "img_gen");
    EXPECT_EQ(sub["poll_url"], "/sdcpp/v1/jobs/" + id);
    EXPECT_TRUE(sub["status"] == "queued" || sub["status"] == "generating");
    EXPECT_EQ(r->get_header_value("Location"), "/sdcpp/v1/jobs/" + id);

    // The event stream: progress events, then "completed" with the result.
    std::string events;
    auto ev = c.Get(("/sdcpp/v1/jobs/" + id + "/events").c_str(), [&](const char* data, size_t n) {
        events.append(data, n);
        return true;
    });
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->status, 200);
    EXPECT_NE(ev->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
    EXPECT_NE(events.find("event: progress"), std::string::npos) << events.substr(0, 2000);
    EXPECT_NE(events.find("\"phase\":\"sampling\""), std::string::npos);
    const size_t done = events.find("event: completed\ndata: ");
    ASSERT_NE(done, std::string::npos) << events.substr(0, 2000);
    json final_job = json::parse(events.substr(done + 23, events.find("\n\n", done) - done - 23));
    EXPECT_EQ(final_job["status"], "completed");

    json job = wait_job(c, id);
    EXPECT_EQ(job["status"], "completed");
    EXPECT_TRUE(job["started"].is_number_integer());
    EXPECT_TRUE(job["completed"].is_number_integer());
    EXPECT_EQ(job["progress"]["fraction"], 1.0);
    ASSERT_EQ(job["result"]["images"].size(), 1u);
    EXPECT_EQ(job["result"]["output_format"], "png");
    EXPECT_EQ(job["result"]["images"][0]["index"], 0);
    EXPECT_EQ(job["result"]["images"][0]["seed"], 11);
    EXPECT_EQ(job["result"]["images"][0]["b64_json"], final_job["result"]["images"][0]["b64_json"]);
    Image img = decode_b64_image(job["result"]["images"][0]["b64_json"]);
    EXPECT_EQ(img.width, 64);
    EXPECT_TRUE(job["error"].is_null());

    // A finished job is listed, so a client that lost its connection finds it.
    json list = body_json(c.Get("/sdcpp/v1/jobs"));
    ASSERT_EQ(list["jobs"].size(), 1u);
    EXPECT_EQ(list["jobs"][0]["id"], id);
    // Unknown ids: 404.
    auto missing = c.Get("/sdcpp/v1/jobs/job_doesnotexist");
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 404);
}

}  // namespace
}  // namespace ggdiff::server_test
