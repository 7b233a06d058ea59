// The job queue: one worker runs generations one at a time, each on the model it names (it
// waits in the state "loading" while the model library loads it); requests
// wait in a bounded queue (full: 429 with a Retry-After estimate); finished results stay for
// --result-ttl seconds, then answer 410. A job can be cancelled while queued (at once) or
// while running (it stops at the next step, keeping the images already finished).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "gen_request.h"
#include "images.h"
#include "model_host.h"

namespace ggdiff::server {

enum class JobStatus { queued, loading, generating, completed, failed, cancelled };
const char* job_status_name(JobStatus status);

struct JobProgress {
    std::string phase;  // "text", "encode", "sampling", "decode" ("" before the first)
    int step = 0;
    int total = 0;
    int images_done = 0;
    int batch = 1;
    double fraction = 0.0;  // 0..1 over the whole job
    double eta_s = -1.0;    // seconds left; < 0 unknown
};

// The latest live preview of a running job (the "preview" option: PNG), for A1111's
// /progress current_image and the native job status and events.
struct LivePreview {
    std::shared_ptr<const EncodedImage> image;  // null before the first
    int step = 0, total = 0;                    // the sampling step it shows
    uint64_t count = 0;                         // previews so far (each new one counts)
};

struct Job {
    std::string id;
    std::string kind = "img_gen";
    std::string api;  // which API made it (txt2img, img2img, openai, img_gen): for progress
    GenRequest request;
    OptionsPtr options;  // released when the job ends (frees any init image)
    // kind "upscale" (/sdapi/v1/extra-single-image): `upscale_input` through `upscaler` with
    // the options' upscale-repeats, then resized to upscale_width x upscale_height when that
    // differs from what the upscaler gives (0: as it gives it).
    ggdiff_upscaler* upscaler = nullptr;
    ImagePtr upscale_input;
    int upscale_width = 0, upscale_height = 0;

    // Guarded by the manager's mutex.
    JobStatus status = JobStatus::queued;
    bool cancel_requested = false;
    int64_t created = 0, started = 0, finished = 0;  // unix seconds; 0 = not yet
    std::chrono::steady_clock::time_point started_at;
    JobProgress progress;
    std::vector<EncodedImage> images;
    LivePreview preview;  // dropped when the job ends
    std::string error_code, error_message;
    uint64_t version = 0;  // increases with every change (event streams wait on it)
    std::chrono::steady_clock::time_point expires;
};

// A copy of a job's state taken under the lock.
struct JobView {
    std::string id, kind, api;
    JobStatus status = JobStatus::queued;
    bool cancel_requested = false;
    int64_t created = 0, started = 0, finished = 0;
    int queue_position = 0;  // 1-based among waiting jobs; 0 when not waiting
    JobProgress progress;
    std::vector<EncodedImage> images;  // only when asked for
    LivePreview preview;
    std::string error_code, error_message;
    uint64_t version = 0;
    std::string output_format;
    bool terminal() const {
        return status == JobStatus::completed || status == JobStatus::failed ||
               status == JobStatus::cancelled;
    }
    // The HTTP status of a failed job: 400 when the request was at fault (an input the model
    // refuses, a prompt it cannot take), else 500.
    int failure_http_status() const {
        return error_code == "invalid_input" || error_code == "unsupported_input" ? 400 : 500;
    }
};

enum class Lookup { found, missing, expired };

class JobManager {
  public:
    // Finished jobs stay `result_ttl_s` seconds, and while their images fit in
    // `max_result_bytes` (the oldest go first; the latest finished one always stays).
    JobManager(ModelHost& host, int max_queue, int result_ttl_s, int64_t max_result_bytes);
    ~JobManager();

    void start();  // the worker thread
    void stop();   // cancels the running job and joins the worker

    struct Submitted {
        std::shared_ptr<Job> job;  // nullptr: the queue is full
        int retry_after_s = 0;
    };
    Submitted submit(std::shared_ptr<Job> job);

    Lookup find(const std::string& id, std::shared_ptr<Job>* out);
    JobView view(const Job& job, bool with_images);

    // Cancels a queued job at once, or asks a running one to stop. Returns the job's view.
    Lookup cancel(const std::string& id, JobView* out);
    // Asks the running job (if any) to stop; false when none runs.
    bool interrupt_running();

    // Waits until the job's version passes `seen` or it ends, at most `timeout`. Returns the
    // current view (without images).
    JobView wait_change(const Job& job, uint64_t seen, std::chrono::milliseconds timeout);
    // Waits for the job to end (no timeout: it ends by finishing, failing or being cancelled).
    JobView wait_done(const Job& job);

    // The running job, if any, and how many wait.
    std::optional<JobView> running();
    int queued_count();
    std::vector<JobView> list();

    int max_queue() const { return max_queue_; }
    bool stopping();

  private:
    void worker();
    void run(const std::shared_ptr<Job>& job);
    void purge_locked();
    void expire_locked(const std::string& id);
    void finish_locked(Job& job, JobStatus status);
    JobView view_locked(const Job& job, bool with_images) const;
    int retry_after_locked() const;

    ModelHost& host_;
    const int max_queue_;
    const int ttl_s_;
    const int64_t max_result_bytes_;
    std::mutex mutex_;
    std::condition_variable cv_;  // worker wake-ups and every job change
    std::map<std::string, std::shared_ptr<Job>> jobs_;
    std::deque<std::shared_ptr<Job>> queue_;
    std::shared_ptr<Job> running_;
    std::deque<std::string> expired_order_;
    std::unordered_set<std::string> expired_;
    double avg_job_s_ = 0.0;  // moving average of run times (Retry-After)
    bool stopping_ = false;
    std::thread thread_;
};

std::string new_job_id();
int64_t unix_now();

}  // namespace ggdiff::server
