#include "families/sdxl/photomaker.h"

#include <ggml.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>

#include "core/log.h"
#include "io/name_util.h"
#include "io/tensor_probe.h"
#include "nn/layers.h"
#include "pipeline/parts/module_setup.h"
#include "pipeline/parts/qwen_vision_encoder.h"
#include "tokenizers/prompt_limits.h"

namespace ggdiff {
namespace {

constexpr const char* kTrigger = "img";

// The first of `names` (under the probe's prefix) that exists, else "".
std::string first_of(const TensorProbe& probe, const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (probe.has(n)) return n;
    }
    return "";
}

// LayerNorm, Linear, GELU (tanh), Linear; + x when `residual` (the fuse module's blocks).
ggml_tensor* fuse_block(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t in, int64_t out,
                        bool residual) {
    ggml_tensor* h = nn::layer_norm(c, x, p + "layernorm", in);
    h = nn::linear(c, h, p + "fc1", in, out);
    h = ggml_gelu(c.ctx, h);
    h = nn::linear(c, h, p + "fc2", out, out);
    return residual ? ggml_add(c.ctx, h, x) : h;
}

// Linear, GELU (tanh), Linear with explicit weight prefixes.
ggml_tensor* mlp(nn::Ctx& c, ggml_tensor* x, const std::string& fc1, const std::string& fc2,
                 int64_t in, int64_t hidden, int64_t out, bool bias) {
    ggml_tensor* h = nn::linear(c, x, fc1, in, hidden, bias);
    h = ggml_gelu(c.ctx, h);
    return nn::linear(c, h, fc2, hidden, out, bias);
}

// v2's perceiver resampler: `latents` [embed, tokens, 1] attend to the image features `x`
// [vision width, positions, 1] (and themselves).
ggml_tensor* perceiver(nn::Ctx& c, const PhotoMakerConfig& cfg, ggml_tensor* latents,
                       ggml_tensor* x) {
    const std::string p = cfg.prefix + "qformer_perceiver.perceiver_resampler.";
    const int64_t e = cfg.embed;
    x = nn::linear(c, x, p + "proj_in", cfg.vision.width, e);
    for (int64_t i = 0; i < cfg.perceiver_layers; ++i) {
        const std::string a = p + "layers." + std::to_string(i) + ".0.";
        ggml_tensor* xn = nn::layer_norm(c, x, a + "norm1", e);
        ggml_tensor* ln = nn::layer_norm(c, latents, a + "norm2", e);
        ggml_tensor* q = nn::linear(c, ln, a + "to_q", e, e, false);
        ggml_tensor* kv =
            nn::linear(c, ggml_concat(c.ctx, xn, ln, 1), a + "to_kv", e, 2 * e, false);
        ggml_tensor* k = ggml_cont(
            c.ctx, ggml_view_3d(c.ctx, kv, e, kv->ne[1], kv->ne[2], kv->nb[1], kv->nb[2], 0));
        ggml_tensor* v = ggml_cont(c.ctx, ggml_view_3d(c.ctx, kv, e, kv->ne[1], kv->ne[2],
                                                       kv->nb[1], kv->nb[2], e * kv->nb[0]));
        ggml_tensor* o =
            nn::attention(c.ctx, q, k, v, static_cast<int>(e / cfg.head_dim), /*causal=*/false);
        latents = ggml_add(c.ctx, nn::linear(c, o, a + "to_out", e, e, false), latents);
        const std::string f = p + "layers." + std::to_string(i) + ".1.";
        ggml_tensor* h = nn::layer_norm(c, latents, f + "0", e);
        h = mlp(c, h, cfg.ff_fc1[static_cast<size_t>(i)], cfg.ff_fc2[static_cast<size_t>(i)], e,
                4 * e, e, false);
        latents = ggml_add(c.ctx, h, latents);
    }
    latents = nn::linear(c, latents, p + "proj_out", e, e);
    return nn::layer_norm(c, latents, p + "norm_out", e);
}

struct StackInputs {
    const HostTensor* pixels = nullptr;  // [side, side, 3, images]
    const HostTensor* prompt = nullptr;  // [embed, tokens, 1]
    const HostTensor* mask = nullptr;    // [1, tokens]: 0 at the class positions, else 1
    const std::vector<int32_t>* positions = nullptr;
    const HostTensor* id_embeds = nullptr;  // v2: [id_width, images]
    const HostTensor* left = nullptr;       // zeros [embed, first position] or empty
    const HostTensor* right = nullptr;      // zeros [embed, tokens after the last] or empty
};

BuildFn stack_graph(const PhotoMakerConfig& cfg, const StackInputs& in) {
    return [&cfg, &in](GraphBuilder& gb) {
        nn::Ctx& c = gb.nn();
        ggml_context* ctx = gb.ctx();
        const int64_t e = cfg.embed, w = cfg.vision.width;
        ggml_tensor* pixels = gb.input(*in.pixels);
        const int64_t images = in.pixels->dim(3);
        ggml_tensor* ids = nullptr;  // [embed, vectors]
        ggml_tensor* id_in = cfg.version == 2 ? gb.input(*in.id_embeds) : nullptr;
        for (int64_t i = 0; i < images; ++i) {
            ggml_tensor* one = ggml_view_4d(ctx, pixels, pixels->ne[0], pixels->ne[1],
                                            pixels->ne[2], 1, pixels->nb[1], pixels->nb[2],
                                            pixels->nb[3], static_cast<size_t>(i) * pixels->nb[3]);
            ggml_tensor* h = models::build_clip_vision(c, cfg.vision, one, cfg.vision.layers);
            ggml_tensor* vec = nullptr;
            if (cfg.version == 1) {
                // The class token after the post-layernorm, through both projections.
                ggml_tensor* cls = ggml_view_2d(ctx, h, w, 1, h->nb[1], 0);
                cls = nn::layer_norm(c, cls, cfg.vision.prefix + "post_layernorm", w);
                ggml_tensor* a =
                    nn::linear(c, cls, cfg.prefix + "visual_projection", w, cfg.projection, false);
                ggml_tensor* b = nn::linear(c, cls, cfg.prefix + "visual_projection_2", w,
                                            e - cfg.projection, false);
                vec = ggml_concat(ctx, a, b, 0);  // [embed, 1]
            } else {
                const std::string q = cfg.prefix + "qformer_perceiver.";
                ggml_tensor* id = ggml_view_2d(ctx, id_in, cfg.id_width, 1, id_in->nb[1],
                                               static_cast<size_t>(i) * id_in->nb[1]);
                ggml_tensor* t = mlp(c, id, cfg.token_proj_fc1, cfg.token_proj_fc2, cfg.id_width,
                                     cfg.id_hidden, e * cfg.id_tokens, true);
                t = ggml_reshape_3d(ctx, t, e, cfg.id_tokens, 1);
                t = nn::layer_norm(c, t, q + "token_norm", e);
                ggml_tensor* out = perceiver(c, cfg, t, h);
                vec = ggml_reshape_2d(ctx, ggml_add(ctx, t, out), e, cfg.id_tokens);
            }
            ids = ids ? ggml_concat(ctx, ids, vec, 1) : vec;
        }
        // The fuse module on each class-word token and its vector.
        ggml_tensor* prompt = gb.input(*in.prompt);
        prompt = ggml_reshape_2d(ctx, prompt, e, prompt->ne[1]);
        ggml_tensor* pos =
            gb.input_i32(*in.positions, {static_cast<int64_t>(in.positions->size())});
        ggml_tensor* tokens = ggml_get_rows(ctx, prompt, pos);  // [embed, vectors]
        const std::string f = cfg.prefix + "fuse_module.";
        ggml_tensor* s = fuse_block(c, ggml_concat(ctx, tokens, ids, 0), f + "mlp1.", 2 * e, e,
                                    /*residual=*/false);
        s = ggml_add(ctx, s, tokens);
        s = fuse_block(c, s, f + "mlp2.", e, e, /*residual=*/true);
        s = nn::layer_norm(c, s, f + "layer_norm", e);
        if (!in.left->data.empty()) s = ggml_concat(ctx, gb.input(*in.left), s, 1);
        if (!in.right->data.empty()) s = ggml_concat(ctx, s, gb.input(*in.right), 1);
        ggml_tensor* kept = ggml_mul(ctx, prompt, gb.input(*in.mask));
        return std::vector<ggml_tensor*>{ggml_add(ctx, kept, s)};
    };
}

// Byte-exact from the reference's sd::load_tensor_from_file_as_tensor.
template <typename T>
bool read_pod(std::ifstream& f, T* v) {
    return static_cast<bool>(f.read(reinterpret_cast<char*>(v), sizeof(T)));
}

}  // namespace

TriggerTokens expand_trigger(const std::vector<int>& tokens, const std::vector<float>& weights,
                             int trigger, int count) {
    TriggerTokens out;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] == trigger) {
            out.found = true;
            if (!out.tokens.empty()) {
                out.class_at = static_cast<int>(out.tokens.size()) - 1;
                const int cls = out.tokens.back();
                const float cw = out.weights.back();
                for (int j = 1; j < count; ++j) {
                    out.tokens.push_back(cls);
                    out.weights.push_back(cw);
                }
            }
            continue;
        }
        out.tokens.push_back(tokens[i]);
        out.weights.push_back(i < weights.size() ? weights[i] : 1.0f);
    }
    return out;
}

Result<PhotoMakerConfig> detect_photomaker(const TensorIndex& index, const std::string& prefix) {
    PhotoMakerConfig cfg;
    cfg.prefix = prefix;
    const TensorProbe probe{index, prefix, "PhotoMaker"};
    if (!models::has_clip_vision(index, prefix)) {
        return Status::Error(
            "PhotoMaker: no CLIP vision tower in the file (missing tensor " + prefix +
            "vision_model.embeddings.patch_embedding.weight); is it a PhotoMaker model?");
    }
    auto vision = models::detect_clip_vision(index, prefix);
    if (!vision.ok()) return vision.status().with_context("PhotoMaker");
    cfg.vision = *vision;
    const int64_t w = cfg.vision.width;
    const std::string f = "fuse_module.";
    auto ln = probe.shape(f + "layer_norm.weight", 1);
    if (!ln.ok()) return ln.status();
    const int64_t e = (*ln)[0];
    cfg.embed = e;
    GGDIFF_TRY(probe.expect(f + "layer_norm.bias", {e}));
    for (const auto& [block, in] : {std::make_pair("mlp1.", 2 * e), std::make_pair("mlp2.", e)}) {
        const std::string b = f + block;
        GGDIFF_TRY(probe.expect(b + "layernorm.weight", {in}));
        GGDIFF_TRY(probe.expect(b + "layernorm.bias", {in}));
        GGDIFF_TRY(probe.expect(b + "fc1.weight", {e, in}));
        GGDIFF_TRY(probe.expect(b + "fc1.bias", {e}));
        GGDIFF_TRY(probe.expect(b + "fc2.weight", {e, e}));
        GGDIFF_TRY(probe.expect(b + "fc2.bias", {e}));
    }
    const std::string q = "qformer_perceiver.";
    cfg.version = probe.has(q + "token_norm.weight") ? 2 : 1;
    if (cfg.version == 1) {
        GGDIFF_TRY(
            probe.expect(cfg.vision.prefix.substr(prefix.size()) + "post_layernorm.weight", {w}));
        GGDIFF_TRY(
            probe.expect(cfg.vision.prefix.substr(prefix.size()) + "post_layernorm.bias", {w}));
        auto vp = probe.shape("visual_projection.weight", 2);
        if (!vp.ok()) return vp.status();
        if ((*vp)[1] != w || (*vp)[0] >= e) {
            return probe.odd("visual_projection.weight",
                             "expected [projection, " + std::to_string(w) + "]");
        }
        cfg.projection = (*vp)[0];
        GGDIFF_TRY(probe.expect("visual_projection_2.weight", {e - cfg.projection, w}));
        return cfg;
    }
    // v2: token_proj (original Sequential indices or stable-diffusion.cpp's fc1/fc2).
    const std::string tp = q + "token_proj.";
    cfg.token_proj_fc1 = first_of(probe, {tp + "fc1.weight", tp + "0.weight"});
    cfg.token_proj_fc2 = first_of(probe, {tp + "fc2.weight", tp + "2.weight"});
    if (cfg.token_proj_fc1.empty()) return probe.missing(tp + "0.weight");
    if (cfg.token_proj_fc2.empty()) return probe.missing(tp + "2.weight");
    auto t1 = probe.shape(cfg.token_proj_fc1, 2);
    if (!t1.ok()) return t1.status();
    cfg.id_hidden = (*t1)[0];
    cfg.id_width = (*t1)[1];
    auto t2 = probe.shape(cfg.token_proj_fc2, 2);
    if (!t2.ok()) return t2.status();
    if ((*t2)[1] != cfg.id_hidden || (*t2)[0] % e != 0) {
        return probe.odd(cfg.token_proj_fc2, "expected [tokens * " + std::to_string(e) + ", " +
                                                 std::to_string(cfg.id_hidden) + "]");
    }
    cfg.id_tokens = (*t2)[0] / e;
    for (std::string* n : {&cfg.token_proj_fc1, &cfg.token_proj_fc2}) {
        const std::string bias = n->substr(0, n->size() - 6) + "bias";
        GGDIFF_TRY(probe.expect(bias, {n == &cfg.token_proj_fc1 ? cfg.id_hidden : (*t2)[0]}));
        *n = prefix + n->substr(0, n->size() - 7);  // full prefix, without ".weight"
    }
    GGDIFF_TRY(probe.expect(q + "token_norm.bias", {e}));
    const std::string r = q + "perceiver_resampler.";
    GGDIFF_TRY(probe.expect(r + "proj_in.weight", {e, w}));
    GGDIFF_TRY(probe.expect(r + "proj_in.bias", {e}));
    GGDIFF_TRY(probe.expect(r + "proj_out.weight", {e, e}));
    GGDIFF_TRY(probe.expect(r + "proj_out.bias", {e}));
    GGDIFF_TRY(probe.expect(r + "norm_out.weight", {e}));
    GGDIFF_TRY(probe.expect(r + "norm_out.bias", {e}));
    cfg.perceiver_layers = probe.count(r + "layers.", "0.to_q.weight");
    if (cfg.perceiver_layers == 0) return probe.missing(r + "layers.0.0.to_q.weight");
    if (e % cfg.head_dim != 0) {
        return probe.odd(f + "layer_norm.weight", "the width is no multiple of 128 (the heads)");
    }
    for (int64_t i = 0; i < cfg.perceiver_layers; ++i) {
        const std::string l = r + "layers." + std::to_string(i) + ".";
        for (const char* norm : {"0.norm1.", "0.norm2.", "1.0."}) {
            GGDIFF_TRY(probe.expect(l + norm + "weight", {e}));
            GGDIFF_TRY(probe.expect(l + norm + "bias", {e}));
        }
        GGDIFF_TRY(probe.expect(l + "0.to_q.weight", {e, e}));
        GGDIFF_TRY(probe.expect(l + "0.to_kv.weight", {2 * e, e}));
        GGDIFF_TRY(probe.expect(l + "0.to_out.weight", {e, e}));
        const std::string fc1 = first_of(probe, {l + "1.1.fc1.weight", l + "1.1.weight"});
        const std::string fc2 = first_of(probe, {l + "1.1.fc2.weight", l + "1.3.weight"});
        if (fc1.empty()) return probe.missing(l + "1.1.weight");
        if (fc2.empty()) return probe.missing(l + "1.3.weight");
        GGDIFF_TRY(probe.expect(fc1, {4 * e, e}));
        GGDIFF_TRY(probe.expect(fc2, {e, 4 * e}));
        cfg.ff_fc1.push_back(prefix + fc1.substr(0, fc1.size() - 7));
        cfg.ff_fc2.push_back(prefix + fc2.substr(0, fc2.size() - 7));
    }
    return cfg;
}

Result<HostTensor> read_id_embeds(const std::string& path) {
    const std::string what = "--pm-id-embed-path " + path;
    std::ifstream f(path, std::ios::binary);
    if (!f) return Status::Error(what + ": cannot open the file");
    int32_t n_dims = 0, length = 0, type = 0;
    if (!read_pod(f, &n_dims) || !read_pod(f, &length) || !read_pod(f, &type)) {
        return Status::Error(what + ": the file ends inside its header");
    }
    if (type != 0) {
        return Status::Error(what + ": the tensor is of ggml type " + std::to_string(type) +
                             ", expected 0 (F32)");
    }
    if (n_dims < 1 || n_dims > 4 || length < 0 || length > 4096) {
        return Status::Error(what + ": not a tensor file (" + std::to_string(n_dims) +
                             " dimensions, a name of " + std::to_string(length) + " bytes)");
    }
    std::vector<int64_t> ne;
    for (int32_t i = 0; i < n_dims; ++i) {
        int32_t d = 0;
        if (!read_pod(f, &d) || d < 1 || d > (1 << 20)) {
            return Status::Error(what + ": bad size of dimension " + std::to_string(i));
        }
        ne.push_back(d);
    }
    f.ignore(length);
    if (ne.size() == 1) ne.push_back(1);
    HostTensor t(ne);
    if (!f.read(reinterpret_cast<char*>(t.ptr()),
                static_cast<std::streamsize>(t.data.size() * sizeof(float)))) {
        return Status::Error(what + ": the file ends inside its data (" +
                             std::to_string(t.data.size()) + " floats expected)");
    }
    return t;
}

Result<std::unique_ptr<PhotoMakerEncoder>> PhotoMakerEncoder::create(const FamilyContext& ctx,
                                                                     const ModuleDevices& where,
                                                                     const PhotoMakerConfig& cfg) {
    auto enc = std::unique_ptr<PhotoMakerEncoder>(new PhotoMakerEncoder());
    enc->cfg_ = cfg;
    // A representative graph (one image, one window) declares every weight it reads.
    const int64_t side = cfg.vision.image_size;
    const HostTensor pixels({side, side, 3, 1});
    const HostTensor prompt({cfg.embed, 77, 1});
    HostTensor mask({1, 77}, 1.0f);
    const int n = cfg.version == 2 ? static_cast<int>(cfg.id_tokens) : 1;
    std::vector<int32_t> positions;
    for (int i = 0; i < n; ++i) positions.push_back(1 + i);
    const HostTensor ids({cfg.id_width, 1});
    const HostTensor left({cfg.embed, 1}), right({cfg.embed, 77 - 1 - n});
    StackInputs in{&pixels, &prompt, &mask, &positions, &ids, &left, &right};
    auto runner = make_module(ctx, where, "photomaker", stack_graph(enc->cfg_, in));
    if (!runner.ok()) return runner.status();
    enc->runner_ = std::move(*runner);
    return enc;
}

Result<HostTensor> PhotoMakerEncoder::stack(const std::vector<Image>& images,
                                            const HostTensor& prompt,
                                            const std::vector<int>& positions,
                                            const HostTensor* id_embeds) {
    const int side = static_cast<int>(cfg_.vision.image_size);
    const int64_t plane = static_cast<int64_t>(side) * side * 3;
    HostTensor pixels({side, side, 3, static_cast<int64_t>(images.size())});
    for (size_t i = 0; i < images.size(); ++i) {
        GGDIFF_TRY(validate_image(images[i]));
        const HostTensor one = clip_preprocess(images[i], side, side);
        std::copy(one.data.begin(), one.data.end(),
                  pixels.data.begin() + static_cast<int64_t>(i) * plane);
    }
    const int64_t tokens = prompt.dim(1);
    HostTensor mask({1, tokens}, 1.0f);
    std::vector<int32_t> pos(positions.begin(), positions.end());
    for (int p : positions) mask.data[static_cast<size_t>(p)] = 0.0f;
    const HostTensor left({cfg_.embed, positions.front()});
    const int64_t after = tokens - positions.back() - 1;
    HostTensor right;
    if (after > 0) right = HostTensor({cfg_.embed, after});
    HostTensor none;
    StackInputs in{&pixels, &prompt, &mask, &pos, id_embeds, positions.front() > 0 ? &left : &none,
                   &right};
    auto r = runner_->run(stack_graph(cfg_, in));
    if (!r.ok()) return r.status().with_context("PhotoMaker ID encoder");
    HostTensor out = std::move((*r)[0]);
    out.ne = {cfg_.embed, tokens, 1};
    return out;
}

Result<std::shared_ptr<PhotoMaker>> PhotoMaker::load(const FamilyContext& ctx,
                                                     DualClipConditioner& text,
                                                     int64_t context_width) {
    const std::string prefix = prefix_for_role("photo-maker");
    if (!ctx.index.has_prefix(prefix)) {
        return Status::Error("--photo-maker " + ctx.options.photo_maker +
                             ": no tensors in it were read");
    }
    auto cfg = detect_photomaker(ctx.index, prefix);
    if (!cfg.ok()) return cfg.status().with_context("--photo-maker " + ctx.options.photo_maker);
    if (cfg->embed != context_width) {
        return Status::Error(
            string_format("--photo-maker %s: its fuse module is %lld wide, the UNet's context %lld",
                          ctx.options.photo_maker.c_str(), static_cast<long long>(cfg->embed),
                          static_cast<long long>(context_width)));
    }
    GGDIFF_LOG_INFO("PhotoMaker v%d: ID encoder with a %lld-wide CLIP vision tower (%lld layers)",
                    cfg->version, static_cast<long long>(cfg->vision.width),
                    static_cast<long long>(cfg->vision.layers));
    auto pm = std::make_shared<PhotoMaker>();
    pm->cfg_ = *cfg;
    pm->text_ = &text;
    auto enc = PhotoMakerEncoder::create(ctx, ctx.placement.photomaker, pm->cfg_);
    if (!enc.ok()) return enc.status();
    pm->encoder_ = std::move(*enc);
    return pm;
}

Result<std::optional<IdConditions>> PhotoMaker::conditions(const GenerateOptions& o,
                                                           const TextRequest& request) {
    const std::vector<Image>& images = o.pm_id_images;
    if (images.empty()) {
        if (!warned_no_images_) {
            GGDIFF_LOG_WARN(
                "PhotoMaker is loaded but the request gives no ID images (--pm-id-images-dir): "
                "generating without the identity");
            warned_no_images_ = true;
        }
        return std::optional<IdConditions>();
    }
    HostTensor id_embeds;
    if (cfg_.version == 2) {
        if (o.pm_id_embed_path.empty()) {
            return Status::Error(
                "PhotoMaker v2 needs the InsightFace embeddings of the ID images: pass "
                "--pm-id-embed-path (the id_embeds.bin that stable-diffusion.cpp's "
                "face_detect.py writes into the images' folder)");
        }
        auto e = read_id_embeds(o.pm_id_embed_path);
        if (!e.ok()) return e.status();
        id_embeds = std::move(*e);
        if (id_embeds.dim(0) != cfg_.id_width ||
            id_embeds.dim(1) != static_cast<int64_t>(images.size()) || id_embeds.dim(2) != 1) {
            return Status::Error(string_format(
                "--pm-id-embed-path %s: %lld embeddings of %lld values for %zu ID images; the "
                "model takes one of %lld per image (run face_detect.py on the same folder again)",
                o.pm_id_embed_path.c_str(), static_cast<long long>(id_embeds.dim(1)),
                static_cast<long long>(id_embeds.dim(0)), images.size(),
                static_cast<long long>(cfg_.id_width)));
        }
    } else if (!o.pm_id_embed_path.empty()) {
        GGDIFF_LOG_WARN("--pm-id-embed-path has no effect with PhotoMaker v1 (v2 reads it)");
    }

    const ClipTokenizer& tok = text_->tokenizer();
    const std::vector<int> trigger = tok.encode(kTrigger);
    if (trigger.size() != 1) {
        return Status::Error("PhotoMaker: the tokenizer splits the trigger word \"img\" into " +
                             std::to_string(trigger.size()) + " tokens (expected one)");
    }
    std::vector<int> tokens;
    std::vector<float> weights;
    weighted_prompt_tokens(tok, request.prompt, tokens, weights);
    const int count = static_cast<int>(images.size()) * (cfg_.version == 2 ? cfg_.id_tokens : 1);
    const TriggerTokens t = expand_trigger(tokens, weights, trigger.at(0), count);
    if (!t.found) {
        return Status::InputError(
            "PhotoMaker: the prompt has no trigger word \"img\"; put it right after the class "
            "word of the person (\"a photo of a woman img\")");
    }
    if (t.class_at < 0) {
        return Status::InputError(
            "PhotoMaker: the trigger word \"img\" must follow a class word (\"man img\", "
            "\"woman img\"); the prompt starts with it");
    }
    const TokenWindows tw =
        make_token_windows(t.tokens, t.weights, tok.bos(), tok.eos(), tok.eos(), true);
    GGDIFF_TRY(check_prompt_windows(tw.n_windows, tw.tokens.size(), "the prompt"));
    // The class word's copies, counted as stable-diffusion.cpp does: from the first window's
    // BOS.
    std::vector<int> positions;
    for (int i = 0; i < count; ++i) positions.push_back(t.class_at + 1 + i);
    const auto t0 = std::chrono::steady_clock::now();
    auto cond = text_->encode_windows(tw, request);
    if (!cond.ok()) return cond.status();
    auto stacked =
        encoder_->stack(images, cond->context, positions, cfg_.version == 2 ? &id_embeds : nullptr);
    encoder_->end_phase();
    if (!stacked.ok()) return stacked.status();

    IdConditions out;
    out.cond = std::move(*cond);
    out.cond.context = std::move(*stacked);
    // The ordinary prompt: the tokens without the first trigger word, decoded to text (so
    // emphasis and BREAK are gone, as in stable-diffusion.cpp).
    auto first = std::find(tokens.begin(), tokens.end(), trigger.at(0));
    tokens.erase(first);
    std::string plain = tok.decode(tokens);
    for (size_t at; (at = plain.find(" ,")) != std::string::npos;) plain.erase(at, 1);
    out.prompt = plain;
    out.after_step = static_cast<int>(o.pm_style_strength / 100.0f * static_cast<float>(o.steps));
    GGDIFF_LOG_INFO(
        "PhotoMaker: ID stacking of %zu image(s) took %.2f s; the identity takes over after step "
        "%d of %d",
        images.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
        out.after_step, o.steps);
    return std::optional<IdConditions>(std::move(out));
}

}  // namespace ggdiff
