#include "runtime/weight_store.h"

#include <ggml-alloc.h>

#include <algorithm>
#include <cstring>

#include "core/log.h"
#include "io/checkpoint_file.h"
#include "io/weight_type.h"
#include "runtime/cpu_kernels.h"
#include "runtime/huge_pages.h"
#include "runtime/tensor_upload.h"

namespace ggdiff {
namespace {

// Drops trailing 1s so that {C} and {C,1,1,1} compare equal.
std::vector<int64_t> squeeze_tail(std::vector<int64_t> ne) {
    while (ne.size() > 1 && ne.back() == 1) ne.pop_back();
    return ne;
}

std::vector<int64_t> squeeze_all(const std::vector<int64_t>& ne) {
    std::vector<int64_t> out;
    for (int64_t d : ne) {
        if (d != 1) out.push_back(d);
    }
    return out;
}

int64_t product(const std::vector<int64_t>& ne) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    return n;
}

constexpr size_t kMaxWeights = 16384;

}  // namespace

WeightStore::WeightStore(const TensorIndex& index, int weight_type)
    : index_(index), weight_type_(weight_type) {
    ggml_init_params p = {kMaxWeights * ggml_tensor_overhead(), nullptr, true};
    wctx_ = ggml_init(p);
}

WeightStore::~WeightStore() {
    release();
    for (ggml_backend_buffer_t b : params_buffers_) ggml_backend_buffer_free(b);
    if (params_ctx_) ggml_free(params_ctx_);
    if (wctx_) ggml_free(wctx_);
}

bool WeightStore::has(const std::string& name) const {
    return index_.has(name);
}

const std::vector<WeightAdapter>* WeightStore::adapters(const std::string& name) const {
    if (!adapters_) return nullptr;
    auto it = adapters_->find(name);
    return it == adapters_->end() || it->second.empty() ? nullptr : &it->second;
}

int WeightStore::choose_type(const TensorInfo& info, size_t n_dims) const {
    // Stored types that the ops handle are used as they are (in place from the mapped
    // file where the weight stays in host memory).
    int stored = -1;
    switch (info.dtype) {
        case DType::F32:
            stored = GGML_TYPE_F32;
            break;
        case DType::F16:
            stored = GGML_TYPE_F16;
            break;
        case DType::BF16:
            // The CPU kernels widen bf16 as they read it; other backends get f16.
            stored = cpu_kernels_ ? GGML_TYPE_BF16 : -1;
            break;
        case DType::GGML:
            stored = info.ggml_type;
            break;
        default:
            stored = -1;
    }
    if (n_dims <= 1) return GGML_TYPE_F32;  // norms and biases stay f32
    // Convolution kernels: float types only (im2col, and the CPU kernels widen f16/bf16).
    auto conv_type = [this](int t) {
        const bool ok = cpu_kernels_ ? cpu::weight_type_ok(static_cast<ggml_type>(t))
                                     : t == GGML_TYPE_F32 || t == GGML_TYPE_F16;
        return ok ? t : GGML_TYPE_F16;
    };
    if (weight_type_ >= 0) {
        const int t = choose_weight_type(info, weight_type_);
        return n_dims == 4 ? conv_type(t) : t;
    }
    if (stored >= 0) return n_dims == 4 ? conv_type(stored) : stored;
    return GGML_TYPE_F16;  // F8, F64, ints, and bf16 off the CPU kernels: converted to f16
}

ggml_tensor* WeightStore::get(const std::string& name, const std::vector<int64_t>& ne_in) {
    std::vector<int64_t> ne = ne_in;
    while (ne.size() < 1) ne.push_back(1);
    auto it = tensors_.find(name);
    if (it != tensors_.end()) {
        ggml_tensor* t = it->second;
        std::vector<int64_t> have(t->ne, t->ne + ggml_n_dims(t));
        if (squeeze_tail(have) == squeeze_tail(ne)) return t;
        if (product(have) == product(ne) && compute_ctx_ && ggml_is_contiguous(t)) {
            int64_t d[4] = {1, 1, 1, 1};
            for (size_t i = 0; i < ne.size() && i < 4; ++i) d[i] = ne[i];
            return ggml_reshape_4d(compute_ctx_, t, d[0], d[1], d[2], d[3]);
        }
        if (status_.ok()) {
            status_ = Status::Error("weight " + name + " is used with shapes " +
                                    shape_string(have) + " and " + shape_string(ne));
        }
        return t;
    }

    const TensorInfo* info = index_.find(name);
    int type = GGML_TYPE_F32;
    if (!info) {
        if (status_.ok()) status_ = Status::Error("missing tensor " + name);
    } else {
        std::vector<int64_t> stored = info->ne();
        // Dimensions past the fourth (Wan's 5-D conv3d kernels) fold into the fourth.
        while (stored.size() > 4) {
            stored[3] *= stored.back();
            stored.pop_back();
        }
        // Same sizes in the same order, ignoring size-1 dimensions: a [C,C,1,1] kernel
        // serves as a [C,C] matrix, but a transposed or reshaped tensor is an error.
        if (squeeze_all(stored) != squeeze_all(ne)) {
            if (status_.ok()) {
                status_ = Status::Error(
                    "tensor " + name + " has shape " + shape_string(info->shape) + " (ggml " +
                    shape_string(stored) + "), expected ggml " + shape_string(ne));
            }
        } else {
            type = choose_type(*info, squeeze_tail(ne).size());
            // A quantized type needs ne[0] to be a multiple of its block size.
            if (ggml_blck_size(static_cast<ggml_type>(type)) > 1 &&
                ne[0] % ggml_blck_size(static_cast<ggml_type>(type)) != 0) {
                type = GGML_TYPE_F16;
            }
        }
        infos_[name] = info;
    }
    int64_t d[4] = {1, 1, 1, 1};
    for (size_t i = 0; i < ne.size() && i < 4; ++i) d[i] = ne[i];
    ggml_tensor* t =
        ggml_new_tensor_4d(wctx_, static_cast<ggml_type>(type), d[0], d[1], d[2], d[3]);
    // Our own key is the identity; the ggml name is only a (truncated) debugging aid.
    ggml_set_name(t, name.size() < GGML_MAX_NAME
                         ? name.c_str()
                         : name.substr(name.size() - GGML_MAX_NAME + 1).c_str());
    tensors_[name] = t;
    order_.emplace_back(name, t);
    return t;
}

Status WeightStore::load(ggml_backend_buffer_type_t buft) {
    return load_placed([buft](const std::string&) { return buft; });
}

ggml_tensor* WeightStore::tensor(const std::string& name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : it->second;
}

Status WeightStore::allocate(const TensorList& list, const BufferTypeFn& buft_for,
                             std::vector<ggml_backend_buffer_t>& out) {
    // Group the weights by buffer type, then place each group with a tensor allocator.
    std::vector<ggml_backend_buffer_type_t> types;
    std::vector<std::vector<ggml_tensor*>> groups;
    for (const auto& [name, t] : list) {
        ggml_backend_buffer_type_t b = buft_for(name);
        size_t g = std::find(types.begin(), types.end(), b) - types.begin();
        if (g == types.size()) {
            types.push_back(b);
            groups.emplace_back();
        }
        groups[g].push_back(t);
    }
    for (size_t g = 0; g < types.size(); ++g) {
        const size_t align = ggml_backend_buft_get_alignment(types[g]);
        size_t size = 0;
        for (ggml_tensor* t : groups[g]) {
            size += GGML_PAD(ggml_backend_buft_get_alloc_size(types[g], t), align);
        }
        ggml_backend_buffer_t buf =
            ggml_backend_buft_alloc_buffer(types[g], std::max<size_t>(size, align));
        if (!buf) {
            return Status::Error(string_format("cannot allocate %.1f MiB of weights on %s",
                                               size / 1048576.0, ggml_backend_buft_name(types[g])));
        }
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        advise_huge_pages(buf);
        out.push_back(buf);
        ggml_tallocr alloc = ggml_tallocr_new(buf);
        for (ggml_tensor* t : groups[g]) {
            if (ggml_tallocr_alloc(&alloc, t) != GGML_STATUS_SUCCESS) {
                return Status::Error("cannot place weights in their buffer");
            }
        }
    }
    return Status::Ok();
}

Status WeightStore::read_into(const TensorList& list) {
    std::vector<uint8_t> staging;
    for (const auto& [name, t] : list) {
        auto it = infos_.find(name);
        if (it == infos_.end()) return Status::Error("missing tensor " + name);
        const size_t nb = ggml_nbytes(t);
        const bool host = ggml_backend_buffer_is_host(t->buffer);
        void* dst = t->data;
        if (!host) {
            staging.resize(nb);
            dst = staging.data();
        }
        Status st = index_.read(*it->second, t->type, dst);
        if (!st.ok()) return st.with_context("reading " + name);
        if (!host) set_tensor_in_pieces(t, staging.data(), 0, nb);
        // The weight now lives in its own buffer: the file's pages can go (they would
        // otherwise stay in this process's resident set next to the copy).
        index_.release(*it->second);
    }
    return Status::Ok();
}

Status WeightStore::load_placed(const BufferTypeFn& buft_for) {
    if (!status_.ok()) return status_;
    release();
    // Weights for host memory whose stored bytes are already what the graph uses are
    // used in place from the mapped file; the rest are allocated and read (converted).
    const ggml_backend_buffer_type_t cpu_buft =
        ggml_backend_dev_buffer_type(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU));
    struct InPlace {
        ggml_tensor* tensor;
        const uint8_t* base;  // the mapping of the tensor's file
        const uint8_t* data;
    };
    std::vector<InPlace> in_place;
    std::map<const uint8_t*, size_t> extent;  // per mapped file: bytes the weights reach
    TensorList copied;
    for (const auto& entry : order_) {
        ggml_tensor* t = entry.second;
        auto it = infos_.find(entry.first);
        if (it != infos_.end() && buft_for(entry.first) == cpu_buft &&
            it->second->ggml_type == static_cast<int>(t->type) &&
            it->second->nbytes == ggml_nbytes(t)) {
            const uint8_t* data = index_.raw(*it->second);
            const uint8_t* base = data - it->second->offset;
            in_place.push_back({t, base, data});
            extent[base] = std::max<size_t>(extent[base], it->second->offset + it->second->nbytes);
        } else {
            copied.push_back(entry);
        }
    }
    std::map<const uint8_t*, ggml_backend_buffer_t> mapped;
    for (const auto& [base, size] : extent) {
        ggml_backend_buffer_t buf =
            ggml_backend_cpu_buffer_from_ptr(const_cast<uint8_t*>(base), size);
        if (!buf) return Status::Error("cannot map the checkpoint's weights");
        buffers_.push_back(buf);
        mapped_buffers_.push_back(buf);
        mapped[base] = buf;
    }
    for (const InPlace& w : in_place) {
        ggml_backend_tensor_alloc(mapped[w.base], w.tensor, const_cast<uint8_t*>(w.data));
    }
    Status st = allocate(copied, buft_for, buffers_);
    if (st.ok()) st = read_into(copied);
    if (!st.ok()) release();
    if (st.ok() && !in_place.empty()) {
        GGDIFF_LOG_DEBUG("%zu of %zu weights used in place from the mapped checkpoint",
                         in_place.size(), order_.size());
    }
    return st;
}

Status WeightStore::load_params(ggml_backend_buffer_type_t params_buft) {
    if (!status_.ok()) return status_;
    if (!params_buffers_.empty()) return Status::Ok();
    if (!params_ctx_) {
        ggml_init_params p = {(order_.size() + 1) * ggml_tensor_overhead(), nullptr, true};
        params_ctx_ = ggml_init(p);
        for (const auto& [name, t] : order_) {
            params_order_.emplace_back(name, ggml_dup_tensor(params_ctx_, t));
        }
    }
    Status st = allocate(
        params_order_, [params_buft](const std::string&) { return params_buft; }, params_buffers_);
    if (st.ok()) st = read_into(params_order_);
    return st;
}

Status WeightStore::stage(const BufferTypeFn& buft_for) {
    if (params_buffers_.empty())
        return Status::Error("weights were not loaded to their params device");
    release();
    Status st = allocate(order_, buft_for, buffers_);
    if (!st.ok()) {
        release();
        return st;
    }
    for (size_t i = 0; i < order_.size(); ++i) {
        ggml_backend_tensor_copy(params_order_[i].second, order_[i].second);
    }
    return Status::Ok();
}

void WeightStore::release() {
    for (ggml_backend_buffer_t b : buffers_) ggml_backend_buffer_free(b);
    buffers_.clear();
    mapped_buffers_.clear();
    // Tensors keep their shapes and types; only the memory behind them is gone.
    for (auto& kv : order_) {
        kv.second->data = nullptr;
        kv.second->buffer = nullptr;
    }
}

size_t WeightStore::release_pages() {
    size_t n = 0;
    for (const auto& [name, t] : order_) {
        if (!in_mapped_file(name)) continue;
        index_.release(*infos_.at(name));
        n += ggml_nbytes(t);
    }
    return n;
}

const TensorInfo* WeightStore::source(const std::string& name) const {
    auto it = infos_.find(name);
    return it == infos_.end() ? nullptr : it->second;
}

bool WeightStore::in_mapped_file(const std::string& name) const {
    const ggml_tensor* t = tensor(name);
    return t && t->buffer &&
           std::find(mapped_buffers_.begin(), mapped_buffers_.end(), t->buffer) !=
               mapped_buffers_.end();
}

Status WeightStore::detach(const std::vector<std::string>& names) {
    TensorList list;
    for (const std::string& n : names) {
        if (in_mapped_file(n)) list.emplace_back(n, tensor(n));
    }
    if (list.empty()) return Status::Ok();
    // Keep the current contents, re-point the tensors at a new host buffer, copy back.
    std::vector<std::vector<uint8_t>> saved;
    for (auto& [name, t] : list) {
        saved.emplace_back(static_cast<const uint8_t*>(t->data),
                           static_cast<const uint8_t*>(t->data) + ggml_nbytes(t));
        t->data = nullptr;
        t->buffer = nullptr;
    }
    const ggml_backend_buffer_type_t cpu_buft =
        ggml_backend_dev_buffer_type(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU));
    Status st = allocate(
        list, [cpu_buft](const std::string&) { return cpu_buft; }, buffers_);
    if (!st.ok()) return st.with_context("giving patched weights their own memory");
    for (size_t i = 0; i < list.size(); ++i) {
        std::memcpy(list[i].second->data, saved[i].data(), saved[i].size());
    }
    return Status::Ok();
}

size_t WeightStore::bytes() const {
    size_t n = 0;
    for (const auto& kv : order_) n += ggml_nbytes(kv.second);
    return n;
}

}  // namespace ggdiff
