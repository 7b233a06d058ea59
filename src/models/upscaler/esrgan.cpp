#include "models/upscaler/esrgan.h"

#include <ggml.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>

#include "core/log.h"
#include "io/checkpoint_file.h"
#include "models/upscaler/upscale_tiling.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

ggml_tensor* lrelu(nn::Ctx& c, ggml_tensor* x) {
    return ggml_leaky_relu(c.ctx, x, 0.2f, false);
}

ggml_tensor* conv3x3(nn::Ctx& c, ggml_tensor* x, const std::string& p, int in, int out) {
    return nn::conv2d(c, x, p, in, out, 3, 1, 1);
}

// Five 3x3 convs, each seeing the block input and every earlier output (dense
// connections), LeakyReLU after the first four; the result is scaled by 0.2 and added to x.
ggml_tensor* dense_block(nn::Ctx& c, const EsrganConfig& cfg, ggml_tensor* x,
                         const std::string& p) {
    const int f = cfg.num_feat, g = cfg.num_grow;
    ggml_tensor* cat = x;
    for (int i = 1; i <= 4; ++i) {
        ggml_tensor* h =
            lrelu(c, conv3x3(c, cat, p + "conv" + std::to_string(i), f + (i - 1) * g, g));
        cat = ggml_concat(c.ctx, cat, h, 2);
    }
    ggml_tensor* h = conv3x3(c, cat, p + "conv5", f + 4 * g, f);
    return ggml_add(c.ctx, ggml_scale(c.ctx, h, 0.2f), x);
}

// Residual-in-residual dense block: three dense blocks, scaled by 0.2, plus the input.
ggml_tensor* rrdb(nn::Ctx& c, const EsrganConfig& cfg, ggml_tensor* x, const std::string& p) {
    ggml_tensor* h = x;
    for (int k = 1; k <= 3; ++k) h = dense_block(c, cfg, h, p + "rdb" + std::to_string(k) + ".");
    return ggml_add(c.ctx, ggml_scale(c.ctx, h, 0.2f), x);
}

}  // namespace

Shapes esrgan_tensor_shapes(const EsrganConfig& cfg, const std::string& prefix) {
    Shapes s;
    auto conv = [&](const std::string& name, int in, int out) {
        s.push_back({prefix + name + ".weight", {out, in, 3, 3}});
        s.push_back({prefix + name + ".bias", {out}});
    };
    const int f = cfg.num_feat, g = cfg.num_grow;
    conv("conv_first", cfg.in_channels, f);
    for (int b = 0; b < cfg.num_block; ++b) {
        for (int k = 1; k <= 3; ++k) {
            const std::string p =
                "body." + std::to_string(b) + ".rdb" + std::to_string(k) + ".conv";
            for (int i = 1; i <= 4; ++i) conv(p + std::to_string(i), f + (i - 1) * g, g);
            conv(p + "5", f + 4 * g, f);
        }
    }
    conv("conv_body", f, f);
    if (cfg.scale >= 2) conv("conv_up1", f, f);
    if (cfg.scale >= 4) conv("conv_up2", f, f);
    conv("conv_hr", f, f);
    conv("conv_last", f, cfg.out_channels);
    return s;
}

Result<EsrganConfig> detect_esrgan(const TensorIndex& index, const std::string& prefix) {
    EsrganConfig cfg;
    const std::string body = prefix + "body.";
    int blocks = 0;
    for (const TensorInfo& t : index.tensors()) {
        if (t.name.compare(0, body.size(), body) != 0) continue;
        const size_t dot = t.name.find('.', body.size());
        if (dot == std::string::npos || dot == body.size() || dot - body.size() > 4) continue;
        const std::string digits = t.name.substr(body.size(), dot - body.size());
        if (!std::all_of(digits.begin(), digits.end(),
                         [](char ch) { return ch >= '0' && ch <= '9'; }))
            continue;
        blocks = std::max(blocks, std::stoi(digits) + 1);
    }
    const TensorInfo* first = index.find(prefix + "conv_first.weight");
    if (!first || blocks == 0) {
        return Status::Error(
            "not an ESRGAN upscaler: no RRDBNet weights (conv_first, body.N.rdbK.convJ, or the "
            "original ESRGAN model.0 / model.1.sub.N) in it");
    }
    if (first->shape.size() != 4 || first->shape[2] != 3 || first->shape[3] != 3) {
        return Status::Error("ESRGAN: tensor " + first->name + " has shape " +
                             shape_string(first->shape) + ", expected [num_feat, 3, 3, 3]");
    }
    cfg.num_block = blocks;
    cfg.num_feat = static_cast<int>(first->shape[0]);
    cfg.in_channels = static_cast<int>(first->shape[1]);
    if (const TensorInfo* c1 = index.find(body + "0.rdb1.conv1.weight"); c1 && !c1->shape.empty())
        cfg.num_grow = static_cast<int>(c1->shape[0]);
    if (const TensorInfo* last = index.find(prefix + "conv_last.weight");
        last && !last->shape.empty())
        cfg.out_channels = static_cast<int>(last->shape[0]);
    cfg.scale = index.has(prefix + "conv_up2.weight")   ? 4
                : index.has(prefix + "conv_up1.weight") ? 2
                                                        : 1;
    if (cfg.in_channels != 3 || cfg.out_channels != 3) {
        // Real-ESRGAN x2plus / x1 feed a pixel-unshuffled image (12 / 48 channels).
        return Status::Error("ESRGAN: " + std::to_string(cfg.in_channels) + " input and " +
                             std::to_string(cfg.out_channels) +
                             " output channels are not supported (only RGB to RGB; "
                             "pixel-unshuffle models such as RealESRGAN_x2plus are not)");
    }
    for (const auto& [name, want] : esrgan_tensor_shapes(cfg, prefix)) {
        const TensorInfo* t = index.find(name);
        if (!t) return Status::Error("ESRGAN: missing tensor " + name);
        if (t->shape != want) {
            return Status::Error("ESRGAN: tensor " + name + " has shape " + shape_string(t->shape) +
                                 ", expected " + shape_string(want));
        }
    }
    return cfg;
}

ggml_tensor* build_esrgan(nn::Ctx& c, const EsrganConfig& cfg, ggml_tensor* x,
                          const std::string& prefix) {
    const int f = cfg.num_feat;
    ggml_tensor* feat = conv3x3(c, x, prefix + "conv_first", cfg.in_channels, f);
    ggml_tensor* h = feat;
    for (int b = 0; b < cfg.num_block; ++b) {
        h = rrdb(c, cfg, h, prefix + "body." + std::to_string(b) + ".");
    }
    feat = ggml_add(c.ctx, feat, conv3x3(c, h, prefix + "conv_body", f, f));
    if (cfg.scale >= 2) {
        feat = lrelu(c, conv3x3(c, nn::upsample_nearest2x(c.ctx, feat), prefix + "conv_up1", f, f));
    }
    if (cfg.scale >= 4) {
        feat = lrelu(c, conv3x3(c, nn::upsample_nearest2x(c.ctx, feat), prefix + "conv_up2", f, f));
    }
    feat = lrelu(c, conv3x3(c, feat, prefix + "conv_hr", f, f));
    return conv3x3(c, feat, prefix + "conv_last", f, cfg.out_channels);
}

Result<int> esrgan_file_scale(const std::string& path) {
    TensorIndex index;
    GGDIFF_TRY(index.add(path, prefix_for_role("upscale-model")));
    auto cfg = detect_esrgan(index);
    if (!cfg.ok()) return cfg.status().with_context(path);
    return cfg->scale;
}

EsrganUpscaler::~EsrganUpscaler() {
    runner_.reset();  // before the index it reads from
}

Result<std::unique_ptr<EsrganUpscaler>> EsrganUpscaler::load(const std::string& path,
                                                             const ModuleDevices& where,
                                                             int threads,
                                                             const KernelChoices& choices) {
    const auto t0 = std::chrono::steady_clock::now();
    auto u = std::unique_ptr<EsrganUpscaler>(new EsrganUpscaler());
    GGDIFF_TRY(u->index_.add(path, prefix_for_role("upscale-model")));
    auto cfg = detect_esrgan(u->index_);
    if (!cfg.ok()) return cfg.status().with_context(path);
    u->cfg_ = *cfg;
    u->name_ = std::filesystem::path(path).stem().string();
    u->runner_ =
        std::make_unique<ModuleRunner>(u->index_, GGML_TYPE_F16, where, threads, "upscaler");
    u->runner_->set_kernel_choices(choices);
    const EsrganConfig c = u->cfg_;
    GGDIFF_TRY(u->runner_
                   ->prepare([&c](GraphBuilder& gb) {
                       HostTensor x({16, 16, c.in_channels, 1});
                       return std::vector<ggml_tensor*>{build_esrgan(gb.nn(), c, gb.input(x))};
                   })
                   .with_context(path));
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    GGDIFF_LOG_INFO("upscaler %s: ESRGAN x%d, %d RRDB blocks, %.1f MiB, ready in %.2fs",
                    u->name_.c_str(), c.scale, c.num_block,
                    u->runner_->weights().bytes() / 1048576.0, secs);
    return u;
}

Result<HostTensor> EsrganUpscaler::run_once(const HostTensor& rgb) {
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{build_esrgan(gb.nn(), cfg_, gb.input(rgb))};
    });
    if (!r.ok()) return r.status();
    HostTensor out = std::move((*r)[0]);
    out.ne.resize(4, 1);  // [W, H, C, 1] even where the read-back drops the trailing 1
    return out;
}

Result<HostTensor> EsrganUpscaler::upscale(const HostTensor& rgb, int tile_size) {
    if (rgb.dim(2) != cfg_.in_channels || rgb.dim(3) != 1 || rgb.dim(0) < 1 || rgb.dim(1) < 1) {
        return Status::Error("ESRGAN upscale: expected one [W, H, " +
                             std::to_string(cfg_.in_channels) + "] image");
    }
    GGDIFF_TRY(runner_->begin_phase());
    if (tile_size <= 0 || (rgb.dim(0) <= tile_size && rgb.dim(1) <= tile_size)) {
        return run_once(rgb);
    }
    HostTensor out;
    GGDIFF_TRY(run_upscale_tiles(rgb, out, cfg_.scale, tile_size,
                                 [this](const HostTensor& in, HostTensor& tile_out) -> Status {
                                     auto r = run_once(in);
                                     if (!r.ok()) return r.status();
                                     tile_out = std::move(*r);
                                     return Status::Ok();
                                 }));
    return out;
}

void EsrganUpscaler::end_phase() {
    runner_->end_phase();
}

}  // namespace ggdiff::models
