// Engine for the UNet families SD1.x and SD2.x.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/tensor_index.h"
#include "models/diffusion/unet.h"
#include "models/te/clip_text.h"
#include "models/vae/taesd.h"
#include "models/vae/vae.h"
#include "pipeline/engine.h"
#include "runtime/module_runner.h"
#include "sampling/sampling.h"
#include "tokenizers/clip_tokenizer.h"

namespace ggdiff {

// Wall-clock figures of the last generate() call (for -v and ggdiff-bench).
struct PhaseTimings {
    double text = 0, encode = 0, decode = 0;
    std::vector<double> steps;  // mean seconds per step, per batch image
};

class SdEngine : public Engine {
  public:
    Status init(const ModelOptions& options, TensorIndex index);

    Result<std::vector<GeneratedImage>> generate(const GenerateOptions& options,
                                                 const ProgressFn& progress,
                                                 const ImageFn& on_image = nullptr) override;
    std::string family() const override { return family_; }
    std::string model_name() const override { return model_name_; }
    const PhaseTimings& timings() const { return timings_; }

  private:
    Status setup_modules(const ModelOptions& options, int weight_type);
    int spatial_multiple() const;
    Result<HostTensor> encode_prompt(const std::string& prompt, int clip_skip);
    Result<HostTensor> run_unet(const HostTensor& x, const std::vector<float>& t,
                                const HostTensor& context);
    Result<HostTensor> vae_decode(const HostTensor& latent, const TilingOptions& tiling);
    Result<HostTensor> vae_encode(const HostTensor& image, sampling::Rng& rng);

    TensorIndex index_;
    models::ClipTextConfig clip_cfg_;
    models::UNetConfig unet_cfg_;
    models::VaeConfig vae_cfg_;
    std::optional<ClipTokenizer> tokenizer_;
    sampling::Parameterization param_ =
        sampling::Parameterization::discrete(sampling::Prediction::Eps);
    std::unique_ptr<ModuleRunner> te_, unet_, vae_, taesd_;
    std::optional<models::TaesdConfig> taesd_cfg_;
    bool auto_fit_ = false;
    bool sd2_ = false;
    bool has_encoder_ = false;
    int pad_token_ = 49407;
    int default_clip_skip_ = 1;
    int threads_ = 1;
    std::string family_, model_name_;
    PhaseTimings timings_;
};

}  // namespace ggdiff
