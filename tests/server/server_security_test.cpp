// Flags and security: --help and bad command lines, the API key (Bearer, X-Api-Key, Basic;
// /health open), CORS only for the given origins, size limits (413), LoRA names only from
// --lora-model-dir's listing, the warning for a non-loopback address, request logging.
#include <fstream>

#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

struct CliRun {
    int exit_code = -1;
    std::string out, err;
};

// `env`: "NAME=value ..." set for this run only.
CliRun run_server_cli(const std::vector<std::string>& args, const std::string& env = "") {
    const std::string dir = e2e::fresh_dir();
    std::string cmd = (env.empty() ? "" : "env " + env + " ") + server_binary();
    for (const auto& a : args) cmd += " '" + a + "'";
    cmd += " > " + dir + "/out 2> " + dir + "/err";
    CliRun r;
    const int status = std::system(cmd.c_str());
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = e2e::read_text(dir + "/out");
    r.err = e2e::read_text(dir + "/err");
    return r;
}

TEST(ServerFlags, HelpListsEveryFlagAndBadCommandLinesFail) {
    const CliRun help = run_server_cli({"--help"});
    EXPECT_EQ(help.exit_code, 0);
    for (const char* flag :
         {"--host",           "--port",        "--api-key",        "--api-key-file",
          "--max-queue",      "--result-ttl",  "--max-results-mb", "--lora-model-dir",
          "--cors-origin",    "--max-body-mb", "--max-size",       "--max-upload-pixels",
          "--max-batch",      "--max-steps",   "--verbose",        "--help",
          "--version",        "-m, --model",   "--backend",        "--steps",
          "--sampling-method"}) {
        EXPECT_NE(help.out.find(flag), std::string::npos) << flag << " missing from --help";
    }
    const CliRun version = run_server_cli({"--version"});
    EXPECT_EQ(version.exit_code, 0);
    EXPECT_EQ(version.out.rfind("ggdiff-server ", 0), 0u) << version.out;

    const CliRun unknown = run_server_cli({"-m", "x.safetensors", "--no-such-flag", "1"});
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_NE(unknown.err.find("--no-such-flag"), std::string::npos) << unknown.err;
    // Without -m the built-in model is served; when it is missing the server says so at once.
    const CliRun no_model =
        run_server_cli({"--port", "0"}, "GGDIFF_DEFAULT_MODEL=/nonexistent/toy.safetensors");
    EXPECT_EQ(no_model.exit_code, 2);
    EXPECT_NE(no_model.err.find("no model given"), std::string::npos) << no_model.err;
    EXPECT_NE(no_model.err.find("/nonexistent/toy.safetensors"), std::string::npos) << no_model.err;
    const CliRun bad_port = run_server_cli({"-m", "x", "--port", "http"});
    EXPECT_EQ(bad_port.exit_code, 2);
    EXPECT_NE(bad_port.err.find("--port"), std::string::npos) << bad_port.err;
    const CliRun bad_value = run_server_cli({"-m", "x", "--steps", "many"});
    EXPECT_EQ(bad_value.exit_code, 2);
    EXPECT_NE(bad_value.err.find("steps"), std::string::npos) << bad_value.err;
    const CliRun cli_only = run_server_cli({"-m", "x", "-o", "out.png"});
    EXPECT_EQ(cli_only.exit_code, 2);
    EXPECT_NE(cli_only.err.find("has no use in ggdiff-server"), std::string::npos) << cli_only.err;
    const CliRun per_request = run_server_cli({"-m", "x", "--mask", "m.png"});
    EXPECT_EQ(per_request.exit_code, 2);
    EXPECT_NE(per_request.err.find("requests carry their images"), std::string::npos)
        << per_request.err;
    const CliRun not_yet = run_server_cli({"-m", "x", "--tensor-type-rules", "^vae=f16"});
    EXPECT_EQ(not_yet.exit_code, 2);
    EXPECT_NE(not_yet.err.find("not supported yet"), std::string::npos) << not_yet.err;
    const CliRun no_key = run_server_cli({"-m", "x", "--api-key-file", "/nonexistent/key"});
    EXPECT_EQ(no_key.exit_code, 2);
    // A model that cannot be loaded ends the server with an error.
    const CliRun missing = run_server_cli({"-m", "/nonexistent/model.safetensors", "--port", "0"});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("/nonexistent/model.safetensors"), std::string::npos) << missing.err;
}

TEST(ServerSecurity, KeyCorsLimitsLoraAndHost) {
    if (!e2e::prerequisites_ok()) return;
    const std::string dir = e2e::fresh_dir();
    {
        std::ofstream(dir + "/key") << "s3cret-key\n";
        std::filesystem::create_directories(dir + "/loras/styles");
        std::ofstream(dir + "/loras/ink.safetensors") << "x";
        std::ofstream(dir + "/loras/styles/paper.safetensors") << "x";
        std::ofstream(dir + "/loras/readme.txt") << "x";
        // Linked in from a store outside the folder: a file, a folder, a link to nothing and a
        // folder linked into itself.
        std::filesystem::create_directories(dir + "/store/set");
        std::ofstream(dir + "/store/linked.safetensors") << "x";
        std::ofstream(dir + "/store/set/moon.safetensors") << "x";
        std::filesystem::create_symlink(dir + "/store/linked.safetensors",
                                        dir + "/loras/linked.safetensors");
        std::filesystem::create_directory_symlink(dir + "/store/set", dir + "/loras/set");
        std::filesystem::create_symlink(dir + "/store/gone.safetensors",
                                        dir + "/loras/gone.safetensors");
        std::filesystem::create_directory_symlink(dir + "/loras/styles",
                                                  dir + "/loras/styles/again");
    }
    ServerProcess server({"--host",
                          "0.0.0.0",
                          "--api-key-file",
                          dir + "/key",
                          "--cors-origin",
                          "http://allowed.example",
                          "--lora-model-dir",
                          dir + "/loras",
                          "--max-body-mb",
                          "1",
                          "--max-upload-pixels",
                          "1000",
                          "--max-size",
                          "128",
                          "--max-batch",
                          "2",
                          "--max-steps",
                          "10",
                          "-v",
                          "--disable-image-metadata"},
                         /*wait_ready=*/false);
    auto c = server.client();
    // /health needs no key.
    server.wait_until_ready();
    EXPECT_NE(server.stderr_text().find("warning: listening on 0.0.0.0"), std::string::npos)
        << server.log();

    const httplib::Headers bearer = {{"Authorization", "Bearer s3cret-key"}};
    auto none = c.Get("/sdapi/v1/samplers");
    ASSERT_TRUE(none);
    EXPECT_EQ(none->status, 401);
    EXPECT_NE(none->get_header_value("WWW-Authenticate").find("Bearer"), std::string::npos);
    EXPECT_EQ(c.Get("/sdapi/v1/samplers", {{"Authorization", "Bearer wrong"}})->status, 401);
    EXPECT_EQ(c.Get("/sdapi/v1/samplers", bearer)->status, 200);
    EXPECT_EQ(c.Get("/sdapi/v1/samplers", {{"X-Api-Key", "s3cret-key"}})->status, 200);
    auto oai = post_json(c, "/v1/images/generations", {{"prompt", "x"}});
    ASSERT_TRUE(oai);
    EXPECT_EQ(oai->status, 401);
    EXPECT_EQ(body_json(oai)["error"]["type"], "authentication_error");
    // The page asks browsers for the key (Basic, any user, the key as password).
    auto page = c.Get("/");
    EXPECT_EQ(page->status, 401);
    EXPECT_NE(page->get_header_value("WWW-Authenticate").find("Basic"), std::string::npos);
    EXPECT_EQ(c.Get("/", {httplib::make_basic_authentication_header("me", "s3cret-key")})->status,
              200);
    EXPECT_EQ(c.Get("/", {httplib::make_basic_authentication_header("me", "nope")})->status, 401);

    // CORS: only the given origin.
    auto pre = c.Options("/sdcpp/v1/img_gen", {{"Origin", "http://allowed.example"},
                                               {"Access-Control-Request-Method", "POST"}});
    ASSERT_TRUE(pre);
    EXPECT_EQ(pre->status, 204);
    EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "http://allowed.example");
    EXPECT_NE(pre->get_header_value("Access-Control-Allow-Headers").find("Authorization"),
              std::string::npos);
    auto other = c.Options("/sdcpp/v1/img_gen", {{"Origin", "http://evil.example"}});
    ASSERT_TRUE(other);
    EXPECT_EQ(other->status, 403);
    EXPECT_FALSE(other->has_header("Access-Control-Allow-Origin"));
    httplib::Headers allowed = bearer;
    allowed.emplace("Origin", "http://allowed.example");
    EXPECT_EQ(c.Get("/v1/models", allowed)->get_header_value("Access-Control-Allow-Origin"),
              "http://allowed.example");
    httplib::Headers evil = bearer;
    evil.emplace("Origin", "http://evil.example");
    EXPECT_FALSE(c.Get("/v1/models", evil)->has_header("Access-Control-Allow-Origin"));

    // Limits: body (413), upload pixels (413), size, batch and steps (400 naming the flag).
    const std::string big(2 << 20, 'a');
    auto too_big =
        c.Post("/sdapi/v1/txt2img", bearer, "{\"prompt\":\"" + big + "\"}", "application/json");
    ASSERT_TRUE(too_big);
    EXPECT_EQ(too_big->status, 413);
    // A real 64x64 PNG (4096 pixels, over the 1000-pixel limit).
    const std::string png_b64 =
        "iVBORw0KGgoAAAANSUhEUgAAAEAAAABACAIAAAAlC+"
        "aJAAAAeklEQVR4nO3PUQkAIBTAwBfFKEYzuiH8OITBAtzm7PV1"
        "wwUNaEEDWtCAFjSgBQ1oQQNa0IAWNKAFDWhBA1rQgBY0oAUNaEEDWtCAFjSgBQ1oQQNa0IAWNKAFDWhBA1rQgBY0oA"
        "UN"
        "aEEDWtCAFjSgBQ1oQQNa0IAWPHYB+/cA00BishIAAAAASUVORK5CYII=";
    auto upload = post_json(
        c, "/sdapi/v1/img2img",
        {{"prompt", "x"}, {"init_images", {png_b64}}, {"width", 64}, {"height", 64}}, bearer);
    ASSERT_TRUE(upload);
    EXPECT_EQ(upload->status, 413) << upload->body;
    EXPECT_NE(upload->body.find("init_images[0]"), std::string::npos) << upload->body;
    auto wide = post_json(c, "/sdapi/v1/txt2img", {{"prompt", "x"}, {"width", 256}}, bearer);
    EXPECT_EQ(wide->status, 400);
    EXPECT_NE(wide->body.find("--max-size"), std::string::npos) << wide->body;
    auto batch = post_json(c, "/sdapi/v1/txt2img", {{"prompt", "x"}, {"batch_size", 3}}, bearer);
    EXPECT_EQ(batch->status, 400);
    EXPECT_NE(batch->body.find("--max-batch"), std::string::npos) << batch->body;
    auto steps = post_json(c, "/sdapi/v1/txt2img", {{"prompt", "x"}, {"steps", 11}}, bearer);
    EXPECT_EQ(steps->status, 400);
    EXPECT_NE(steps->body.find("steps"), std::string::npos) << steps->body;

    // LoRA: the folder's own listing; names outside it are refused.
    json loras = body_json(c.Get("/sdapi/v1/loras", bearer));
    std::vector<std::string> names;
    for (const json& l : loras) names.push_back(l.value("name", ""));
    // The folder linked into itself is read once; the link to nothing is left out.
    ASSERT_EQ(names.size(), 4u) << loras.dump();
    EXPECT_EQ(names[0], "ink");
    EXPECT_EQ(names[1], "linked");
    EXPECT_EQ(loras[1]["path"], "linked.safetensors");
    EXPECT_EQ(names[2], "set/moon");
    EXPECT_EQ(names[3], "styles/paper");
    EXPECT_EQ(loras[3]["path"], "styles/paper.safetensors");
    auto escape = post_json(
        c, "/sdapi/v1/txt2img",
        {{"prompt", "x <lora:../../etc/passwd:1>"}, {"width", 64}, {"height", 64}}, bearer);
    EXPECT_EQ(escape->status, 400);
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities", bearer));
    auto use = post_json(
        c, "/sdapi/v1/txt2img",
        {{"prompt", "x <lora:ink:0.8>"}, {"width", 64}, {"height", 64}, {"steps", 1}}, bearer);
    if (caps["features"]["lora"] == false) {
        EXPECT_EQ(escape->body.find("unknown LoRA"), std::string::npos);
        EXPECT_NE(escape->body.find("not supported yet"), std::string::npos) << escape->body;
        EXPECT_EQ(use->status, 400);
        EXPECT_NE(use->body.find("not supported yet"), std::string::npos) << use->body;
        auto native =
            post_json(c, "/sdcpp/v1/img_gen",
                      {{"prompt", "x"}, {"lora", {{{"path", "ink"}, {"multiplier", 1}}}}}, bearer);
        EXPECT_EQ(native->status, 400);
        EXPECT_NE(native->body.find("not supported yet"), std::string::npos) << native->body;
    } else {
        EXPECT_NE(escape->body.find("unknown LoRA"), std::string::npos) << escape->body;
    }
    // --disable-image-metadata: images carry no parameters text.
    auto plain = post_json(
        c, "/sdapi/v1/txt2img",
        {{"prompt", "x"}, {"width", 64}, {"height", 64}, {"steps", 1}, {"seed", 1}}, bearer);
    ASSERT_TRUE(plain);
    ASSERT_EQ(plain->status, 200) << plain->body;
    std::string params = "unset";
    decode_b64_image(body_json(plain)["images"][0], &params);
    EXPECT_EQ(params, "");
    // -v logs requests.
    EXPECT_NE(server.stderr_text().find("GET /sdapi/v1/loras"), std::string::npos);
    EXPECT_EQ(c.Get("/health")->status, 200);
}

}  // namespace
}  // namespace ggdiff::server_test
