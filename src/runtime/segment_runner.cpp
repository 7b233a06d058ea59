#include "runtime/segment_runner.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/log.h"
#include "runtime/huge_pages.h"
#include "runtime/tensor_upload.h"

namespace ggdiff {
namespace {

double mib(uint64_t b) {
    return static_cast<double>(b) / 1048576.0;
}

// The weight a graph tensor reads (through views), if it is one of `weights`.
const ggml_tensor* root(const ggml_tensor* t) {
    return t->view_src ? t->view_src : t;
}

// Per thread, as the phases that read it (data-parallel replicas run on their own threads).
thread_local uint64_t g_uploaded = 0;

}  // namespace

uint64_t uploaded_weight_bytes() {
    return g_uploaded;
}

SegmentRunner::SegmentRunner(ggml_backend_t backend, std::string module, std::string label,
                             uint64_t budget, bool stream, bool pages_out)
    : backend_(backend),
      module_(std::move(module)),
      label_(std::move(label)),
      budget_(budget),
      stream_(stream),
      pages_out_(pages_out) {
    ggml_backend_dev_t dev = ggml_backend_get_device(backend_);
    device_ = dev ? ggml_backend_dev_name(dev) : ggml_backend_name(backend_);
    if (dev) {
        ggml_backend_dev_props props;
        ggml_backend_dev_get_props(dev, &props);
        async_ = props.caps.async;
    }
}

SegmentRunner::~SegmentRunner() {
    for (ggml_backend_buffer_t b : buffers_) ggml_backend_buffer_free(b);
    if (galloc_) ggml_gallocr_free(galloc_);
}

Result<uint64_t> SegmentRunner::measure(WeightStore& weights, ggml_cgraph* gf) {
    return measure_compute_buffer(weights, gf, ggml_backend_get_default_buffer_type(backend_));
}

void SegmentRunner::free_buffers(WeightStore& weights) {
    for (ggml_backend_buffer_t b : buffers_) ggml_backend_buffer_free(b);
    buffers_.clear();
    for (const auto& entry : weights.declared()) {
        if (segment_of_.count(entry.second)) {
            entry.second->data = nullptr;
            entry.second->buffer = nullptr;
        }
    }
    std::fill(slot_holds_.begin(), slot_holds_.end(), -1);
    resident_loaded_ = false;
}

void SegmentRunner::release(WeightStore& weights) {
    free_buffers(weights);
    if (galloc_) {
        ggml_gallocr_free(galloc_);
        galloc_ = nullptr;
    }
    // The mapped checkpoint's pages of this module leave the process with the phase.
    for (const auto& entry : weights.declared()) {
        if (const TensorInfo* info = weights.source(entry.first)) weights.index().release(*info);
    }
}

void SegmentRunner::assign(WeightStore& weights,
                           const std::vector<placement::TensorRecord>& records) {
    // Segment membership per weight, from the block numbers.
    members_.assign(plan_->segments.size(), {});
    resident_.clear();
    segment_of_.clear();
    std::vector<int> seg_of_block(static_cast<size_t>(plan_->num_blocks), -1);
    for (size_t s = 0; s < plan_->segments.size(); ++s) {
        for (int b = plan_->segments[s].begin; b < plan_->segments[s].end; ++b)
            seg_of_block[static_cast<size_t>(b)] = static_cast<int>(s);
    }
    for (const placement::TensorRecord& r : records) {
        ggml_tensor* t = weights.tensor(r.name);
        if (!t) continue;
        const int s = r.block < 0 ? -1 : seg_of_block[static_cast<size_t>(r.block)];
        segment_of_[t] = s;
        (s < 0 ? resident_ : members_[static_cast<size_t>(s)]).push_back(r.name);
    }
    // Slots: kept segments have their own; the others alternate over one slot (cutting) or
    // two (streaming).
    slot_of_.assign(plan_->segments.size(), 0);
    int slot = 0;
    for (int s = 0; s < plan_->resident_segments; ++s) slot_of_[static_cast<size_t>(s)] = slot++;
    const int streamed = static_cast<int>(plan_->segments.size()) - plan_->resident_segments;
    const int rotating = plan_->streamed ? std::min(2, streamed) : 1;
    for (int s = plan_->resident_segments; s < static_cast<int>(plan_->segments.size()); ++s) {
        slot_of_[static_cast<size_t>(s)] = slot + (s - plan_->resident_segments) % rotating;
    }
    slot_holds_.assign(static_cast<size_t>(slot + rotating), -1);
}

Status SegmentRunner::order(ggml_cgraph* gf) const {
    // Each node runs in the latest segment among its weights' and its sources': a stable
    // sort by that key keeps every source before its users (a source's key is never above
    // its user's) and puts work that only reads early inputs (e.g. the cross-attention
    // keys of a late block, which need nothing but the text context) next to its block.
    const int n = ggml_graph_n_nodes(gf);
    std::map<const ggml_tensor*, int> key_of;
    std::vector<std::pair<int, int>> keyed;  // (key, original index)
    for (int i = 0; i < n; ++i) {
        const ggml_tensor* node = ggml_graph_node(gf, i);
        int key = 0;
        for (int s = 0; s < GGML_MAX_SRC && node->src[s]; ++s) {
            auto w = segment_of_.find(root(node->src[s]));
            if (w != segment_of_.end()) {
                key = std::max(key, w->second);
                continue;
            }
            auto k = key_of.find(node->src[s]);
            if (k != key_of.end()) key = std::max(key, k->second);
        }
        key_of[node] = key;
        keyed.emplace_back(key, i);
    }
    // A weight read in a later segment than its own must still be on the device then.
    for (int i = 0; i < n; ++i) {
        const ggml_tensor* node = ggml_graph_node(gf, i);
        for (int s = 0; s < GGML_MAX_SRC && node->src[s]; ++s) {
            auto w = segment_of_.find(root(node->src[s]));
            if (w == segment_of_.end() || w->second < 0) continue;
            const int key = keyed[static_cast<size_t>(i)].first;
            if (w->second != key && w->second >= plan_->resident_segments) {
                return Status::Error(string_format(
                    "%s: %s of segment %d is needed again in segment %d (after later blocks); "
                    "the graph cannot be cut at these block boundaries",
                    module_.c_str(), node->src[s]->name, w->second, key));
            }
        }
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<ggml_tensor*> sorted;
    sorted.reserve(static_cast<size_t>(n));
    for (const auto& kv : keyed) sorted.push_back(ggml_graph_node(gf, kv.second));
    std::copy(sorted.begin(), sorted.end(), ggml_graph_nodes(gf));
    return Status::Ok();
}

Result<bool> SegmentRunner::plan(GraphRunner& builder, WeightStore& weights, const BuildFn& build,
                                 const std::vector<placement::TensorRecord>& records) {
    GraphBuilder gb;
    std::vector<ggml_tensor*> outs;
    ggml_context* ctx = builder.build_graph(weights, build, gb, outs);
    if (!weights.status().ok()) {
        ggml_free(ctx);
        return weights.status();
    }
    ggml_cgraph* gf = new_output_graph(ctx, outs);
    auto probe = measure(weights, gf);
    if (!probe.ok() || (plan_ && *probe <= planned_probe_)) {
        ggml_free(ctx);
        if (!probe.ok()) return probe.status();
        return plan_->cut;
    }
    // The graph as built decides the plan; the plan decides the order the nodes run in,
    // which changes the compute buffer: when the reordered graph needs more, plan again
    // with that figure.
    uint64_t compute = *probe;
    // What other modules keep on the device (weights loaded whole) is not this module's.
    const uint64_t held = others_ ? others_() : 0;
    const std::string held_text =
        held ? string_format(", %.1f MiB of it held by other modules", mib(held)) : "";
    Status st = Status::Ok();
    for (int attempt = 0; attempt < 3; ++attempt) {
        const uint64_t reserve = compute + placement::compute_margin(compute) + held;
        head_ = string_format(
            "%s: --max-vram budget %.1f MiB on %s%s; compute buffer %.1f MiB measured (+ %.1f "
            "MiB margin)",
            module_.c_str(), mib(budget_), device_.c_str(), held_text.c_str(), mib(compute),
            mib(reserve - held - compute));
        if (reserve >= budget_) {
            st = Status::Error(string_format(
                "%s: the %.1f MiB --max-vram budget on %s leaves no room for its weights: its "
                "compute buffer needs %.1f MiB with its margin%s (short by %.1f MiB)",
                module_.c_str(), mib(budget_), device_.c_str(), mib(reserve - held),
                held ? string_format(" and other modules hold %.1f MiB there", mib(held)).c_str()
                     : "",
                mib(reserve - budget_)));
            break;
        }
        auto p = placement::plan_segments(module_, records, budget_ - reserve, stream_);
        if (!p.ok()) {
            st = p.status().with_context(head_);
            break;
        }
        free_buffers(weights);
        plan_ = std::move(*p);
        if (!plan_->cut) break;
        assign(weights, records);
        st = order(gf);
        if (!st.ok()) break;
        auto sorted = measure(weights, gf);
        if (!sorted.ok()) {
            st = sorted.status();
            break;
        }
        if (*sorted <= compute) break;
        compute = *sorted;
    }
    ggml_free(ctx);
    if (!st.ok()) {
        plan_.reset();
        return st;
    }
    planned_probe_ = *probe;
    planned_compute_ = compute;
    log_.clear();
    log_.push_back(head_);
    for (const std::string& line : placement::segment_log_lines(*plan_)) log_.push_back(line);
    if (plan_->cut) {
        log_.push_back(string_format(
            "%s: %zu segments, %s; %.1f MiB of weights uploaded per evaluation", module_.c_str(),
            plan_->segments.size(),
            plan_->streamed ? (async_ ? "streamed (the next segment is sent while one computes)"
                                      : "streamed (next segment read ahead during compute)")
                            : "cut (each segment uploaded before it runs)",
            mib(plan_->streamed_bytes())));
    }
    for (const std::string& line : log_) GGDIFF_LOG_INFO("%s", line.c_str());
    return plan_->cut;
}

Status SegmentRunner::allocate(WeightStore& weights) {
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(backend_);
    const size_t align = ggml_backend_buft_get_alignment(buft);
    auto layout = [&](const std::vector<std::string>& names, std::vector<size_t>& offsets) {
        size_t off = 0;
        offsets.clear();
        for (const std::string& n : names) {
            offsets.push_back(off);
            off += GGML_PAD(ggml_backend_buft_get_alloc_size(buft, weights.tensor(n)), align);
        }
        return std::max(off, align);
    };
    // One buffer for the resident weights, one per slot sized to its largest segment.
    std::vector<size_t> slot_size(slot_holds_.size(), 0);
    std::vector<std::vector<size_t>> seg_offsets(members_.size());
    for (size_t s = 0; s < members_.size(); ++s) {
        const size_t size = layout(members_[s], seg_offsets[s]);
        size_t& sz = slot_size[static_cast<size_t>(slot_of_[s])];
        sz = std::max(sz, size);
    }
    std::vector<size_t> res_offsets;
    const size_t res_size = layout(resident_, res_offsets);
    auto alloc = [&](size_t size, const char* what) -> Result<ggml_backend_buffer_t> {
        ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(buft, size);
        if (!b) {
            return Status::Error(string_format("%s: cannot allocate %.1f MiB for %s on %s",
                                               module_.c_str(), mib(size), what, device_.c_str()));
        }
        ggml_backend_buffer_set_usage(b, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        advise_huge_pages(b);
        buffers_.push_back(b);
        return b;
    };
    auto res = alloc(res_size, "the weights outside its blocks");
    if (!res.ok()) return res.status();
    for (size_t i = 0; i < resident_.size(); ++i) {
        ggml_tensor* t = weights.tensor(resident_[i]);
        ggml_backend_tensor_alloc(
            *res, t, static_cast<char*>(ggml_backend_buffer_get_base(*res)) + res_offsets[i]);
    }
    std::vector<ggml_backend_buffer_t> slots;
    for (size_t k = 0; k < slot_size.size(); ++k) {
        auto b = alloc(slot_size[k], "a segment slot");
        if (!b.ok()) return b.status();
        slots.push_back(*b);
    }
    for (size_t s = 0; s < members_.size(); ++s) {
        ggml_backend_buffer_t b = slots[static_cast<size_t>(slot_of_[s])];
        char* base = static_cast<char*>(ggml_backend_buffer_get_base(b));
        for (size_t i = 0; i < members_[s].size(); ++i) {
            ggml_backend_tensor_alloc(b, weights.tensor(members_[s][i]), base + seg_offsets[s][i]);
        }
    }
    return Status::Ok();
}

Status SegmentRunner::upload(WeightStore& weights, int segment, bool async) {
    const std::vector<std::string>& names =
        segment < 0 ? resident_ : members_[static_cast<size_t>(segment)];
    std::vector<uint8_t> staging;
    for (const std::string& n : names) {
        ggml_tensor* t = weights.tensor(n);
        const TensorInfo* info = weights.source(n);
        if (!info) return Status::Error("missing tensor " + n);
        const size_t nb = ggml_nbytes(t);
        if (info->ggml_type == static_cast<int>(t->type) && info->nbytes == nb) {
            const uint8_t* src = weights.index().raw(*info);
            if (async) {
                set_tensor_in_pieces_async(backend_, t, src, 0, nb);
            } else {
                set_tensor_in_pieces(t, src, 0, nb);
            }
        } else {
            // Converted weights (--type) go through a host buffer, synchronously.
            staging.resize(nb);
            Status st = weights.index().read(*info, t->type, staging.data());
            if (!st.ok()) return st.with_context("reading " + n);
            set_tensor_in_pieces(t, staging.data(), 0, nb);
        }
        if (pages_out_ && !async) weights.index().release(*info);
        stats_.uploaded_bytes += nb;
        g_uploaded += nb;
    }
    return Status::Ok();
}

void SegmentRunner::prefetch_pages(WeightStore& weights, int segment) const {
    // Reads one byte per page of the segment's stored weights, so that its upload finds
    // them in memory rather than on disk.
    volatile uint8_t sink = 0;
    for (const std::string& n : members_[static_cast<size_t>(segment)]) {
        const TensorInfo* info = weights.source(n);
        if (!info) continue;
        const uint8_t* p = weights.index().raw(*info);
        for (size_t off = 0; off < info->nbytes; off += 4096) sink = sink + p[off];
    }
    (void)sink;
}

Result<std::vector<SegmentRunner::Range>> SegmentRunner::ranges(ggml_cgraph* gf) const {
    const int n = ggml_graph_n_nodes(gf);
    const int segs = static_cast<int>(plan_->segments.size());
    std::vector<int> first(static_cast<size_t>(segs), -1), last(static_cast<size_t>(segs), -1);
    for (int i = 0; i < n; ++i) {
        const ggml_tensor* node = ggml_graph_node(gf, i);
        for (int s = 0; s < GGML_MAX_SRC && node->src[s]; ++s) {
            auto it = segment_of_.find(root(node->src[s]));
            if (it == segment_of_.end() || it->second < 0) continue;
            const size_t k = static_cast<size_t>(it->second);
            if (first[k] < 0) first[k] = i;
            last[k] = i;
        }
    }
    std::vector<Range> out;
    int prev_last = -1;
    for (int s = 0; s < segs; ++s) {
        const size_t k = static_cast<size_t>(s);
        if (first[k] < 0) continue;  // a segment this graph does not use
        if (first[k] <= prev_last) {
            return Status::Error(string_format(
                "%s: the graph uses the weights of segment %d before those of an earlier "
                "segment are done; it cannot be cut at block boundaries",
                module_.c_str(), s));
        }
        const int begin = out.empty() ? 0 : first[k];
        if (!out.empty()) out.back().end = begin;
        out.push_back({s, begin, n});
        prev_last = last[k];
    }
    if (out.empty()) out.push_back({-1, 0, n});
    return out;
}

Result<std::vector<HostTensor>> SegmentRunner::run(
    GraphRunner& builder, WeightStore& weights, const BuildFn& build,
    const std::vector<placement::TensorRecord>& records) {
    auto cut = plan(builder, weights, build, records);
    if (!cut.ok()) return cut.status();
    if (!*cut) return Status::Error(module_ + ": not cut (runs whole)");
    if (buffers_.empty()) GGDIFF_TRY(allocate(weights));
    stats_ = SegmentStats{};
    stats_.segments = static_cast<int>(plan_->segments.size());
    using clock = std::chrono::steady_clock;
    double upload_s = 0.0;
    auto timed_upload = [&](int segment, bool async) -> Status {
        const auto t0 = clock::now();
        Status st = upload(weights, segment, async);
        upload_s += std::chrono::duration<double>(clock::now() - t0).count();
        return st;
    };
    if (!resident_loaded_) {
        GGDIFF_TRY(timed_upload(-1, false));
        resident_loaded_ = true;
    }

    GraphBuilder gb;
    std::vector<ggml_tensor*> outs;
    ggml_context* ctx = builder.build_graph(weights, build, gb, outs);
    if (!weights.status().ok()) {
        ggml_free(ctx);
        return weights.status();
    }
    ggml_cgraph* gf = new_output_graph(ctx, outs);
    Status ordered = order(gf);
    auto rs = ordered.ok() ? ranges(gf) : Result<std::vector<Range>>(ordered);
    if (!rs.ok()) {
        ggml_free(ctx);
        return rs.status();
    }
    if (!galloc_) galloc_ = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend_));
    if (!ggml_gallocr_alloc_graph(galloc_, gf)) {
        ggml_free(ctx);
        return Status::Error(
            string_format("%s: cannot allocate the compute buffer (%.1f MiB) on %s",
                          module_.c_str(), mib(planned_compute_), device_.c_str()));
    }
    gb.upload_inputs();

    auto ensure = [&](int segment, bool async) -> Status {
        if (segment < 0) return Status::Ok();
        int& holds = slot_holds_[static_cast<size_t>(slot_of_[static_cast<size_t>(segment)])];
        if (holds == segment) return Status::Ok();
        holds = segment;
        return timed_upload(segment, async);
    };
    // One graph per range holding its nodes (their sources are earlier nodes' results, in
    // the compute buffer already).
    size_t largest = 1;
    for (const Range& range : *rs) largest = std::max<size_t>(largest, range.end - range.begin);
    ggml_init_params gp = {rs->size() * ggml_graph_overhead_custom(largest, false), nullptr, true};
    ggml_context* gctx = ggml_init(gp);
    std::vector<ggml_cgraph*> views;
    for (const Range& range : *rs) {
        ggml_cgraph* g = ggml_new_graph_custom(gctx, largest, false);
        for (int i = range.begin; i < range.end; ++i)
            ggml_graph_add_node(g, ggml_graph_node(gf, i));
        views.push_back(g);
    }
    Status st = Status::Ok();
    for (size_t r = 0; r < rs->size() && st.ok(); ++r) {
        const Range& range = (*rs)[r];
        st = ensure(range.segment, false);
        if (!st.ok()) break;
        if (async_) ggml_backend_synchronize(backend_);
        ggml_cgraph* view = views[r];
        const int next = r + 1 < rs->size() ? (*rs)[r + 1].segment : -1;
        // The next segment may be brought in during this compute when it goes to another
        // slot than the one this range reads.
        const bool overlap =
            plan_->streamed && next >= 0 && range.segment >= 0 &&
            slot_of_[static_cast<size_t>(next)] != slot_of_[static_cast<size_t>(range.segment)];
        if (overlap && async_) {
            if (ggml_backend_graph_compute_async(backend_, view) != GGML_STATUS_SUCCESS) {
                st = Status::Error(label_ + ": graph computation failed");
                break;
            }
            st = ensure(next, true);
            ggml_backend_synchronize(backend_);
            continue;
        }
        std::thread reader;
        if (overlap) reader = std::thread([&, next] { prefetch_pages(weights, next); });
        const ggml_status cs = ggml_backend_graph_compute(backend_, view);
        if (reader.joinable()) reader.join();
        if (cs != GGML_STATUS_SUCCESS) st = Status::Error(label_ + ": graph computation failed");
    }
    ggml_free(gctx);
    if (!st.ok()) {
        ggml_free(ctx);
        return st;
    }
    if (pages_out_) {
        for (const auto& members : members_) {
            for (const std::string& n : members) {
                if (const TensorInfo* info = weights.source(n)) weights.index().release(*info);
            }
        }
    }
    stats_.upload_seconds = upload_s;
    GGDIFF_LOG_DEBUG("%s: %zu ranges, %.1f MiB of weights uploaded in %.2f s", label_.c_str(),
                     rs->size(), mib(stats_.uploaded_bytes), upload_s);
    count_flops(gf);
    auto results = read_outputs(outs, label_);
    ggml_free(ctx);
    return results;
}

}  // namespace ggdiff
