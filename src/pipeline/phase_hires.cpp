#include "pipeline/phase_hires.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include "core/log.h"
#include "image/infotext.h"
#include "pipeline/latent_image.h"
#include "pipeline/phase_decode.h"

namespace ggdiff {
namespace {

namespace fs = std::filesystem;

struct NamedUpscaler {
    const char* name;
    HiresPlan::Kind kind;
    ResampleFilter filter;
    bool antialias;
};

// A1111's names; the latent ones resize the latent, the others the decoded image.
const NamedUpscaler kUpscalers[] = {
    {"Latent", HiresPlan::Kind::Latent, ResampleFilter::Bilinear, false},
    {"Latent (nearest)", HiresPlan::Kind::Latent, ResampleFilter::Nearest, false},
    {"Latent (nearest-exact)", HiresPlan::Kind::Latent, ResampleFilter::NearestExact, false},
    {"Latent (antialiased)", HiresPlan::Kind::Latent, ResampleFilter::Bilinear, true},
    {"Latent (bicubic)", HiresPlan::Kind::Latent, ResampleFilter::Bicubic, false},
    {"Latent (bicubic antialiased)", HiresPlan::Kind::Latent, ResampleFilter::Bicubic, true},
    {"Lanczos", HiresPlan::Kind::Image, ResampleFilter::Lanczos, false},
    {"Nearest", HiresPlan::Kind::Image, ResampleFilter::Nearest, false},
};

// The upscaler model NAME in `dir`: NAME.gguf, .safetensors, .pt or .pth, in that order.
Result<std::string> find_upscaler_model(const std::string& name, const std::string& dir) {
    if (dir.empty()) {
        std::string known;
        for (const NamedUpscaler& u : kUpscalers)
            known += std::string(known.empty() ? "" : ", ") + u.name;
        return Status::Error("--hires-upscaler '" + name + "' is not a built-in upscaler (" +
                             known +
                             ", None) and no --hires-upscalers-dir is given to find a model of "
                             "that name in");
    }
    if (name.find('/') != std::string::npos || name.find('\\') != std::string::npos ||
        name == "." || name == "..") {
        return Status::Error("--hires-upscaler '" + name +
                             "': give a model's name without folder or extension");
    }
    for (const char* ext : {".gguf", ".safetensors", ".pt", ".pth"}) {
        if (name.size() > std::string(ext).size() &&
            name.compare(name.size() - std::string(ext).size(), std::string::npos, ext) == 0) {
            return Status::Error("--hires-upscaler '" + name +
                                 "': give the model's name without its extension");
        }
    }
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        return Status::Error("--hires-upscalers-dir " + dir + " is not a folder");
    }
    for (const char* ext : {".gguf", ".safetensors", ".pt", ".pth"}) {
        const fs::path p = fs::path(dir) / (name + ext);
        if (fs::is_regular_file(p, ec)) return p.string();
    }
    return Status::Error("--hires-upscaler '" + name + "': no " + name +
                         ".gguf, .safetensors, .pt or .pth in --hires-upscalers-dir " + dir);
}

// `v` rounded up to a multiple of m.
int align_up(int v, int m) {
    return (v + m - 1) / m * m;
}

// The hires target: both sides given, one (square), or the first pass scaled; then rounded up
// to what the denoiser takes (with a warning).
Result<std::pair<int, int>> hires_target(const HiresOptions& h, const Family& f,
                                         const GeneratePlan& first) {
    int w = h.width, ht = h.height;
    if (w > 0 && ht <= 0) ht = w;
    if (ht > 0 && w <= 0) w = ht;
    if (w <= 0) {
        if (!(h.scale > 0.0f)) return Status::Error("--hires-scale must be positive");
        w = static_cast<int>(std::lround(first.width * h.scale));
        ht = static_cast<int>(std::lround(first.height * h.scale));
    }
    if (w <= 0 || ht <= 0) {
        return Status::Error(string_format("hires target %dx%d is not a size", w, ht));
    }
    const int denoiser_down = f.arch == sampling::DenoiserArch::UNet ? 8 : 1;
    const int m = std::max({f.vae->downscale() * denoiser_down, f.size_multiple, 8});
    if (w % m || ht % m) {
        const int aw = align_up(w, m), ah = align_up(ht, m);
        GGDIFF_LOG_WARN("hires target %dx%d rounded up to %dx%d (a multiple of %d)", w, ht, aw, ah,
                        m);
        w = aw;
        ht = ah;
    }
    return std::make_pair(w, ht);
}

// The second pass's sigmas into hp.plan and its step count into hp.steps: --hires-sigmas as
// given, else as A1111 does, a schedule long enough that the strength's cut leaves the hires
// steps (`so`: the request whose size and frames the schedule is for).
Status hires_schedule(HiresPlan& hp, const GenerateOptions& o, const GenerateOptions& so,
                      const Family& f) {
    const HiresOptions& h = o.hires;
    GeneratePlan& p = hp.plan;
    if (!h.sigmas.empty()) {
        if (h.sigmas.size() < 2) return Status::Error("--hires-sigmas needs at least two values");
        p.sigmas = h.sigmas;
        hp.steps = static_cast<int>(h.sigmas.size()) - 1;
        return Status::Ok();
    }
    hp.steps = std::max(1, h.steps > 0 ? h.steps : o.steps);
    const int total =
        std::max(1, static_cast<int>(static_cast<float>(hp.steps) / h.denoising_strength));
    auto sigmas = schedule_sigmas(so, f, p, total, p.width, p.height);
    if (!sigmas.ok()) return sigmas.status().with_context("hires schedule");
    auto t_enc = static_cast<int>(static_cast<float>(total) * h.denoising_strength);
    t_enc = std::min(t_enc, total - 1);
    const size_t begin = static_cast<size_t>(total - t_enc - 1);
    if (begin >= sigmas->size()) return Status::Error("hires schedule is too short");
    p.sigmas.assign(sigmas->begin() + static_cast<long>(begin), sigmas->end());
    return Status::Ok();
}

}  // namespace

const std::vector<std::string>& hires_upscaler_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const NamedUpscaler& u : kUpscalers) out.emplace_back(u.name);
        return out;
    }();
    return names;
}

Result<std::optional<HiresPlan>> plan_hires(const GenerateOptions& o, const Family& f,
                                            const GeneratePlan& first,
                                            const std::string& upscalers_dir) {
    const HiresOptions& h = o.hires;
    if (!h.enabled || h.upscaler == "None") return std::optional<HiresPlan>();
    bool named = false;
    HiresPlan hp;
    hp.upscaler = h.upscaler;
    hp.tile_size = h.tile_size;
    for (const NamedUpscaler& u : kUpscalers) {
        if (h.upscaler != u.name) continue;
        named = true;
        hp.kind = u.kind;
        hp.filter = u.filter;
        hp.antialias = u.antialias;
    }
    if (f.latent_upscaler) {
        // The family's own latent upscaler models (LTX-2): nothing else upscales its latent.
        if (named) {
            return Status::Error("--hires-upscaler " + h.upscaler + ": " + f.name +
                                 "'s hires fix runs a latent upscaler model: name one in "
                                 "--hires-upscalers-dir with --hires-upscaler (e.g. "
                                 "ltx-2-spatial-upscaler-x2-1.0)");
        }
        if (o.end_image) {
            return Status::Error("--hires with --end-img is not supported yet for " + f.name);
        }
        if (!(h.denoising_strength > 0.0f && h.denoising_strength <= 1.0f)) {
            return Status::Error("--hires-denoising-strength must be in (0, 1]");
        }
        auto path = find_upscaler_model(h.upscaler, upscalers_dir);
        if (!path.ok()) return path.status();
        hp.kind = HiresPlan::Kind::LatentModel;
        hp.model_path = *path;
        hp.plan = first;
        return std::optional<HiresPlan>(std::move(hp));
    }
    if (f.output_frames) {
        return Status::Error("--hires is not supported for video models (" + f.name + ")");
    }
    if (first.frames != 1) {
        return Status::Error("--hires is not supported for " + f.name +
                             " (its latent holds several images)");
    }
    if (f.inpaint_inputs) {
        return Status::Error("--hires is not supported yet for inpainting models");
    }
    if (!f.vae->can_encode() && !(named && hp.kind == HiresPlan::Kind::Latent)) {
        return Status::Error("--hires-upscaler " + h.upscaler +
                             " re-encodes the image: it needs a VAE with encoder weights");
    }
    if (!(h.denoising_strength > 0.0f && h.denoising_strength <= 1.0f)) {
        return Status::Error("--hires-denoising-strength must be in (0, 1]");
    }
    if (!named) {
        auto path = find_upscaler_model(h.upscaler, upscalers_dir);
        if (!path.ok()) return path.status();
        hp.kind = HiresPlan::Kind::Model;
        hp.model_path = *path;
    }

    auto target = hires_target(h, f, first);
    if (!target.ok()) return target.status();
    const auto [w, ht] = *target;
    Status fits = check_image_dimensions(w, ht);
    if (!fits.ok()) return fits.with_context("hires target");

    hp.plan = first;
    GeneratePlan& p = hp.plan;
    p.width = w;
    p.height = ht;
    p.latent_w = w / f.vae->downscale();
    p.latent_h = ht / f.vae->downscale();
    GGDIFF_TRY(hires_schedule(hp, o, o, f));
    return std::optional<HiresPlan>(std::move(hp));
}

Status plan_latent_model_hires(HiresPlan& hp, const GenerateOptions& o, const Family& f,
                               const GeneratePlan& first, std::shared_ptr<LatentUpscaler> model) {
    int w = first.width, ht = first.height;
    int frames = f.output_frames ? f.output_frames(o) : 1;
    model->output(w, ht, frames);
    // As the reference: the model decides; a target asked for (or the default --hires-scale's)
    // that differs is only reported.
    auto target = hires_target(o.hires, f, first);
    if (target.ok() && (target->first != w || target->second != ht)) {
        GGDIFF_LOG_WARN(
            "hires: the latent upscaler %s gives %dx%d; ignoring the hires target %dx%d",
            model->name().c_str(), w, ht, target->first, target->second);
    }
    GenerateOptions& so = hp.options;
    so = o;
    so.width = w;
    so.height = ht;
    so.video_frames = frames;
    so.hires.enabled = false;
    auto plan = plan_request(so, f);
    if (!plan.ok()) return plan.status().with_context("hires pass");
    hp.plan = std::move(*plan);
    hp.latent_model = std::move(model);
    return hires_schedule(hp, o, so, f);
}

Result<std::string> find_hires_upscaler_model(const std::string& name, const std::string& dir) {
    return find_upscaler_model(name, dir);
}

Result<std::vector<float>> hires_upscale(Family& f, const GeneratePlan& first, const HiresPlan& hp,
                                         std::vector<float> latent, sampling::Rng& rng,
                                         const TilingOptions& tiling, bool auto_fit,
                                         const ImageUpscaleFn& model) {
    const GeneratePlan& p = hp.plan;
    if (hp.kind == HiresPlan::Kind::Latent) {
        GGDIFF_LOG_INFO("hires %s upscale %lldx%lld -> %lldx%lld", hp.upscaler.c_str(),
                        static_cast<long long>(first.latent_w),
                        static_cast<long long>(first.latent_h), static_cast<long long>(p.latent_w),
                        static_cast<long long>(p.latent_h));
        return resample_planes(latent, first.latent_w, first.latent_h, first.latent_c, p.latent_w,
                               p.latent_h, hp.filter, hp.antialias);
    }
    auto decoded = decode_latent(f, first, std::move(latent), tiling, auto_fit);
    if (!decoded.ok()) return decoded.status().with_context("hires fix: decoding the first pass");
    // [-1, 1] -> [0, 1], clamped (the reference's decode gives that range).
    HostTensor rgb({decoded->ne[0], decoded->ne[1], 3, 1});
    const size_t plane = static_cast<size_t>(decoded->ne[0] * decoded->ne[1]);
    for (size_t i = 0; i < plane * 3; ++i) {
        rgb.data[i] = std::clamp((decoded->data[i] + 1.0f) * 0.5f, 0.0f, 1.0f);
    }
    HostTensor up;
    if (hp.kind == HiresPlan::Kind::Model) {
        if (!model) return Status::Error("hires fix: the upscaler model is not loaded");
        auto r = model(rgb);
        if (!r.ok()) return r.status().with_context("hires fix: upscaler " + hp.upscaler);
        up = std::move(*r);
        if (up.ne[0] != p.width || up.ne[1] != p.height) {
            GGDIFF_LOG_INFO("hires %s gives %lldx%lld, resized to %dx%d", hp.upscaler.c_str(),
                            static_cast<long long>(up.ne[0]), static_cast<long long>(up.ne[1]),
                            p.width, p.height);
            up.data = resample_planes(up.data, up.ne[0], up.ne[1], 3, p.width, p.height,
                                      ResampleFilter::Nearest);
            up.ne[0] = p.width;
            up.ne[1] = p.height;
        }
    } else {
        GGDIFF_LOG_INFO("hires %s image upscale %lldx%lld -> %dx%d", hp.upscaler.c_str(),
                        static_cast<long long>(rgb.ne[0]), static_cast<long long>(rgb.ne[1]),
                        p.width, p.height);
        up = HostTensor({p.width, p.height, 3, 1});
        up.data = resample_planes(rgb.data, rgb.ne[0], rgb.ne[1], 3, p.width, p.height, hp.filter);
        for (float& v : up.data) v = std::clamp(v, 0.0f, 1.0f);
    }
    // Back to the VAE's [-1, 1] input, then encoded (a family with its own image input gets
    // the 8-bit image it expects).
    for (float& v : up.data) v = v * 2.0f - 1.0f;
    HostTensor input = f.image_input ? f.image_input(tensor_to_image(up)) : std::move(up);
    auto enc = f.vae->encode(input, rng);
    if (!enc.ok()) return enc.status().with_context("hires fix: encoding the upscaled image");
    if (static_cast<size_t>(enc->numel()) != p.latent_numel()) {
        return Status::Error("hires fix: the VAE's latent does not match the denoiser's");
    }
    return std::move(enc->data);
}

std::vector<float> hires_keep(const std::vector<float>& keep, const GeneratePlan& first,
                              const HiresPlan& hp) {
    if (keep.empty()) return {};
    const int64_t iw = first.latent_w, ih = first.latent_h;
    const int64_t ow = hp.plan.latent_w, oh = hp.plan.latent_h;
    std::vector<float> out(static_cast<size_t>(ow * oh));
    // Nearest; when a side shrinks, the largest weight of the pixels each one covers.
    for (int64_t y = 0; y < oh; ++y) {
        const int64_t y0 = y * ih / oh, y1 = std::max(y0 + 1, (y + 1) * ih / oh);
        for (int64_t x = 0; x < ow; ++x) {
            const int64_t x0 = x * iw / ow, x1 = std::max(x0 + 1, (x + 1) * iw / ow);
            float v = keep[static_cast<size_t>(y0 * iw + x0)];
            for (int64_t sy = y0; sy < std::min(y1, ih); ++sy) {
                for (int64_t sx = x0; sx < std::min(x1, iw); ++sx) {
                    v = std::max(v, keep[static_cast<size_t>(sy * iw + sx)]);
                }
            }
            out[static_cast<size_t>(y * ow + x)] = v;
        }
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> hires_infotext(const GenerateOptions& o,
                                                                const HiresPlan& hp) {
    std::vector<std::pair<std::string, std::string>> out;
    if (hp.kind == HiresPlan::Kind::LatentModel) {
        // The model's size, whatever was asked for.
        out.emplace_back("Hires resize",
                         std::to_string(hp.plan.width) + "x" + std::to_string(hp.plan.height));
    } else if (o.hires.width > 0 || o.hires.height > 0) {
        out.emplace_back("Hires resize",
                         std::to_string(hp.plan.width) + "x" + std::to_string(hp.plan.height));
    } else {
        out.emplace_back("Hires upscale", infotext_float(o.hires.scale));
    }
    if (o.hires.steps > 0 || !o.hires.sigmas.empty()) {
        out.emplace_back("Hires steps", std::to_string(hp.steps));
    }
    out.emplace_back("Hires upscaler", hp.upscaler);
    return out;
}

}  // namespace ggdiff
