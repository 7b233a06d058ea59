// BatchRun: the items of one generate() call while they are computed, on one replica or on
// several at once (data parallel, placement/data_parallel.h). It calls the caller's
// ProgressFn and ImageFn one call at a time, whichever thread computes; hands the images
// over in item (seed) order; and stops every replica at the first failure or cancel.
//
// Progress with one replica is what it always was: "sampling" (one item) or "sampling i/N",
// step of steps, seconds since the item began. With replicas computing at once it is one
// "sampling" phase over the whole batch (steps done of items x steps, seconds since the
// first item began), so a progress bar does not jump between items; each preparation phase
// ("lora", "text", "encode") is reported once, by the first replica to finish it (every
// replica runs them for itself), and "decode" once per item.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/options.h"

namespace ggdiff {

class BatchRun {
  public:
    BatchRun(const ProgressFn& progress, const ImageFn& on_image, int items, bool parallel);

    // A phase other than sampling, from any replica. Returns false when the batch is to stop.
    bool phase(const std::string& name, int step, int total, double secs);
    // Step `step` of `total` of batch item `item` is done, `item_secs` after the item began.
    // Returns false when the batch is to stop.
    bool sampling_step(int item, int step, int total, double item_secs);

    // Whether the batch is to stop: a cancel, or a replica failed.
    bool stopped() const { return stop_.load(); }
    // Stops the batch for `why`. The first call wins; later ones (mostly the other replicas
    // giving up because of it) are dropped.
    void fail(const Status& why);
    // The first failure, or Ok.
    Status status() const;

    // Hands over item `item`'s images: they reach on_image (and take_images()) in item order, as
    // soon as every earlier item's have. An item after a failed one is never handed on.
    void finish_item(int item, std::vector<GeneratedImage> images);
    // The images handed on so far, in item order.
    std::vector<GeneratedImage> take_images();

  private:
    bool relay(const std::string& name, int step, int total, double secs);

    using Clock = std::chrono::steady_clock;
    const ProgressFn& progress_;
    const ImageFn& on_image_;
    const int items_;
    const bool parallel_;
    mutable std::mutex mutex_;
    std::atomic<bool> stop_{false};
    Status failure_;
    std::set<std::string> reported_;               // parallel: preparation phases reported
    int steps_done_ = 0;                           // parallel: over the whole batch
    std::optional<Clock::time_point> sampling_0_;  // parallel: when the first item began
    std::vector<std::optional<std::vector<GeneratedImage>>> pending_;  // by item
    int next_ = 0;                                                     // first item not handed on
    std::vector<GeneratedImage> images_;
};

}  // namespace ggdiff
