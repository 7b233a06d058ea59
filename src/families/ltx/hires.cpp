#include "families/ltx/hires.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <utility>
#include <vector>

#include "core/log.h"
#include "families/ltx/latent_upscaler.h"
#include "families/ltx/latents.h"
#include "io/tensor_index.h"
#include "runtime/module_runner.h"

namespace ggdiff::ltx {
namespace {

constexpr int kSpace = 32, kTime = 8;  // the LTX-2 VAE's factors (the recipe checks them)

int64_t latent_frames(const GenerateOptions& o) {
    return models::ltx_latent_frames(o.video_frames);
}

int64_t audio_steps(const GenerateOptions& o) {
    return models::ltx_request_audio_steps(o.video_frames, o.fps);
}

class LtxLatentUpscaler : public LatentUpscaler {
  public:
    LtxLatentUpscaler(std::string name, std::vector<float> mean, std::vector<float> std)
        : name_(std::move(name)), mean_(std::move(mean)), std_(std::move(std)) {}

    // Opens `path` and builds its runner on `where` (nothing is read until prepare()).
    Status open(const std::string& path, const ModuleDevices& where, int threads) {
        GGDIFF_TRY(index_.add(path));
        if (!is_ltx_latent_upscaler(index_)) {
            return Status::Error(path +
                                 " is not an LTX-2 latent upscaler (no initial_conv / final_conv "
                                 "weights): LTX-2's hires fix takes ltx-2-spatial-upscaler-x2, "
                                 "x1.5 and ltx-2-temporal-upscaler-x2 files");
        }
        auto cfg = detect_ltx_latent_upscaler(index_);
        if (!cfg.ok()) return cfg.status().with_context(path);
        if (cfg->channels != static_cast<int64_t>(mean_.size())) {
            return Status::Error(
                string_format("%s: an upscaler of %lld latent channels; the LTX-2 VAE has %zu",
                              path.c_str(), static_cast<long long>(cfg->channels), mean_.size()));
        }
        cfg_ = *cfg;
        runner_ = std::make_unique<ModuleRunner>(index_, -1, where, threads, "latent upscaler");
        return Status::Ok();
    }

    const std::string& name() const override { return name_; }

    void output(int& width, int& height, int& frames) const override {
        width = static_cast<int>(cfg_.out_width(width / kSpace) * kSpace);
        height = static_cast<int>(cfg_.out_height(height / kSpace) * kSpace);
        const int64_t t = models::ltx_latent_frames(frames);
        frames = static_cast<int>(1 + kTime * (cfg_.out_frames(t) - 1));
    }

    Status prepare() override {
        std::lock_guard<std::mutex> lock(mutex_);
        if (prepared_) return Status::Ok();
        const LtxUpscalerConfig c = cfg_;
        GGDIFF_TRY(runner_
                       ->prepare([&c](GraphBuilder& gb) {
                           HostTensor x({4, 4, c.channels, 2});
                           return std::vector<ggml_tensor*>{
                               build_ltx_latent_upscale(gb.nn(), c, gb.input(x))};
                       })
                       .with_context(name_));
        prepared_ = true;
        const char* kind = cfg_.kind == LtxUpscalerConfig::Kind::Temporal  ? "x2 in time"
                           : cfg_.kind == LtxUpscalerConfig::Kind::Spatial ? "x2 in space"
                                                                           : "rational in space";
        GGDIFF_LOG_INFO("latent upscaler %s: %s (%d/%d), %lld wide, %d blocks each side, %.1f MiB",
                        name_.c_str(), kind, cfg_.num, cfg_.den, static_cast<long long>(cfg_.mid),
                        cfg_.blocks, runner_->weights().bytes() / 1048576.0);
        return Status::Ok();
    }

    Result<std::vector<float>> upscale(const GenerateOptions& first, int w1, int h1,
                                       const GenerateOptions& second, int w2, int h2,
                                       std::vector<float> latent) override {
        std::lock_guard<std::mutex> lock(mutex_);
        const int64_t c = cfg_.channels;
        const int64_t lw = w1 / kSpace, lh = h1 / kSpace, t = latent_frames(first);
        const int64_t steps = audio_steps(first);
        const int64_t packed = models::ltx_packed_channels(lw, lh, t, c, steps);
        if (static_cast<int64_t>(latent.size()) != lw * lh * packed * t) {
            return Status::Error("LTX-2 latent upscale: the latent is not the first pass's");
        }
        HostTensor whole({lw, lh, packed * t, 1});
        whole.data = std::move(latent);
        auto [video, audio] = models::ltx_unpack(whole, c, t, steps);

        // [w, h, C * T] (channel c of frame f at plane c T + f) -> [w, h, C, T], un-normalized.
        const int64_t plane = lw * lh;
        HostTensor z({lw, lh, c, t});
        for (int64_t ch = 0; ch < c; ++ch) {
            const float s = std_[static_cast<size_t>(ch)], m = mean_[static_cast<size_t>(ch)];
            for (int64_t f = 0; f < t; ++f) {
                const float* src = video.data.data() + (ch * t + f) * plane;
                float* dst = z.data.data() + (f * c + ch) * plane;
                for (int64_t i = 0; i < plane; ++i) dst[i] = src[i] * s + m;
            }
        }
        GGDIFF_TRY(runner_->begin_phase());
        auto run = [this](const models::WanGraphBuild& build) {
            return runner_->run([&build](GraphBuilder& gb) {
                return build(gb.nn(), [&gb](const HostTensor& x) { return gb.input(x); });
            });
        };
        auto up = ltx_upscale_latent(cfg_, z, run);
        if (!up.ok()) return up.status();
        const int64_t ow = up->dim(0), oh = up->dim(1), ot = up->dim(3);
        const int64_t t2 = latent_frames(second);
        if (ow != w2 / kSpace || oh != h2 / kSpace || ot != t2) {
            return Status::Error(string_format(
                "LTX-2 latent upscale: %lldx%lldx%lld latent, the second pass takes %dx%dx%lld",
                static_cast<long long>(ow), static_cast<long long>(oh), static_cast<long long>(ot),
                w2 / kSpace, h2 / kSpace, static_cast<long long>(t2)));
        }
        // Normalized again, back to the packed layout.
        const int64_t oplane = ow * oh;
        HostTensor video2({ow, oh, c * ot, 1});
        for (int64_t ch = 0; ch < c; ++ch) {
            const float s = std_[static_cast<size_t>(ch)], m = mean_[static_cast<size_t>(ch)];
            for (int64_t f = 0; f < ot; ++f) {
                const float* src = up->data.data() + (f * c + ch) * oplane;
                float* dst = video2.data.data() + (ch * ot + f) * oplane;
                for (int64_t i = 0; i < oplane; ++i) dst[i] = (src[i] - m) / s;
            }
        }
        // The audio [16 bins, steps, 8 channels]: its first steps kept, zeros after.
        const int64_t steps2 = audio_steps(second);
        HostTensor audio2({models::kLtxAudioBins, steps2, models::kLtxAudioChannels, 1});
        const int64_t keep = std::min(steps, steps2);
        for (int64_t ch = 0; ch < models::kLtxAudioChannels; ++ch) {
            std::copy_n(audio.data.begin() + ch * steps * models::kLtxAudioBins,
                        keep * models::kLtxAudioBins,
                        audio2.data.begin() + ch * steps2 * models::kLtxAudioBins);
        }
        if (steps2 != steps) {
            GGDIFF_LOG_INFO("LTX-2 hires: audio latent length %lld -> %lld",
                            static_cast<long long>(steps), static_cast<long long>(steps2));
        }
        return std::move(models::ltx_pack(video2, ot, audio2).data);
    }

    void end_phase() override {
        if (runner_) runner_->end_phase();
    }

  private:
    std::string name_;
    std::vector<float> mean_, std_;
    TensorIndex index_;  // outlives the runner, which reads from it
    LtxUpscalerConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
    bool prepared_ = false;
    std::mutex mutex_;  // data-parallel replicas take turns
};

Result<std::vector<float>> read_statistic(const TensorIndex& index, const std::string& name) {
    const TensorInfo* t = index.find(name);
    if (!t) return Status::Error("the LTX-2 video VAE has no " + name);
    std::vector<float> v;
    GGDIFF_TRY(index.read_f32(*t, v));
    return v;
}

}  // namespace

Result<LatentUpscalerLoader> ltx_latent_upscalers(const FamilyContext& ctx,
                                                  const std::string& vae_prefix) {
    const std::string st = vae_prefix + "per_channel_statistics.";
    auto mean = read_statistic(ctx.index, st + "mean-of-means");
    if (!mean.ok()) return mean.status();
    auto sd = read_statistic(ctx.index, st + "std-of-means");
    if (!sd.ok()) return sd.status();
    if (mean->size() != sd->size()) {
        return Status::Error("the LTX-2 video VAE's per-channel statistics differ in length");
    }
    const ModuleDevices where = ctx.placement.upscaler;
    const int threads = ctx.threads;
    return LatentUpscalerLoader(
        [mean = std::move(*mean), sd = std::move(*sd), where,
         threads](const std::string& path) -> Result<std::shared_ptr<LatentUpscaler>> {
            auto u = std::make_shared<LtxLatentUpscaler>(
                std::filesystem::path(path).stem().string(), mean, sd);
            GGDIFF_TRY(u->open(path, where, threads));
            return std::shared_ptr<LatentUpscaler>(std::move(u));
        });
}

}  // namespace ggdiff::ltx
