// The ESRGAN upscaler as a pipeline step: after generation every output image goes through
// --upscale-model --upscale-repeats times (Engine), and -M upscale runs it on an image
// without any diffusion model (the C API's upscaler handle).
#pragma once

#include <memory>
#include <string>

#include "models/upscaler/esrgan.h"
#include "pipeline/options.h"

namespace ggdiff {

// Where the upscaler runs: --backend's "upscaler=" entry (alias "upscale"), else the
// default device, with --params-backend / --offload-to-cpu as for the other modules.
Result<ModuleDevices> upscaler_placement(const ModelOptions& options);

// Loads the upscaler model at `path` (options.upscale_model when empty) on `where`, with the
// threads and kernel settings of `options` (errors name the file; without `path`, the flag).
Result<std::unique_ptr<models::EsrganUpscaler>> load_upscaler(const ModelOptions& options,
                                                              const ModuleDevices& where,
                                                              const std::string& path = "");

// Called after each pass with the pass (1-based) and the number of passes; false cancels.
using UpscaleProgressFn = std::function<bool(int pass, int total)>;

// Upscales an 8-bit image `repeats` times: RGB / 255 through the network, clamped to [0, 1]
// and truncated to 8 bits after each pass (as stable-diffusion.cpp's CLI does). Grey becomes
// RGB; an alpha channel is resized with nearest neighbour.
Result<Image> upscale_image(models::EsrganUpscaler& upscaler, const Image& image, int repeats,
                            int tile_size, const UpscaleProgressFn& progress = nullptr);

// The A1111 extras fields for an upscaled image: "Postprocess upscale by: <total factor>,
// Postprocess upscaler: <name>" appended to the parameters line of `parameters` (which is
// kept as it is), or on their own when there is none.
std::string parameters_with_upscale(const std::string& parameters, int factor,
                                    const std::string& upscaler);

}  // namespace ggdiff
