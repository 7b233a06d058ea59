// Fuzz target: one raw HTTP request (request line, headers, body) through ggdiff-server's real
// routes, as a client would send it: cpp-httplib's request, chunked-body and multipart parsing,
// then the request guards and every route's JSON and form handling (A1111, OpenAI, sd-server),
// base64 and uploaded-image decoding. No model is loaded, so a request that would generate is
// parsed and checked and then answered 503. Each input gets a new server (settings posted by one
// input do not leak into the next).
//
// Property: the answer is a well-formed HTTP response, and never a 500: an "internal error" means
// an input got past the checks that should have named the problem with a 4xx.
#include <httplib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "a1111.h"
#include "fuzz_util.h"
#include "jobs.h"
#include "lora_dir.h"
#include "model_host.h"
#include "routes.h"
#include "server_config.h"

namespace {

using namespace ggdiff::server;

// The request comes from memory; the response goes to memory.
class MemoryStream : public httplib::Stream {
  public:
    MemoryStream(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    bool is_readable() const override { return pos_ < size_; }
    bool is_writable() const override { return true; }
    ssize_t read(char* ptr, size_t size) override {
        const size_t n = std::min(size, size_ - pos_);
        std::memcpy(ptr, data_ + pos_, n);
        pos_ += n;
        return static_cast<ssize_t>(n);
    }
    ssize_t write(const char* ptr, size_t size) override {
        static const size_t keep = std::getenv("GGDIFF_FUZZ_VERBOSE") ? 4096 : 64;
        if (out_.size() < keep) out_.append(ptr, std::min(size, keep - out_.size()));
        return static_cast<ssize_t>(size);
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        ip = "127.0.0.1";
        port = 50000;
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        ip = "127.0.0.1";
        port = 7860;
    }
    socket_t socket() const override { return INVALID_SOCKET; }
    const std::string& written() const { return out_; }

  private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
    std::string out_;
};

// process_request is protected: the fuzz target is a server that answers one stream.
class OneRequestServer : public httplib::Server {
  public:
    bool answer(httplib::Stream& stream) {
        bool closed = false;
        return process_request(stream, true, closed, nullptr);
    }
};

ServerConfig fuzz_config() {
    ServerConfig c;
    c.port = 0;
    // A LoRA folder with one name in it, so that requests naming "style" get past the lookup.
    c.lora_model_dir = ggdiff::fuzz::scratch_dir() + "/loras";
    std::filesystem::create_directories(c.lora_model_dir);
    std::ofstream(c.lora_model_dir + "/style.safetensors") << "";
    c.max_body_bytes = 1 << 20;
    c.max_size = 1024;
    c.max_upload_pixels = 256 * 256;  // uploads beyond it are refused before decoding
    return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const ServerConfig config = fuzz_config();
    ModelHost host(config);
    JobManager jobs(host, config.max_queue, config.result_ttl_s, config.max_result_bytes);
    LoraDir loras(config.lora_model_dir);
    A1111Settings settings(host, config.embed_metadata);
    ServerContext ctx{config, host, jobs, loras, settings};

    OneRequestServer server;
    server.set_payload_max_length(static_cast<size_t>(config.max_body_bytes));
    register_all_routes(server, ctx);

    MemoryStream stream(data, size);
    server.answer(stream);
    const std::string& out = stream.written();
    // GGDIFF_FUZZ_VERBOSE=1: print the answers (replaying a corpus by hand).
    if (std::getenv("GGDIFF_FUZZ_VERBOSE")) std::fprintf(stderr, "%s\n", out.c_str());
    // Nothing is written only when not even a request line arrived.
    if (out.empty()) return 0;
    GGDIFF_FUZZ_CHECK(out.rfind("HTTP/1.1 ", 0) == 0);
    GGDIFF_FUZZ_CHECK(out.compare(9, 3, "500") != 0);
    return 0;
}
