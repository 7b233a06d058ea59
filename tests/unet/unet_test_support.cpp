#include "unet_test_support.h"

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "devices/devices.h"

namespace ggdiff::unet_test {
namespace {

using Layout = std::map<std::string, std::vector<int64_t>>;
using models::UNetConfig;

// Mirrors the LDM module tree; kept apart from the builder so the two check each other.
struct LayoutWriter {
    const UNetConfig& cfg;
    std::string prefix;
    Layout out;

    void add(const std::string& name, std::vector<int64_t> shape) {
        out[prefix + name] = std::move(shape);
    }
    void conv(const std::string& p, int64_t o, int64_t i, int64_t k) {
        add(p + ".weight", {o, i, k, k});
        add(p + ".bias", {o});
    }
    void lin(const std::string& p, int64_t o, int64_t i, bool bias = true) {
        add(p + ".weight", {o, i});
        if (bias) add(p + ".bias", {o});
    }
    void norm(const std::string& p, int64_t ch) {
        add(p + ".weight", {ch});
        add(p + ".bias", {ch});
    }
    void resblock(const std::string& p, int64_t in, int64_t o) {
        norm(p + "in_layers.0", in);
        conv(p + "in_layers.2", o, in, 3);
        lin(p + "emb_layers.1", o, cfg.time_embed_dim);
        norm(p + "out_layers.0", o);
        conv(p + "out_layers.3", o, o, 3);
        if (in != o) conv(p + "skip_connection", o, in, 1);
    }
    void attn(const std::string& p, int64_t ch, int64_t kv) {
        lin(p + "to_q", ch, ch, false);
        lin(p + "to_k", ch, kv, false);
        lin(p + "to_v", ch, kv, false);
        lin(p + "to_out.0", ch, ch);
    }
    void proj(const std::string& p, int64_t ch) {
        if (cfg.linear_proj) {
            lin(p, ch, ch);
        } else {
            conv(p, ch, ch, 1);
        }
    }
    void transformer(const std::string& p, int64_t ch, int depth) {
        norm(p + "norm", ch);
        proj(p + "proj_in", ch);
        for (int d = 0; d < depth; ++d) {
            const std::string b = p + "transformer_blocks." + std::to_string(d) + ".";
            attn(b + "attn1.", ch, ch);
            attn(b + "attn2.", ch, cfg.context_dim);
            lin(b + "ff.net.0.proj", 8 * ch, ch);
            lin(b + "ff.net.2", ch, 4 * ch);
            norm(b + "norm1", ch);
            norm(b + "norm2", ch);
            norm(b + "norm3", ch);
        }
        proj(p + "proj_out", ch);
    }
    void block(const std::string& b, int64_t in, int64_t o, int depth) {
        resblock(b + "0.", in, o);
        if (depth > 0) transformer(b + "1.", o, depth);
    }
    void build();
};

void LayoutWriter::build() {
    const int64_t mc = cfg.model_channels, ted = cfg.time_embed_dim;
    lin("time_embed.0", ted, mc);
    lin("time_embed.2", ted, ted);
    if (cfg.adm_in_channels > 0) {
        lin("label_emb.0.0", ted, cfg.adm_in_channels);
        lin("label_emb.0.2", ted, ted);
    }
    conv("input_blocks.0.0", mc, cfg.in_channels, 3);
    std::vector<int64_t> chans{mc};
    int64_t ch = mc;
    int idx = 1;
    const size_t levels = cfg.channel_mult.size();
    for (size_t l = 0; l < levels; ++l) {
        for (int j = 0; j < cfg.num_res_blocks; ++j) {
            const int64_t o = cfg.channel_mult[l] * mc;
            block("input_blocks." + std::to_string(idx++) + ".", ch, o, cfg.transformer_depth[l]);
            ch = o;
            chans.push_back(ch);
        }
        if (l + 1 < levels) {
            conv("input_blocks." + std::to_string(idx++) + ".0.op", ch, ch, 3);
            chans.push_back(ch);
        }
    }
    resblock("middle_block.0.", ch, ch);
    if (cfg.middle_depth > 0) transformer("middle_block.1.", ch, cfg.middle_depth);
    resblock(cfg.middle_depth > 0 ? "middle_block.2." : "middle_block.1.", ch, ch);
    idx = 0;
    for (int l = static_cast<int>(levels) - 1; l >= 0; --l) {
        for (int j = 0; j <= cfg.num_res_blocks; ++j, ++idx) {
            const int64_t o = cfg.channel_mult[l] * mc;
            const std::string b = "output_blocks." + std::to_string(idx) + ".";
            block(b, ch + chans.back(), o, cfg.transformer_depth[l]);
            chans.pop_back();
            ch = o;
            if (l > 0 && j == cfg.num_res_blocks)
                conv(b + (cfg.transformer_depth[l] > 0 ? "2" : "1") + ".conv", ch, ch, 3);
        }
    }
    norm("out.0", mc);
    conv("out.2", cfg.out_channels, mc, 3);
}

int64_t numel(const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::vector<int64_t> squeeze(std::vector<int64_t> ne) {
    while (ne.size() > 1 && ne.back() == 1) ne.pop_back();
    return ne;
}

std::string shape_str(const std::vector<int64_t>& s) {
    std::ostringstream os;
    for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
    return os.str();
}

struct BackendDeleter {
    void operator()(ggml_backend* b) const { ggml_backend_free(b); }
};
using BackendPtr = std::unique_ptr<ggml_backend, BackendDeleter>;

BackendPtr cpu_backend() {
    static std::once_flag once;
    std::call_once(once, [] { ggml_backend_load_all(); });
    ggml_backend_t b = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
    if (!b) return nullptr;
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(ggml_backend_get_device(b));
    auto set_threads = reinterpret_cast<ggml_backend_set_n_threads_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads"));
    if (set_threads) set_threads(b, ggdiff::default_threads());
    return BackendPtr(b);
}

constexpr size_t kMaxNodes = 32768;

// A compute context that owns the graph and input tensors (no data).
struct GraphCtx {
    ggml_context* ctx = nullptr;
    GraphCtx() {
        ggml_init_params p = {
            kMaxNodes * ggml_tensor_overhead() + ggml_graph_overhead_custom(kMaxNodes, false),
            nullptr, true};
        ctx = ggml_init(p);
    }
    ~GraphCtx() { ggml_free(ctx); }
};

ggml_tensor* input(ggml_context* ctx, const std::vector<int64_t>& torch_shape) {
    std::vector<int64_t> ne(torch_shape.rbegin(), torch_shape.rend());
    ggml_tensor* t = ggml_new_tensor(ctx, GGML_TYPE_F32, static_cast<int>(ne.size()), ne.data());
    ggml_set_input(t);
    return t;
}

}  // namespace

std::map<std::string, std::vector<int64_t>> unet_layout(const UNetConfig& cfg,
                                                        const std::string& prefix) {
    LayoutWriter w{cfg, prefix, {}};
    w.build();
    return w.out;
}

Tensor random_tensor(std::vector<int64_t> shape, uint32_t seed, float scale) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    Tensor t{std::move(shape), {}};
    t.data.resize(static_cast<size_t>(numel(t.shape)));
    for (float& v : t.data) v = scale * nd(rng);
    return t;
}

TensorMap random_weights(const Layout& layout, uint32_t seed) {
    TensorMap out;
    uint32_t s = seed;
    for (const auto& [name, shape] : layout) {
        Tensor t;
        if (shape.size() == 1 && ends_with(name, ".weight")) {
            t = random_tensor(shape, ++s, 0.1f);
            for (float& v : t.data) v += 1.0f;  // norm scale
        } else if (shape.size() == 1) {
            t = random_tensor(shape, ++s, 0.1f);  // bias
        } else {
            const float fan_in = static_cast<float>(numel(shape) / shape[0]);
            t = random_tensor(shape, ++s, 1.0f / std::sqrt(fan_in));
        }
        out.emplace(name, std::move(t));
    }
    return out;
}

Status write_safetensors(const std::string& path, const TensorMap& tensors, bool zeros_f16) {
    const size_t esize = zeros_f16 ? 2 : 4;
    std::ostringstream h;
    h << "{\"__metadata__\":{\"format\":\"pt\"}";
    uint64_t off = 0;
    for (const auto& [name, t] : tensors) {
        const uint64_t n = static_cast<uint64_t>(numel(t.shape)) * esize;
        h << ",\"" << name << "\":{\"dtype\":\"" << (zeros_f16 ? "F16" : "F32") << "\",\"shape\":["
          << shape_str(t.shape) << "],\"data_offsets\":[" << off << "," << off + n << "]}";
        off += n;
    }
    h << "}";
    std::string header = h.str();
    while (header.size() % 8 != 0) header += ' ';
    std::ofstream f(path, std::ios::binary);
    if (!f) return Status::Error("cannot write " + path);
    const uint64_t hlen = header.size();
    f.write(reinterpret_cast<const char*>(&hlen), 8);
    f.write(header.data(), static_cast<std::streamsize>(header.size()));
    if (zeros_f16) {
        // Zeros need no writing: growing the file leaves a hole that reads as zeros and takes
        // no disk (the full-width layouts are gigabytes).
        f.close();
        if (!f) return Status::Error("short write to " + path);
        std::error_code ec;
        std::filesystem::resize_file(path, 8 + hlen + off, ec);
        return ec ? Status::Error("cannot size " + path + ": " + ec.message()) : Status::Ok();
    }
    for (const auto& [name, t] : tensors)
        f.write(reinterpret_cast<const char*>(t.data.data()),
                static_cast<std::streamsize>(t.data.size() * 4));
    return f ? Status::Ok() : Status::Error("short write to " + path);
}

MapWeights::MapWeights(const TensorMap& src) : src_(src) {
    ggml_init_params p = {16384 * ggml_tensor_overhead(), nullptr, true};
    wctx_ = ggml_init(p);
}

MapWeights::~MapWeights() {
    if (buffer_) ggml_backend_buffer_free(static_cast<ggml_backend_buffer_t>(buffer_));
    ggml_free(wctx_);
}

ggml_tensor* MapWeights::get(const std::string& name, const std::vector<int64_t>& ne_in) {
    requested_.insert(name);
    const std::vector<int64_t> want = squeeze(ne_in);
    auto made = made_.find(name);
    if (made != made_.end()) return made->second;
    auto it = src_.find(name);
    if (status_.ok()) {
        if (it == src_.end()) {
            status_ = Status::Error("missing weight " + name);
        } else if (numel(it->second.shape) != numel(want)) {
            status_ = Status::Error("weight " + name + " has torch shape [" +
                                    shape_str(it->second.shape) + "], asked ggml [" +
                                    shape_str(want) + "]");
        }
    }
    ggml_tensor* t =
        ggml_new_tensor(wctx_, GGML_TYPE_F32, static_cast<int>(want.size()), want.data());
    made_[name] = t;
    return t;
}

Status MapWeights::upload(void* backend) {
    ggml_backend_buffer_t buf =
        ggml_backend_alloc_ctx_tensors(wctx_, static_cast<ggml_backend_t>(backend));
    if (!buf) return Status::Error("cannot allocate weights");
    buffer_ = buf;
    for (const auto& [name, t] : made_) {
        auto it = src_.find(name);
        if (it == src_.end() || it->second.data.size() != static_cast<size_t>(ggml_nelements(t))) {
            ggml_backend_tensor_memset(t, 0, 0, ggml_nbytes(t));
        } else {
            ggml_backend_tensor_set(t, it->second.data.data(), 0, ggml_nbytes(t));
        }
    }
    return Status::Ok();
}

Result<HostTensor> run_unet(const UNetConfig& cfg, const TensorMap& weights, const UNetInputs& in,
                            const std::string& prefix, int* nodes) {
    BackendPtr backend = cpu_backend();
    if (!backend) return Status::Error("no CPU backend");
    MapWeights w(weights);
    GraphCtx g;
    ggml_tensor* x = input(g.ctx, in.x.shape);
    ggml_tensor* t = input(g.ctx, in.timesteps.shape);
    ggml_tensor* context = input(g.ctx, in.context.shape);
    nn::Ctx c{g.ctx, &w};
    ggml_tensor* out = models::build_unet(c, cfg, x, t, context, prefix);
    ggml_set_output(out);
    if (!w.status().ok()) return w.status();
    ggml_cgraph* gf = ggml_new_graph_custom(g.ctx, kMaxNodes, false);
    ggml_build_forward_expand(gf, out);
    if (nodes) *nodes = ggml_graph_n_nodes(gf);
    GGDIFF_TRY(w.upload(backend.get()));
    ggml_gallocr_t alloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend.get()));
    if (!ggml_gallocr_alloc_graph(alloc, gf)) {
        ggml_gallocr_free(alloc);
        return Status::Error("cannot allocate the graph");
    }
    // An input the graph does not use (context without attention) has no buffer.
    for (auto [tensor, data] : {std::pair{x, &in.x}, {t, &in.timesteps}, {context, &in.context}})
        if (tensor->buffer)
            ggml_backend_tensor_set(tensor, data->data.data(), 0, ggml_nbytes(tensor));
    const ggml_status st = ggml_backend_graph_compute(backend.get(), gf);
    HostTensor result({out->ne[0], out->ne[1], out->ne[2], out->ne[3]});
    if (st == GGML_STATUS_SUCCESS) ggml_backend_tensor_get(out, result.ptr(), 0, ggml_nbytes(out));
    ggml_gallocr_free(alloc);
    if (st != GGML_STATUS_SUCCESS) return Status::Error("graph compute failed");
    return result;
}

Result<std::set<std::string>> requested_weights(const UNetConfig& cfg, const TensorMap& weights,
                                                const std::string& prefix, int64_t latent,
                                                int* nodes) {
    MapWeights w(weights);
    GraphCtx g;
    ggml_tensor* x = input(g.ctx, {1, cfg.in_channels, latent, latent});
    ggml_tensor* t = input(g.ctx, {1});
    ggml_tensor* context = input(g.ctx, {1, 77, cfg.context_dim});
    nn::Ctx c{g.ctx, &w};
    ggml_tensor* out = models::build_unet(c, cfg, x, t, context, prefix);
    if (!w.status().ok()) return w.status();
    if (out->ne[0] != latent || out->ne[1] != latent || out->ne[2] != cfg.out_channels)
        return Status::Error("output has the wrong shape");
    ggml_cgraph* gf = ggml_new_graph_custom(g.ctx, kMaxNodes, false);
    ggml_build_forward_expand(gf, out);
    if (nodes) *nodes = ggml_graph_n_nodes(gf);
    return w.requested();
}

}  // namespace ggdiff::unet_test
