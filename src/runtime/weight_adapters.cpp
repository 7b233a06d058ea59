#include "runtime/weight_adapters.h"

#include <ggml-alloc.h>

#include <algorithm>
#include <deque>

namespace ggdiff {

void AdapterSet::clear() {
    table_.clear();
    for (ggml_backend_buffer_t b : buffers_) ggml_backend_buffer_free(b);
    buffers_.clear();
    if (ctx_) ggml_free(ctx_);
    ctx_ = nullptr;
}

size_t AdapterSet::bytes() const {
    size_t n = 0;
    for (ggml_backend_buffer_t b : buffers_) n += ggml_backend_buffer_get_size(b);
    return n;
}

Status AdapterSet::build(const WeightStore& store,
                         const std::vector<std::pair<std::string, const LoraUpdate*>>& updates,
                         const WeightStore::BufferTypeFn& buft_for) {
    clear();
    if (updates.empty()) return Status::Ok();
    ggml_init_params p = {(3 * updates.size() + 1) * ggml_tensor_overhead(), nullptr, true};
    ctx_ = ggml_init(p);
    struct Upload {
        ggml_tensor* t;
        const std::vector<float>* data;
    };
    std::vector<Upload> uploads;
    // Updates of some rows only (part of a fused weight) act on the whole weight's output
    // with zero rows elsewhere.
    std::deque<std::vector<float>> spread;
    std::vector<std::pair<ggml_tensor*, ggml_backend_buffer_type_t>> placed;
    for (const auto& [name, u] : updates) {
        const ggml_tensor* w = store.tensor(name);
        if (!w) return Status::Error("no weight " + name + " to adapt");
        // [kw, kh, in, out]: a linear weight [in, out] is a 1x1 kernel.
        const bool conv = ggml_n_dims(w) == 4;
        const int64_t kw = conv ? w->ne[0] : 1, kh = conv ? w->ne[1] : 1;
        const int64_t in = conv ? w->ne[2] : w->ne[0], out = conv ? w->ne[3] : w->ne[1];
        WeightAdapter a;
        a.scale = u->low_rank() ? u->scale : 1.0f;
        if (u->low_rank()) {
            a.down = ggml_new_tensor_4d(ctx_, GGML_TYPE_F32, kw, kh, in, u->rank);
            a.up = ggml_new_tensor_4d(ctx_, GGML_TYPE_F32, 1, 1, u->rank, out);
            uploads.push_back({a.down, &u->down});
            if (u->whole()) {
                uploads.push_back({a.up, &u->up});
            } else {
                spread.push_back(spread_rows(*u, u->up, u->rank));
                uploads.push_back({a.up, &spread.back()});
            }
        } else {
            a.dense = ggml_new_tensor_4d(ctx_, GGML_TYPE_F32, kw, kh, in, out);
            if (u->whole()) {
                uploads.push_back({a.dense, &u->dense});
            } else {
                spread.push_back(spread_rows(*u, u->dense, u->k));
                uploads.push_back({a.dense, &spread.back()});
            }
        }
        for (ggml_tensor* t : {a.down, a.up, a.dense}) {
            if (t) placed.emplace_back(t, buft_for(name));
        }
        table_[name].push_back(a);
    }
    // One buffer per buffer type.
    std::vector<ggml_backend_buffer_type_t> types;
    for (const auto& pl : placed) {
        if (std::find(types.begin(), types.end(), pl.second) == types.end())
            types.push_back(pl.second);
    }
    for (ggml_backend_buffer_type_t bt : types) {
        const size_t align = ggml_backend_buft_get_alignment(bt);
        size_t size = 0;
        for (const auto& pl : placed) {
            if (pl.second == bt)
                size += GGML_PAD(ggml_backend_buft_get_alloc_size(bt, pl.first), align);
        }
        ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(bt, std::max(size, align));
        if (!buf) {
            clear();
            return Status::Error("cannot allocate run-time LoRA tensors on " +
                                 std::string(ggml_backend_buft_name(bt)));
        }
        buffers_.push_back(buf);
        ggml_tallocr alloc = ggml_tallocr_new(buf);
        for (const auto& pl : placed) {
            if (pl.second == bt && ggml_tallocr_alloc(&alloc, pl.first) != GGML_STATUS_SUCCESS) {
                clear();
                return Status::Error("cannot place run-time LoRA tensors");
            }
        }
    }
    for (const Upload& up : uploads) {
        if (static_cast<int64_t>(up.data->size()) != ggml_nelements(up.t)) {
            clear();
            return Status::Error("run-time LoRA tensor of the wrong size");
        }
        ggml_backend_tensor_set(up.t, up.data->data(), 0, up.data->size() * sizeof(float));
    }
    return Status::Ok();
}

}  // namespace ggdiff
