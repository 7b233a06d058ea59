#include "pipeline/batch_run.h"

#include "core/log.h"

namespace ggdiff {

BatchRun::BatchRun(const ProgressFn& progress, const ImageFn& on_image, int items, bool parallel)
    : progress_(progress),
      on_image_(on_image),
      items_(items),
      parallel_(parallel),
      pending_(static_cast<size_t>(std::max(0, items))) {}

bool BatchRun::relay(const std::string& name, int step, int total, double secs) {
    // Called with mutex_ held. Nothing is relayed once the batch stops.
    if (stop_.load()) return false;
    if (!progress_ || progress_(name, step, total, secs)) return true;
    if (!stop_.exchange(true)) failure_ = Status::Error("cancelled");
    return false;
}

bool BatchRun::phase(const std::string& name, int step, int total, double secs) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Every replica prepares for itself: the first to finish a preparation phase reports it.
    // Per-item phases ("decode", "hires ...") are reported by every replica.
    const bool per_item = name == "decode" || name.rfind("hires", 0) == 0;
    if (parallel_ && !per_item && !reported_.insert(name).second) return !stop_.load();
    return relay(name, step, total, secs);
}

bool BatchRun::sampling_step(int item, int step, int total, double item_secs) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!parallel_) {
        const std::string name =
            items_ > 1 ? string_format("sampling %d/%d", item + 1, items_) : "sampling";
        return relay(name, step, total, item_secs);
    }
    const Clock::time_point began = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                                       std::chrono::duration<double>(item_secs));
    if (!sampling_0_ || began < *sampling_0_) sampling_0_ = began;
    ++steps_done_;
    const double secs = std::chrono::duration<double>(Clock::now() - *sampling_0_).count();
    return relay("sampling", steps_done_, total * items_, secs);
}

void BatchRun::fail(const Status& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stop_.exchange(true)) failure_ = why;
}

Status BatchRun::status() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
}

void BatchRun::finish_item(int item, std::vector<GeneratedImage> images) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (item < 0 || item >= items_) return;
    pending_[static_cast<size_t>(item)] = std::move(images);
    while (next_ < items_ && pending_[static_cast<size_t>(next_)]) {
        for (GeneratedImage& g : *pending_[static_cast<size_t>(next_)]) {
            if (on_image_) on_image_(g);
            images_.push_back(std::move(g));
        }
        pending_[static_cast<size_t>(next_)].reset();
        ++next_;
    }
}

std::vector<GeneratedImage> BatchRun::take_images() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::move(images_);
}

}  // namespace ggdiff
