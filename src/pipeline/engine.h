// Engine: a loaded model (the family's text conditioning, denoiser and autoencoder on
// their devices) that turns GenerateOptions into images through the one generic generate
// path (pipeline/generate.cpp). One Engine per model; generate() may be called many times
// (not concurrently).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "pipeline/family.h"
#include "pipeline/lora_manager.h"
#include "pipeline/options.h"

namespace ggdiff {

// What one phase of generate() computed and the most memory the process held during it.
struct PhaseFigures {
    double flops = 0;       // products, convolutions, attention (runtime::computed_flops)
    uint64_t peak_rss = 0;  // bytes; from the phase's start where the kernel lets us reset
    uint64_t uploaded = 0;  // weight bytes uploaded by --max-vram graph cutting
};

// Wall-clock figures of the last generate() call (for -v and ggdiff-bench).
struct PhaseTimings {
    double text = 0, encode = 0, decode = 0;
    double sampling = 0;        // all steps of all batch images
    std::vector<double> steps;  // mean seconds per step, per batch image
    double lora = 0;            // applying the prompt's LoRAs (0 when unchanged)
    PhaseFigures text_figures, encode_figures, sampling_figures, decode_figures;
};

class Engine {
  public:
    ~Engine();

    // Opens the checkpoint files, picks the family from the registry, validates placement
    // and loads the weights. Errors name the file, tensor or flag at fault.
    // `request` (may be null): the generation the placement is sized for; with --auto-fit or
    // a layer split, the modules' compute buffers are measured at its size first.
    static Result<std::unique_ptr<Engine>> load(const ModelOptions& options,
                                                const GenerateOptions* request = nullptr);

    // The compute buffer of each module ("te", "diffusion", "vae", ...) for `request`,
    // measured by building the family's graphs at its size without reading weights or
    // computing (one sampling step, the first batch item, LoRA tags left out).
    static Result<std::map<std::string, uint64_t>> measure_compute(const ModelOptions& options,
                                                                   const TensorIndex& index,
                                                                   GenerateOptions request);

    Result<std::vector<GeneratedImage>> generate(const GenerateOptions& options,
                                                 const ProgressFn& progress,
                                                 const ImageFn& on_image = nullptr);

    // How many images generate() makes for these options: one per batch item, times the
    // frames each latent decodes to (Qwen Image Layered: one per layer).
    int image_count(const GenerateOptions& options) const;

    std::string family() const { return family_.name; }
    std::string model_name() const { return model_name_; }  // base name of the main file
    const Family& family_parts() const { return family_; }
    const PhaseTimings& timings() const { return timings_; }

  private:
    Engine() = default;

    // Declared first so that it outlives the family's parts, which read from it.
    TensorIndex index_;
    Family family_;
    std::unique_ptr<LoraManager> lora_;
    std::string model_name_;
    bool auto_fit_ = false;
    PhaseTimings timings_;
};

}  // namespace ggdiff
