// Engine: a loaded model (text encoders, denoiser, VAE on their devices) that turns
// GenerateOptions into images. One Engine per model; generate() may be called many
// times (not concurrently).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/options.h"

namespace ggdiff {

class Engine {
  public:
    virtual ~Engine() = default;

    // Opens the checkpoint files, detects the family, validates placement and
    // loads the weights. Errors name the file, tensor or flag at fault.
    static Result<std::unique_ptr<Engine>> load(const ModelOptions& options);

    virtual Result<std::vector<GeneratedImage>> generate(const GenerateOptions& options,
                                                         const ProgressFn& progress,
                                                         const ImageFn& on_image = nullptr) = 0;

    virtual std::string family() const = 0;
    virtual std::string model_name() const = 0;  // base name of the main file
};

}  // namespace ggdiff
