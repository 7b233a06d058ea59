// Runs the real ggdiff-server binary on a free loopback port (--port 0; the port is read from
// its "listening on" line) for HTTP tests, and stops it (SIGTERM, then SIGKILL) when the
// test ends, passes or fails.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../golden/e2e_support.h"
#include "core/base64.h"
#include "image/image_io.h"
#include "image/image_metadata.h"

extern char** environ;

namespace ggdiff::server_test {

namespace e2e = ggdiff::e2e;

// Records a failure (and returns false) unless the fixture files named by `stems` were made
// (ctest's fixture tests make them).
inline bool built_fixtures_present(std::initializer_list<const char*> stems) {
    for (const char* stem : stems) {
        const std::string f = e2e::built_fixture(stem);
        if (!std::filesystem::is_regular_file(f)) {
            ADD_FAILURE() << "missing " << f << " (run through ctest: its fixture tests make it)";
            return false;
        }
    }
    return true;
}
using nlohmann::json;

inline std::string server_binary() {
    return std::string(GGDIFF_BINARY_DIR) + "/ggdiff-server";
}

class ServerProcess {
  public:
    // Starts the server with the fixture model (without -m when with_model is false) plus
    // `extra` flags; waits until it listens (and, with wait_ready, until /health says 200).
    explicit ServerProcess(std::vector<std::string> extra, bool wait_ready = true,
                           std::string name = "", bool with_model = true) {
        if (name.empty()) {
            const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
            name = info ? std::string(info->test_suite_name()) + "." + info->name() : "server";
        }
        dir_ = e2e::fresh_dir(name + ".server");
        std::vector<std::string> args = {server_binary(), "--tokenizer", e2e::merges_path(),
                                         "--port", "0"};
        if (with_model) args.insert(args.begin() + 1, {"-m", e2e::fixture_path()});
        args.insert(args.end(), extra.begin(), extra.end());
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, (dir_ + "/stdout").c_str(),
                                         O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_addopen(&fa, 2, (dir_ + "/stderr").c_str(),
                                         O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) {
            pid_ = 0;
            ADD_FAILURE() << "cannot start " << server_binary();
            return;
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (std::chrono::steady_clock::now() < deadline && port_ == 0 && alive()) {
            const std::string out = e2e::read_text(dir_ + "/stdout");
            const size_t p = out.find("listening on http://");
            if (p != std::string::npos && out.find('\n', p) != std::string::npos) {
                port_ = std::stoi(out.substr(out.rfind(':', out.find('\n', p)) + 1));
            } else {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        }
        if (port_ == 0) {
            ADD_FAILURE() << "the server did not start listening\n" << log();
            return;
        }
        if (wait_ready) wait_until_ready();
    }

    ~ServerProcess() { stop(); }

    // Polls /health until 200; records a failure after 120 s.
    void wait_until_ready() {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
        while (std::chrono::steady_clock::now() < deadline && alive()) {
            auto r = client().Get("/health");
            if (r && r->status == 200) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        ADD_FAILURE() << "the server did not become ready\n" << log();
    }

    // SIGTERM, then SIGKILL after 20 s; returns the exit status (or -signal).
    int stop() {
        if (pid_ == 0 || !alive()) return exit_status_;
        kill(pid_, SIGTERM);
        int status = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        for (;;) {
            const pid_t w = waitpid(pid_, &status, WNOHANG);
            if (w == pid_) break;
            if (std::chrono::steady_clock::now() > deadline) {
                kill(pid_, SIGKILL);
                waitpid(pid_, &status, 0);
                ADD_FAILURE() << "the server did not stop on SIGTERM within 20 s";
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        pid_ = 0;
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        return exit_status_;
    }

    // Whether the server still runs (reaps it, keeping its exit status, when it ended).
    bool alive() {
        if (pid_ == 0) return false;
        int status = 0;
        const pid_t w = waitpid(pid_, &status, WNOHANG);
        if (w == 0) return true;
        if (w == pid_) exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        pid_ = 0;
        return false;
    }

    httplib::Client client() const {
        httplib::Client c("127.0.0.1", port_);
        c.set_connection_timeout(5);
        c.set_read_timeout(300);
        c.set_write_timeout(60);
        return c;
    }

    int port() const { return port_; }
    pid_t pid() const { return pid_; }
    std::string stdout_text() const { return e2e::read_text(dir_ + "/stdout"); }
    std::string stderr_text() const { return e2e::read_text(dir_ + "/stderr"); }
    std::string log() const {
        std::string err = stderr_text();
        if (err.size() > 4000) err = "..." + err.substr(err.size() - 4000);
        return "--- server stdout ---\n" + stdout_text() + "--- server stderr ---\n" + err;
    }
    const std::string& dir() const { return dir_; }

  private:
    pid_t pid_ = 0;
    int port_ = 0;
    int exit_status_ = 0;
    std::string dir_;
};

// The response body as JSON (a failure and null when it is not JSON).
inline json body_json(const httplib::Result& r) {
    if (!r) {
        ADD_FAILURE() << "no response: " << httplib::to_string(r.error());
        return nullptr;
    }
    json j = json::parse(r->body, nullptr, false);
    if (j.is_discarded()) {
        ADD_FAILURE() << "not JSON (" << r->status << "): " << r->body.substr(0, 300);
        return nullptr;
    }
    return j;
}

inline httplib::Result post_json(httplib::Client& c, const std::string& path, const json& body,
                                 const httplib::Headers& headers = {}) {
    return c.Post(path.c_str(), headers, body.dump(), "application/json");
}

// Decodes a base64 image from a response.
inline Image decode_b64_image(const std::string& b64, std::string* parameters = nullptr) {
    auto bytes = base64_decode(b64);
    if (!bytes.ok()) {
        ADD_FAILURE() << "bad base64 in response: " << bytes.status().message();
        return {};
    }
    auto img = decode_image(*bytes);
    if (!img.ok()) {
        ADD_FAILURE() << "response image does not decode: " << img.status().message();
        return {};
    }
    if (parameters) {
        auto p = decode_image_parameters(bytes->data(), bytes->size());
        *parameters = p.ok() && p->has_value() ? **p : "";
    }
    return *img;
}

// Posts the A1111 request `body` to `path` (e.g. /sdapi/v1/txt2img): it must give one image,
// within the suite's tolerance of `golden` (a PNG of a golden suite folder). Returns the
// image's infotext parameters ("" after a failure, recorded as such) and, with `image`, the
// decoded image (empty when none came) for the caller's own checks (its width and height).
inline std::string expect_a1111_golden(httplib::Client& c, const std::string& path,
                                       const json& body, const std::string& golden,
                                       const ServerProcess& server, Image* image = nullptr) {
    if (image) *image = {};
    auto r = post_json(c, path, body);
    if (!r || r->status != 200) {
        ADD_FAILURE() << (r ? r->body.substr(0, 1000) : httplib::to_string(r.error())) << "\n"
                      << server.log();
        return "";
    }
    const json j = body_json(r);
    if (j["images"].size() != 1u) {
        ADD_FAILURE() << "expected one image: " << r->body.substr(0, 500);
        return "";
    }
    std::string parameters;
    const Image img = decode_b64_image(j["images"][0], &parameters);
    if (image) *image = img;
    const std::string out = e2e::fresh_dir() + "/a1111.png";
    if (img.empty() || !write_image(out, img).ok()) {
        ADD_FAILURE() << "the response image could not be written to " << out;
        return "";
    }
    const std::filesystem::path g(golden);
    e2e::expect_images_near(out, golden, e2e::suite_tolerance(g.parent_path().string()),
                            (path + " vs " + g.stem().string()).c_str());
    return parameters;
}

// /sdcpp/v1/capabilities of a server started with one family's part files: it names the
// family (`family`, `family_id`, the DiT file's stem as the model) and the defaults each
// family's server test checks (euler, CFG 7, 512x512), LoRA support and the family among those
// built in. Returns the capabilities for the family's own checks.
inline json expect_family_capabilities(const ServerProcess& server, const std::string& family,
                                       const std::string& family_id, const std::string& stem) {
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    SCOPED_TRACE(caps.dump(1));
    EXPECT_EQ(caps["model"]["family"], family);
    EXPECT_EQ(caps["model"]["family_id"], family_id);
    EXPECT_EQ(caps["model"]["stem"], stem);
    const json& model = caps["model"]["defaults"];
    EXPECT_EQ(model["sample_method"], "euler");
    EXPECT_EQ(model["cfg_scale"], 7.0);
    EXPECT_EQ(model["width"], 512);
    EXPECT_EQ(model["height"], 512);
    EXPECT_EQ(caps["features"]["lora"], true);
    EXPECT_NE(caps["families"].dump().find("\"" + family_id + "\""), std::string::npos);
    return caps;
}

// The golden sets' <family>_dpmpp2m_neg case as an A1111 client sends it: a negative prompt
// at cfg 5, DPM++ 2M, 4 steps, seed 7, `width` x `height`.
inline json dpmpp2m_neg_request(int width, int height) {
    return {{"prompt", "a castle on a hill at sunset"},
            {"negative_prompt", "blurry, dark"},
            {"width", width},
            {"height", height},
            {"steps", 4},
            {"sampler_name", "DPM++ 2M"},
            {"cfg_scale", 5},
            {"seed", 7}};
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
    const std::string s = e2e::read_text(path);
    return {s.begin(), s.end()};
}

// Polls a job until it ends (or `timeout_s`); returns its last JSON.
inline json wait_job(httplib::Client& c, const std::string& id, int timeout_s = 300) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    json j;
    while (std::chrono::steady_clock::now() < deadline) {
        j = body_json(c.Get(("/sdcpp/v1/jobs/" + id).c_str()));
        if (j.is_null()) return j;
        const std::string s = j.value("status", "");
        if (s == "completed" || s == "failed" || s == "cancelled") return j;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "job " << id << " did not end within " << timeout_s << " s: " << j.dump();
    return j;
}

// Polls a job until it is generating with at least `min_step` sampling steps done.
inline json wait_sampling(httplib::Client& c, const std::string& id, int min_step = 1,
                          int timeout_s = 120) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    json j;
    while (std::chrono::steady_clock::now() < deadline) {
        j = body_json(c.Get(("/sdcpp/v1/jobs/" + id).c_str()));
        if (j.is_null()) return j;
        if (j["progress"]["phase"] == "sampling" && j["progress"]["step"].get<int>() >= min_step)
            return j;
        const std::string s = j.value("status", "");
        if (s == "completed" || s == "failed" || s == "cancelled") break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "job " << id << " never reached sampling step " << min_step << ": "
                  << j.dump();
    return j;
}

// A small, quick request in sd-server's native schema.
inline json small_job(int steps = 2, int64_t seed = 1) {
    return {{"prompt", "a red cube"},
            {"width", 64},
            {"height", 64},
            {"seed", seed},
            {"sample_params", {{"sample_method", "euler"}, {"sample_steps", steps}}}};
}

}  // namespace ggdiff::server_test
