#include "families/flux/pulid.h"

#include "core/log.h"
#include "io/tensor_probe.h"
#include "nn/dit.h"
#include "nn/layers.h"

namespace ggdiff::models {
namespace {

constexpr float kNormEps = 1e-5f;       // torch's LayerNorm default, as the reference's
constexpr int64_t kHeadWidth = 128;     // the reference's PuLID head width
constexpr int64_t kMaxIdTokens = 1024;  // what the reference accepts

// Whether some tensor name starts with `prefix` and holds `part`.
bool has_part(const TensorIndex& index, const std::string& prefix, const std::string& part) {
    for (const TensorInfo& t : index.tensors()) {
        if (t.name.rfind(prefix, 0) == 0 && t.name.find(part, prefix.size()) != std::string::npos)
            return true;
    }
    return false;
}

}  // namespace

Result<PulidConfig> detect_pulid(const TensorIndex& index, const std::string& file_prefix,
                                 const FluxConfig& flux) {
    PulidConfig cfg;
    cfg.prefix = file_prefix + "pulid_ca.";
    cfg.hidden = flux.hidden;
    const TensorProbe p{index, cfg.prefix, "PuLID-FLUX"};
    cfg.modules = p.count("", "to_q.weight");
    if (cfg.modules == 0) {
        if (has_part(index, file_prefix, "id_adapter")) {
            return Status::Error(
                "PuLID v1.1 weights (id_adapter_attn_layers.*) are not supported yet (neither "
                "by stable-diffusion.cpp); use pulid_flux_v0.9.1.safetensors or v0.9.0");
        }
        return Status::Error(
            "no PuLID-FLUX cross-attention modules (pulid_ca.0.to_q.weight, ...) in it: "
            "--pulid-weights takes pulid_flux_v0.9.0 / v0.9.1.safetensors");
    }
    const int want = cfg.modules_for(flux.depth, flux.depth_single);
    if (cfg.modules != want) {
        return Status::Error(string_format(
            "it has %d cross-attention modules, but a FLUX DiT of %d double and %d single blocks "
            "takes %d (one after every %d-th double and every %d-th single block)",
            cfg.modules, flux.depth, flux.depth_single, want, cfg.double_interval,
            cfg.single_interval));
    }
    auto q = p.shape("0.to_q.weight", 2);
    if (!q.ok()) return q.status();
    if ((*q)[1] != flux.hidden) {
        return p.odd("0.to_q.weight",
                     string_format("it takes tokens of width %lld, the FLUX DiT's are %lld wide",
                                   (long long)(*q)[1], (long long)flux.hidden));
    }
    cfg.inner = (*q)[0];
    if (cfg.inner % kHeadWidth != 0) {
        return p.odd("0.to_q.weight", "its output is not whole heads of 128");
    }
    cfg.heads = static_cast<int>(cfg.inner / kHeadWidth);
    auto n1 = p.shape("0.norm1.weight", 1);
    if (!n1.ok()) return n1.status();
    cfg.id_dim = (*n1)[0];
    for (int k = 0; k < cfg.modules; ++k) {
        const std::string m = std::to_string(k) + ".";
        GGDIFF_TRY(p.expect(m + "norm1.weight", {cfg.id_dim}));
        GGDIFF_TRY(p.expect(m + "norm1.bias", {cfg.id_dim}));
        GGDIFF_TRY(p.expect(m + "norm2.weight", {cfg.hidden}));
        GGDIFF_TRY(p.expect(m + "norm2.bias", {cfg.hidden}));
        GGDIFF_TRY(p.expect(m + "to_q.weight", {cfg.inner, cfg.hidden}));
        GGDIFF_TRY(p.expect(m + "to_kv.weight", {2 * cfg.inner, cfg.id_dim}));
        GGDIFF_TRY(p.expect(m + "to_out.weight", {cfg.hidden, cfg.inner}));
    }
    return cfg;
}

ggml_tensor* pulid_inject(nn::Ctx& c, const FluxIdentity& id, int k, ggml_tensor* img) {
    const PulidConfig& cfg = *id.cfg;
    const std::string p = cfg.prefix + std::to_string(k) + ".";
    const int64_t n = img->ne[2];
    ggml_tensor* q = nn::linear(c, nn::layer_norm(c, img, p + "norm2", cfg.hidden, kNormEps),
                                p + "to_q", cfg.hidden, cfg.inner, false);
    ggml_tensor* kv = nn::linear(c, nn::layer_norm(c, id.tokens, p + "norm1", cfg.id_dim, kNormEps),
                                 p + "to_kv", cfg.id_dim, 2 * cfg.inner, false);
    // One identity serves every batch item (the positive and the negative prompt alike).
    if (kv->ne[2] != n) {
        kv = ggml_repeat(c.ctx, kv, ggml_new_tensor_3d(c.ctx, kv->type, kv->ne[0], kv->ne[1], n));
    }
    ggml_tensor* keys = ggml_cont(c.ctx, nn::feature_rows(c.ctx, kv, 0, cfg.inner));
    ggml_tensor* values = ggml_cont(c.ctx, nn::feature_rows(c.ctx, kv, cfg.inner, cfg.inner));
    ggml_tensor* a = nn::attention(c.ctx, q, keys, values, cfg.heads);
    ggml_tensor* out = nn::linear(c, a, p + "to_out", cfg.inner, cfg.hidden, false);
    return ggml_add(c.ctx, img, ggml_scale(c.ctx, out, id.weight));
}

Result<HostTensor> load_pulid_embedding(const std::string& path, const PulidConfig& cfg) {
    const std::string what = "--pulid-id-embedding " + path;
    TensorIndex index;
    Status added = index.add(path, "");
    if (!added.ok()) return added.with_context(what);
    const TensorInfo* t = nullptr;
    std::string held;
    for (const TensorInfo& ti : index.tensors()) {
        if (ti.source_name == "pulid_id") t = &ti;
        if (held.size() < 200) {
            held += (held.empty() ? "" : ", ") + ti.source_name + " " + shape_string(ti.shape);
        }
    }
    if (!t) {
        return Status::Error(what +
                             ": no tensor pulid_id (a .pulidembd holds one, as "
                             "script/pulid_extract_id.py writes it); the file holds " +
                             (held.empty() ? std::string("no tensor") : held));
    }
    const std::vector<int64_t>& s = t->shape;  // torch order: (tokens, width)
    const int64_t tokens = s.size() == 2 ? s[0] : 0;
    if (s.size() != 2 || s[1] != cfg.id_dim || tokens < 1 || tokens > kMaxIdTokens) {
        return Status::Error(string_format(
            "%s: pulid_id has shape %s, expected (tokens, %lld) with 1 to %lld tokens (an "
            "identity embedding of PuLID-FLUX v0.9.x is (32, 2048))",
            what.c_str(), shape_string(s).c_str(), (long long)cfg.id_dim, (long long)kMaxIdTokens));
    }
    HostTensor out({cfg.id_dim, tokens, 1});
    std::vector<float> v;
    GGDIFF_TRY(index.read_f32(*t, v));
    out.data = std::move(v);
    GGDIFF_LOG_DEBUG("PuLID identity: %lld tokens of %lld from %s", (long long)tokens,
                     (long long)cfg.id_dim, path.c_str());
    return out;
}

}  // namespace ggdiff::models
