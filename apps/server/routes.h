// The server's shared state and the route families registered on it.
#pragma once

#include <httplib.h>

#include <memory>
#include <mutex>
#include <string>

#include "a1111.h"
#include "jobs.h"
#include "lora_dir.h"
#include "model_host.h"
#include "server_config.h"
#include "upscalers.h"

namespace ggdiff::server {

struct ServerContext {
    const ServerConfig& config;
    ModelHost& host;
    JobManager& jobs;
    LoraDir& loras;
    A1111Settings& settings;
    std::atomic<int> event_streams{0};
    Upscalers* upscalers = nullptr;  // A1111 extras; none: only "None" is listed
};

// Builds the job for a request (checks it against the limits and the options, even while the
// model loads) and queues it: 503 while the model loads, 429 with Retry-After when the queue
// is full.
std::shared_ptr<Job> submit_request(ServerContext& ctx, GenRequest request, const std::string& api);
// Queues `job`; a full queue is a 429 with the seconds to wait.
void submit_or_refuse(ServerContext& ctx, const std::shared_ptr<Job>& job);

// The job as sd-server's API shows it; `images` adds result.images (base64) and the latest
// live preview ("preview", else null).
nlohmann::json job_json(const JobView& view, bool images);
// The job's latest live preview: {step, total, count, width, height, seed, output_format
// ("png"), b64_json}, or null before the first.
nlohmann::json preview_json(const JobView& view);

void register_health_routes(httplib::Server& server, ServerContext& ctx);
void register_openai_routes(httplib::Server& server, ServerContext& ctx);
void register_sdapi_routes(httplib::Server& server, ServerContext& ctx);
void register_sdcpp_routes(httplib::Server& server, ServerContext& ctx);
void register_web_routes(httplib::Server& server, ServerContext& ctx);

// The request guards (security.h) and every route family above: what ggdiff-server serves,
// and what its fuzz target (tests/fuzz/fuzz_server.cpp) drives.
void register_all_routes(httplib::Server& server, ServerContext& ctx);

}  // namespace ggdiff::server
