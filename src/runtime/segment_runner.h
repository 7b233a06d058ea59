// SegmentRunner: graph cutting (--max-vram) and streamed layers (--stream-layers) for one
// module on one device whose weights do not fit its budget.
//
// The module's graph is built whole and its compute buffer allocated for the whole graph
// (ggml_gallocr over the device's buffer type, measured first so that the weights' budget
// is what the buffer leaves). The weights outside the blocks stay on the device for the
// phase; the blocks are grouped into segments (placement/segment_plan.h) and every segment
// has a fixed place in a slot buffer: one slot when cutting alone, two when streaming
// (segment k in slot k % 2), plus a slot of its own for each segment kept resident. Every
// weight therefore keeps one device address; only the slot's contents change. The graph then
// runs as consecutive node ranges, one per segment (a range starts at the first node that
// uses a weight of its segment), each after its segment was uploaded into its slot. Running
// the same nodes in the same order over the same compute buffer gives the same result as
// one whole-graph computation.
//
// Streaming uploads the next segment while the current one computes where the device
// allows it (asynchronous copies); elsewhere (RPC, CPU) the next segment's host pages are
// read in ahead on a thread and the upload follows the compute.
#pragma once

#include <ggml-alloc.h>
#include <ggml-backend.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "placement/device_info.h"
#include "placement/segment_plan.h"
#include "placement/tensor_record.h"
#include "runtime/graph_runner.h"
#include "runtime/weight_store.h"

namespace ggdiff {

// Weight bytes the SegmentRunners have uploaded so far on this thread (monotonic; differences
// give a phase's count).
uint64_t uploaded_weight_bytes();

struct SegmentStats {
    uint64_t uploaded_bytes = 0;  // weights uploaded during the last run
    double upload_seconds = 0.0;
    int segments = 0;
};

class SegmentRunner {
  public:
    // budget: what the module may use on the device (compute buffer included); `pages_out`:
    // drop each weight's file pages after its upload (params on disk).
    SegmentRunner(ggml_backend_t backend, std::string module, std::string label, uint64_t budget,
                  bool stream, bool pages_out);
    ~SegmentRunner();
    SegmentRunner(const SegmentRunner&) = delete;
    SegmentRunner& operator=(const SegmentRunner&) = delete;

    // Measures the graph's compute buffer and plans the segments for it (again when a graph
    // needs more compute than the plan allowed for). Returns whether the module is cut;
    // false: it fits whole and should run the usual way.
    Result<bool> plan(GraphRunner& builder, WeightStore& weights, const BuildFn& build,
                      const std::vector<placement::TensorRecord>& records);
    Result<std::vector<HostTensor>> run(GraphRunner& builder, WeightStore& weights,
                                        const BuildFn& build,
                                        const std::vector<placement::TensorRecord>& records);
    // Frees the slots, the resident weights and the compute buffer (end of phase).
    void release(WeightStore& weights);

    // Bytes other modules hold on the device when this one plans (weights loaded whole there),
    // taken out of the budget.
    void set_held_by_others(std::function<uint64_t()> fn) { others_ = std::move(fn); }

    const std::optional<placement::SegmentPlan>& segment_plan() const { return plan_; }
    const SegmentStats& last_stats() const { return stats_; }
    const std::vector<std::string>& log_lines() const { return log_; }

  private:
    struct Range {
        int segment;
        int begin, end;  // node indices
    };
    Status allocate(WeightStore& weights);
    void assign(WeightStore& weights, const std::vector<placement::TensorRecord>& records);
    Status order(ggml_cgraph* gf) const;
    Status upload(WeightStore& weights, int segment, bool async);
    void prefetch_pages(WeightStore& weights, int segment) const;
    Result<std::vector<Range>> ranges(ggml_cgraph* gf) const;
    Result<uint64_t> measure(WeightStore& weights, ggml_cgraph* gf);
    void free_buffers(WeightStore& weights);

    ggml_backend_t backend_;
    std::string module_, label_;
    std::string device_;  // the device's name (RPC0, CUDA1, ...) for logs and errors
    uint64_t budget_;
    bool stream_, pages_out_;
    bool async_ = false;
    std::function<uint64_t()> others_;
    ggml_gallocr_t galloc_ = nullptr;
    std::optional<placement::SegmentPlan> plan_;
    uint64_t planned_compute_ = 0;  // the compute buffer the plan leaves room for
    uint64_t planned_probe_ = 0;    // the graph's own measure it was planned from
    std::string head_;
    // Per segment: its weights (declared names); resident weights in resident_.
    std::vector<std::vector<std::string>> members_;
    std::vector<std::string> resident_;
    std::map<const ggml_tensor*, int> segment_of_;  // weight -> segment (-1: resident)
    std::vector<int> slot_of_;                      // segment -> slot
    std::vector<int> slot_holds_;                   // slot -> segment in it (-1: none)
    std::vector<ggml_backend_buffer_t> buffers_;
    bool resident_loaded_ = false;
    SegmentStats stats_;
    std::vector<std::string> log_;
};

}  // namespace ggdiff
