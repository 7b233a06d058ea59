#include "runtime/lora_delta.h"

#include <ggml-alloc.h>
#include <ggml-backend.h>

#include <algorithm>

#include "io/checkpoint_file.h"
#include "runtime/cpu_kernels.h"
#include "runtime/graph_runner.h"

namespace ggdiff {
namespace {

int64_t numel(const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
}

// Reads the module's tensors and names them in errors.
class Reader {
  public:
    Reader(const LoraFile& f, const LoraModule& m, const std::vector<int64_t>& w,
           const std::string& weight)
        : f_(f), m_(m), w_(w), weight_(weight) {}

    const std::vector<int64_t>& shape(LoraPart p) const { return m_.get(p)->shape; }

    Status read(LoraPart p, std::vector<float>& out) const {
        Status st = f_.index().read_f32(*m_.get(p), out);
        return st.ok() ? st : st.with_context(name(p));
    }
    Result<float> scalar(LoraPart p) const {
        std::vector<float> v;
        GGDIFF_TRY(read(p, v));
        if (v.size() != 1) return mismatch(p, "is not a single value");
        return v[0];
    }
    std::string name(LoraPart p) const {
        return "LoRA " + f_.path() + ": tensor " + m_.get(p)->source_name;
    }
    Status mismatch(LoraPart p, const std::string& why) const {
        return Status::Error(name(p) + " with shape " + shape_string(shape(p)) + " " + why +
                             " (model weight " + weight_ + " has shape " + shape_string(w_) + ")");
    }

  private:
    const LoraFile& f_;
    const LoraModule& m_;
    const std::vector<int64_t>& w_;
    const std::string& weight_;
};

// An [rows, inner] factor pair a @ b checked to give [rows, cols].
struct Factor {
    std::vector<float> data;
    int64_t rows = 0, cols = 0;
};

Result<Factor> product(const Reader& r, LoraPart pa, LoraPart pb, int threads) {
    const auto& sa = r.shape(pa);
    const auto& sb = r.shape(pb);
    if (sa.size() < 2 || sb.empty()) return r.mismatch(pa, "is not a matrix");
    const int64_t rank = sb[0];
    if (sa[1] != rank || numel(sa) != sa[0] * rank) {
        return r.mismatch(pa,
                          "does not match the rank " + std::to_string(rank) + " of " + r.name(pb));
    }
    Factor f;
    f.rows = sa[0];
    f.cols = numel(sb) / rank;
    std::vector<float> a, b;
    GGDIFF_TRY(r.read(pa, a));
    GGDIFF_TRY(r.read(pb, b));
    auto p = cpu_matmul(a, b, f.rows, rank, f.cols, threads);
    if (!p.ok()) return p.status();
    f.data = std::move(*p);
    return f;
}

Result<Factor> whole_or_product(const Reader& r, const LoraModule& m, LoraPart whole, LoraPart a,
                                LoraPart b, int threads) {
    if (m.has(whole)) {
        Factor f;
        const auto& s = r.shape(whole);
        f.rows = s.empty() ? 1 : s[0];
        f.cols = numel(s) / std::max<int64_t>(1, f.rows);
        GGDIFF_TRY(r.read(whole, f.data));
        return f;
    }
    if (!m.has(a) || !m.has(b)) {
        return Status::Error("LoKr module without " + std::string(lora_part_name(a)));
    }
    return product(r, a, b, threads);
}

}  // namespace

Result<std::vector<float>> cpu_matmul(const std::vector<float>& a, const std::vector<float>& b,
                                      int64_t m, int64_t r, int64_t n, int threads) {
    // Small products (most LoRA modules) are cheaper in one plain loop than a graph on the
    // backend's thread pool.
    if (m * r * n <= (int64_t(1) << 24)) {
        std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
        for (int64_t i = 0; i < m; ++i) {
            float* row = c.data() + i * n;
            for (int64_t k = 0; k < r; ++k) {
                const float v = a[i * r + k];
                const float* brow = b.data() + k * n;
                for (int64_t j = 0; j < n; ++j) row[j] += v * brow[j];
            }
        }
        return c;
    }
    // ggml_mul_mat(x, y): x [r, n] (b transposed), y [r, m] (a) -> [n, m] = (a @ b) row-major.
    std::vector<float> bt(static_cast<size_t>(r * n));
    for (int64_t i = 0; i < r; ++i) {
        for (int64_t j = 0; j < n; ++j) bt[j * r + i] = b[i * n + j];
    }
    ggml_backend_t cpu = nullptr;
    for (ggml_backend_t be : cpu_backends(threads)) {
        ggml_backend_dev_t d = ggml_backend_get_device(be);
        if (d && ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_CPU) cpu = be;
    }
    if (!cpu) return Status::Error("no CPU backend for LoRA products");
    ggml_init_params p = {8 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true};
    ggml_context* ctx = ggml_init(p);
    ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, r, n);
    ggml_tensor* y = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, r, m);
    ggml_tensor* out = nullptr;
    {
        cpu::KernelScope scope(cpu::kernels_available() ? ctx : nullptr);
        out = cpu::enabled(ctx) && cpu::can_mul_mat(x, y) ? cpu::mul_mat(ctx, x, y)
                                                          : ggml_mul_mat(ctx, x, y);
    }
    ggml_cgraph* gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, cpu);
    if (!buf) {
        ggml_free(ctx);
        return Status::Error("out of memory for a LoRA product");
    }
    ggml_backend_tensor_set(x, bt.data(), 0, bt.size() * sizeof(float));
    ggml_backend_tensor_set(y, a.data(), 0, a.size() * sizeof(float));
    const ggml_status st = ggml_backend_graph_compute(cpu, gf);
    std::vector<float> result;
    if (st == GGML_STATUS_SUCCESS) {
        result.resize(static_cast<size_t>(m * n));
        ggml_backend_tensor_get(out, result.data(), 0, result.size() * sizeof(float));
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    if (st != GGML_STATUS_SUCCESS) return Status::Error("LoRA product failed");
    return result;
}

Result<LoraUpdate> read_lora_update(const LoraFile& file, const LoraModule& m,
                                    const std::vector<int64_t>& w, float multiplier,
                                    const std::string& weight_name) {
    const Reader r(file, m, w, weight_name);
    const int64_t out = w.empty() ? 1 : w[0];
    const int64_t k = numel(w) / std::max<int64_t>(1, out);
    LoraUpdate u;
    u.out = out;
    u.k = k;
    if (w.size() == 4) {
        u.kh = w[2];
        u.kw = w[3];
    }
    const int threads = -1;

    if (m.has(LoraPart::Down) && m.has(LoraPart::Up)) {
        const auto& d = r.shape(LoraPart::Down);
        const auto& up = r.shape(LoraPart::Up);
        if (d.empty()) return r.mismatch(LoraPart::Down, "is not a matrix");
        u.rank = d[0];
        if (up.size() < 2 || up[0] != out) {
            return r.mismatch(LoraPart::Up,
                              "does not give the weight's " + std::to_string(out) + " outputs");
        }
        if (up[1] != u.rank || numel(up) != out * u.rank) {
            return r.mismatch(LoraPart::Up, "does not match the rank " + std::to_string(u.rank) +
                                                " of " + r.name(LoraPart::Down));
        }
        if (numel(d) != u.rank * k) {
            return r.mismatch(LoraPart::Down, "does not take the weight's inputs");
        }
        u.scale = 1.0f;
        if (m.has(LoraPart::Scale)) {
            auto s = r.scalar(LoraPart::Scale);
            if (!s.ok()) return s.status();
            u.scale = *s;
        } else if (m.has(LoraPart::Alpha)) {
            auto a = r.scalar(LoraPart::Alpha);
            if (!a.ok()) return a.status();
            u.scale = *a / static_cast<float>(u.rank);
        }
        u.scale *= multiplier;
        GGDIFF_TRY(r.read(LoraPart::Down, u.down));
        GGDIFF_TRY(r.read(LoraPart::Up, u.up));
        return u;
    }

    std::vector<float> dense;
    float scale = 1.0f;
    if (m.has(LoraPart::HadaW1A) && m.has(LoraPart::HadaW1B) && m.has(LoraPart::HadaW2A) &&
        m.has(LoraPart::HadaW2B)) {
        auto p1 = product(r, LoraPart::HadaW1A, LoraPart::HadaW1B, threads);
        if (!p1.ok()) return p1.status();
        auto p2 = product(r, LoraPart::HadaW2A, LoraPart::HadaW2B, threads);
        if (!p2.ok()) return p2.status();
        if (p1->rows != out || p1->cols != k) {
            return r.mismatch(LoraPart::HadaW1A, "does not give the weight's shape");
        }
        if (p2->rows != out || p2->cols != k) {
            return r.mismatch(LoraPart::HadaW2A, "does not give the weight's shape");
        }
        dense.resize(p1->data.size());
        for (size_t i = 0; i < dense.size(); ++i) dense[i] = p1->data[i] * p2->data[i];
        if (m.has(LoraPart::Alpha)) {
            auto a = r.scalar(LoraPart::Alpha);
            if (!a.ok()) return a.status();
            scale = *a / static_cast<float>(r.shape(LoraPart::HadaW1B)[0]);
        }
    } else if ((m.has(LoraPart::LokrW1) || m.has(LoraPart::LokrW1A)) &&
               (m.has(LoraPart::LokrW2) || m.has(LoraPart::LokrW2A))) {
        auto w1 =
            whole_or_product(r, m, LoraPart::LokrW1, LoraPart::LokrW1A, LoraPart::LokrW1B, threads);
        if (!w1.ok()) return w1.status();
        auto w2 =
            whole_or_product(r, m, LoraPart::LokrW2, LoraPart::LokrW2A, LoraPart::LokrW2B, threads);
        if (!w2.ok()) return w2.status();
        const int64_t a = w1->rows, b = w1->cols, c = w2->rows, q = w2->cols;
        if (a * c != out || b * q != k) {
            return r.mismatch(m.has(LoraPart::LokrW1) ? LoraPart::LokrW1 : LoraPart::LokrW1A,
                              "and its LoKr partner do not multiply to the weight's shape");
        }
        // kron: row i*c + kk, column j*q + t holds w1[i, j] * w2[kk, t].
        dense.resize(static_cast<size_t>(out * k));
        for (int64_t i = 0; i < a; ++i)
            for (int64_t kk = 0; kk < c; ++kk)
                for (int64_t j = 0; j < b; ++j) {
                    const float v = w1->data[i * b + j];
                    float* row = dense.data() + (i * c + kk) * k + j * q;
                    const float* src = w2->data.data() + kk * q;
                    for (int64_t t = 0; t < q; ++t) row[t] = v * src[t];
                }
        int64_t rank = 1;
        if (m.has(LoraPart::LokrW1B)) rank = r.shape(LoraPart::LokrW1B)[0];
        if (m.has(LoraPart::LokrW2B)) rank = r.shape(LoraPart::LokrW2B)[0];
        if (m.has(LoraPart::Alpha) && rank != 1) {
            auto al = r.scalar(LoraPart::Alpha);
            if (!al.ok()) return al.status();
            scale = *al / static_cast<float>(rank);
        }
    } else if (m.has(LoraPart::Diff)) {
        if (numel(r.shape(LoraPart::Diff)) != out * k) {
            return r.mismatch(LoraPart::Diff, "does not have the weight's size");
        }
        GGDIFF_TRY(r.read(LoraPart::Diff, dense));
    } else {
        return Status::Error("LoRA " + file.path() + ": module for " + weight_name +
                             " has no complete set of tensors (lora_down + lora_up, hada_*, "
                             "lokr_* or diff)");
    }
    scale *= multiplier;
    for (float& v : dense) v *= scale;
    u.dense = std::move(dense);
    return u;
}

LoraUpdate select_rows(const LoraUpdate& u, const std::vector<LoraRows>& blocks,
                       int64_t weight_rows) {
    if (blocks.size() == 1 && blocks[0].from == 0 && blocks[0].to == 0 &&
        blocks[0].count == u.out && u.out == weight_rows && u.whole()) {
        return u;
    }
    LoraUpdate s;
    s.rank = u.rank;
    s.k = u.k;
    s.kh = u.kh;
    s.kw = u.kw;
    s.scale = u.scale;
    s.down = u.down;
    s.weight_rows = weight_rows;
    const std::vector<float>& src = u.low_rank() ? u.up : u.dense;
    std::vector<float>& dst = u.low_rank() ? s.up : s.dense;
    const int64_t len = u.low_rank() ? u.rank : u.k;
    for (const LoraRows& b : blocks) {
        s.rows.push_back({s.out, b.to, b.count});
        dst.insert(dst.end(), src.begin() + b.from * len, src.begin() + (b.from + b.count) * len);
        s.out += b.count;
    }
    return s;
}

std::vector<float> spread_rows(const LoraUpdate& u, const std::vector<float>& data,
                               int64_t row_len) {
    if (u.whole()) return data;
    std::vector<float> out(static_cast<size_t>(u.weight_rows * row_len), 0.0f);
    for (const LoraRows& b : u.rows) {
        std::copy(data.begin() + b.from * row_len, data.begin() + (b.from + b.count) * row_len,
                  out.begin() + b.to * row_len);
    }
    return out;
}

Result<std::vector<float>> dense_delta(const LoraUpdate& u, int threads) {
    if (!u.low_rank()) return u.dense;
    auto p = cpu_matmul(u.up, u.down, u.out, u.rank, u.k, threads);
    if (!p.ok()) return p.status();
    for (float& v : *p) v *= u.scale;
    return p;
}

}  // namespace ggdiff
