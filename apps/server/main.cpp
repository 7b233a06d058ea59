// ggdiff-server: models behind the OpenAI Images, AUTOMATIC1111 and stable-diffusion.cpp
// APIs, with a web page. Uses only the C API (ggdiff.h).
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "a1111.h"
#include "huge_pages_exec.h"
#include "jobs.h"
#include "lora_dir.h"
#include "model_host.h"
#include "routes.h"
#include "security.h"
#include "server_config.h"

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

void on_signal(int) {
    g_stop_signal = 1;
}

// httplib's stop() only acts on a running server: wait until it listens.
void stop_when_running(httplib::Server& server) {
    for (int i = 0; i < 500 && !server.is_running(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    server.stop();
}

}  // namespace

int main(int argc, char** argv) {
    ggdiff::app::restart_with_huge_pages(argv);
    using namespace ggdiff::server;
    ParseOutcome parsed = parse_server_args(argc, argv);
    if (parsed.action == ParseAction::help) {
        std::fputs(server_help_text().c_str(), stdout);
        return 0;
    }
    if (parsed.action == ParseAction::version) {
        std::printf("ggdiff-server %s\n", ggdiff_version());
        return 0;
    }
    if (!parsed.error.empty()) {
        std::fprintf(stderr, "error: %s\n(see ggdiff-server --help)\n", parsed.error.c_str());
        return 2;
    }
    const ServerConfig& config = parsed.config;
    ggdiff_set_log_level(config.verbose ? GGDIFF_LOG_DEBUG : GGDIFF_LOG_INFO);
    ggdiff_set_log_color(config.color ? 1 : 0);
    if (!is_loopback_host(config.host)) {
        std::fprintf(stderr, "warning: listening on %s: other machines can reach this server%s\n",
                     config.host.c_str(), config.api_key.empty() ? " and no --api-key is set" : "");
    }

    if (!config.builtin_model.empty()) {
        std::fprintf(stderr, "no -m given: serving the built-in model %s\n",
                     config.builtin_model.c_str());
    }

    ModelHost host(config);
    if (const std::string error = host.scan(); !error.empty()) {
        std::fprintf(stderr, "error: %s\n(see ggdiff-server --help)\n", error.c_str());
        return 2;
    }
    if (!config.models_dir.empty()) {
        const Catalog catalog = host.library().catalog();
        std::fprintf(stderr, "%zu models in %s (%zu VAEs); up to %d loaded at once\n",
                     catalog.models.size(), config.models_dir.c_str(), catalog.vaes.size(),
                     host.library().max_loaded());
    }
    Upscalers upscalers(host);  // before the jobs, whose worker may run one of them
    JobManager jobs(host, config.max_queue, config.result_ttl_s, config.max_result_bytes);
    LoraDir loras(config.lora_model_dir);
    A1111Settings settings(host, config.embed_metadata);
    ServerContext ctx{config, host, jobs, loras, settings};
    ctx.upscalers = &upscalers;

    httplib::Server server;
    // Threads: every request that waits for its image holds one (at most max_queue + 1 of
    // them, the rest get 429), event streams hold one each (capped), plus room for quick
    // requests.
    const size_t threads = static_cast<size_t>(config.max_queue) + 1 + 32 + 8;
    server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server.set_payload_max_length(static_cast<size_t>(config.max_body_bytes));
    server.set_keep_alive_timeout(2);
    server.set_read_timeout(30);
    server.set_write_timeout(30);
    register_all_routes(server, ctx);

    int port = config.port;
    if (port == 0) {
        port = server.bind_to_any_port(config.host);
    } else if (!server.bind_to_port(config.host, port)) {
        port = -1;
    }
    if (port < 0) {
        std::fprintf(stderr, "error: cannot listen on %s:%d\n", config.host.c_str(), config.port);
        return 1;
    }
    std::printf("listening on http://%s:%d\n", config.host.c_str(), port);
    std::fflush(stdout);

    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGPIPE, SIG_IGN);

    std::atomic<int> exit_code{0};
    std::atomic<bool> finished{false};
    std::thread loader([&] {
        std::fprintf(stderr, "loading the model %s...\n", host.library().current().c_str());
        if (host.load()) {
            std::fprintf(stderr, "model loaded in %.1f s; ready\n", host.load_seconds());
        } else if (host.state() == ModelHost::State::ready) {
            // --models-dir: requests may still name the other models.
            std::fprintf(stderr, "error: %s\nready (the other models can be used)\n",
                         host.load_error().c_str());
        } else {
            std::fprintf(stderr, "error: %s\n", host.load_error().c_str());
            exit_code = 1;
            stop_when_running(server);
        }
    });
    // SIGINT/SIGTERM: stop taking requests, cancel what runs, exit 0.
    std::thread watcher([&] {
        while (!finished) {
            if (g_stop_signal) {
                std::fprintf(stderr, "stopping\n");
                jobs.stop();
                stop_when_running(server);
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    });
    jobs.start();
    server.listen_after_bind();
    finished = true;
    jobs.stop();
    watcher.join();
    loader.join();
    return exit_code;
}
