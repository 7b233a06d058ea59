// Bad requests below the JSON level, sent over raw sockets: garbage instead of HTTP, a body
// shorter than its Content-Length, a bad chunked body, a huge header, random bytes, invalid
// UTF-8 and NUL bytes in JSON, connections dropped at once. The server answers or drops each
// one and keeps serving. A client that drops its connection while waiting for txt2img does
// not lose the image: the job finishes and its result is listed under /sdcpp/v1/jobs.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <random>

#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

// Sends `bytes` on a fresh connection; returns what came back before the server closed the
// connection or 10 s passed (without waiting when read_answer is false).
std::string raw_exchange(int port, const std::string& bytes, bool read_answer = true) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return "";
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::string answer;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
        timeval tv{10, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        size_t sent = 0;
        while (sent < bytes.size()) {
            const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) break;
            sent += static_cast<size_t>(n);
        }
        if (read_answer) {
            // Requests that expect an answer say "Connection: close"; others end here.
            if (bytes.find("Connection: close") == std::string::npos) shutdown(fd, SHUT_WR);
            char buf[4096];
            ssize_t n;
            while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) answer.append(buf, buf + n);
        }
    }
    close(fd);
    return answer;
}

std::string post_text(const std::string& path, const std::string& body,
                      const std::string& extra_headers = "") {
    return "POST " + path +
           " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: "
           "application/json\r\n" +
           extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

TEST(ServerRawHttp, MalformedTrafficNeverStopsTheServer) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();
    std::mt19937 rng(7);
    std::string random_bytes(4096, '\0');
    for (char& ch : random_bytes) ch = static_cast<char>(rng() & 0xff);
    const std::string invalid_utf8 = std::string(R"({"prompt":"a )") + "\xff\xfe\xc3" + R"("})";
    const std::string with_nul = std::string(R"({"prompt":"a)") + '\0' + R"(b","steps":1})";
    struct Case {
        const char* name;
        std::string bytes;
        const char* expect;  // a status line prefix the answer must start with, or "" for any
    };
    const std::vector<Case> cases = {
        {"garbage", "GARBAGE\r\n\r\n", ""},
        {"random_bytes", random_bytes, ""},
        {"bad_version", "GET /health HTTP/9.9\r\nHost: x\r\n\r\n", ""},
        {"short_body",
         "POST /sdapi/v1/txt2img HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"prompt\"",
         ""},
        {"negative_length",
         "POST /sdapi/v1/txt2img HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n{}", ""},
        {"huge_length",
         "POST /sdapi/v1/txt2img HTTP/1.1\r\nHost: x\r\nContent-Length: "
         "99999999999999999999\r\n\r\n",
         ""},
        {"bad_chunks",
         "POST /sdcpp/v1/img_gen HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n"
         "xx\r\n",
         ""},
        {"huge_header",
         "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(200000, 'a') + "\r\n\r\n", ""},
        {"many_headers",
         [] {
             std::string s = "GET /health HTTP/1.1\r\nHost: x\r\n";
             for (int i = 0; i < 5000; ++i) s += "X-H" + std::to_string(i) + ": v\r\n";
             return s + "\r\n";
         }(),
         ""},
        {"invalid_utf8", post_text("/sdapi/v1/txt2img", invalid_utf8), "HTTP/1.1 400"},
        {"nul_in_json", post_text("/sdcpp/v1/img_gen", with_nul), "HTTP/1.1 400"},
        {"path_traversal", "GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n", ""},
        {"event_stream_unknown_job",
         "GET /sdcpp/v1/jobs/nope/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
         "HTTP/1.1 404"},
    };
    for (const Case& k : cases) {
        SCOPED_TRACE(k.name);
        const std::string answer = raw_exchange(server.port(), k.bytes);
        if (*k.expect) {
            EXPECT_EQ(answer.rfind(k.expect, 0), 0u) << answer.substr(0, 300);
        }
        EXPECT_EQ(answer.find("root:"), std::string::npos) << "no file is served";
        // Dropped at once, before or in the middle of the request line.
        raw_exchange(server.port(), "", false);
        raw_exchange(server.port(), k.bytes.substr(0, k.bytes.size() / 2), false);
        auto health = c.Get("/health");
        ASSERT_TRUE(health) << "the server stopped answering after " << k.name << "\n"
                            << server.log();
        EXPECT_EQ(health->status, 200);
    }
    EXPECT_TRUE(server.alive()) << server.log();
}

TEST(ServerRawHttp, ADroppedTxt2ImgClientDoesNotLoseTheImage) {
    if (!e2e::prerequisites_ok()) return;
    ServerProcess server({});
    auto c = server.client();
    const json body = {
        {"prompt", "a red cube"}, {"width", 64}, {"height", 64}, {"steps", 2}, {"seed", 9}};
    // Send the request and hang up without reading the answer.
    raw_exchange(server.port(), post_text("/sdapi/v1/txt2img", body.dump()), false);
    json job;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
    while (std::chrono::steady_clock::now() < deadline) {
        json list = body_json(c.Get("/sdcpp/v1/jobs"));
        if (list.is_null()) break;
        if (!list["jobs"].empty() && list["jobs"][0]["status"] == "completed") {
            job = list["jobs"][0];
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_FALSE(job.is_null()) << "the dropped request's job never completed\n" << server.log();
    json full = body_json(c.Get(("/sdcpp/v1/jobs/" + job["id"].get<std::string>()).c_str()));
    ASSERT_EQ(full["result"]["images"].size(), 1u) << full.dump().substr(0, 500);
    const Image img = decode_b64_image(full["result"]["images"][0]["b64_json"]);
    EXPECT_EQ(img.width, 64);
    EXPECT_EQ(full["result"]["images"][0]["seed"], 9);
    EXPECT_TRUE(server.alive());
}

}  // namespace
}  // namespace ggdiff::server_test
