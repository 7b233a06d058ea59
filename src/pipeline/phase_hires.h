// Phase "hires": the hires fix. After an item's first pass its latent is upscaled to the target
// size, then sampled once more as img2img from a schedule cut by the hires strength, and the
// result is what gets decoded. The upscale is one of:
//   - a resize of the latent ("Latent" = bilinear and its A1111 variants);
//   - a resize of the decoded image ("Lanczos", "Nearest"), encoded again;
//   - an upscaler model (ESRGAN) run on the decoded image, resized to the target by nearest
//     when its scale gives another size, encoded again.
// Everything follows stable-diffusion.cpp (see ../shared/golden/sd1_extras notes): the RNGs
// restart at the item's seed before the upscale, the VAE's posterior sample comes first, then
// the noise; the schedule has steps / strength steps and the pass runs its last
// int(steps_total * strength) + 1 steps.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "image/resample.h"
#include "pipeline/family.h"
#include "pipeline/generate_plan.h"
#include "pipeline/options.h"
#include "sampling/rng.h"

namespace ggdiff {

// The --hires-upscaler names that are not models, in A1111's spelling ("None" turns the fix
// off).
const std::vector<std::string>& hires_upscaler_names();

struct HiresPlan {
    // LatentModel: a family's latent upscaler model (Family::latent_upscaler) on the latent.
    enum class Kind { Latent, Image, Model, LatentModel };
    Kind kind = Kind::Latent;
    std::string upscaler;  // as given ("Latent", "Lanczos", a model name)
    ResampleFilter filter = ResampleFilter::Bilinear;
    bool antialias = false;
    std::string model_path;  // Kind::Model: the file in --hires-upscalers-dir
    int tile_size = 128;     // Kind::Model
    int steps = 0;           // steps the pass samples (metadata: "Hires steps")
    // The second pass: the target size and latent shape, its sigmas (already cut).
    GeneratePlan plan;
    // Kind::LatentModel: the model, and the second pass's request (the first's with the size
    // and video frames the model gives); plan is filled by plan_latent_model_hires.
    std::shared_ptr<LatentUpscaler> latent_model;
    GenerateOptions options;
};

// The hires pass of request `o` whose first pass is `first`; nullopt when the fix is off.
// Errors name the flag at fault (an unknown upscaler, a model missing from `upscalers_dir`,
// a family or request the fix cannot follow).
Result<std::optional<HiresPlan>> plan_hires(const GenerateOptions& o, const Family& f,
                                            const GeneratePlan& first,
                                            const std::string& upscalers_dir);

// Kind::LatentModel: the second pass of `hp` (from plan_hires) for what `model` makes of the
// first pass `first`: its size and frames (a hires target that differs is ignored with a
// warning, as stable-diffusion.cpp does), its plan and its schedule.
Status plan_latent_model_hires(HiresPlan& hp, const GenerateOptions& o, const Family& f,
                               const GeneratePlan& first, std::shared_ptr<LatentUpscaler> model);

// The file --hires-upscaler `name` stands for in --hires-upscalers-dir `dir`: NAME.gguf,
// .safetensors, .pt or .pth; errors name the flag at fault.
Result<std::string> find_hires_upscaler_model(const std::string& name, const std::string& dir);

// An image upscaler model: RGB [W, H, 3, 1] in [0, 1] -> [W * s, H * s, 3, 1], not clamped.
using ImageUpscaleFn = std::function<Result<HostTensor>(const HostTensor& rgb)>;

// The first pass's clean latent (the `first` plan's shape) upscaled to hp.plan's latent shape.
// Image kinds decode it (with `tiling`, and the auto-fit retry), resize or run `model` on it,
// and encode the result (the posterior sample drawn from `rng`).
Result<std::vector<float>> hires_upscale(Family& f, const GeneratePlan& first, const HiresPlan& hp,
                                         std::vector<float> latent, sampling::Rng& rng,
                                         const TilingOptions& tiling, bool auto_fit,
                                         const ImageUpscaleFn& model);

// Per latent pixel of the target size, how much of each denoised prediction the hires pass
// keeps (--mask's weights resized by nearest, taking the largest when shrinking); empty when
// `keep` is.
std::vector<float> hires_keep(const std::vector<float>& keep, const GeneratePlan& first,
                              const HiresPlan& hp);

// The infotext keys A1111 writes for the fix ("Hires upscale" or "Hires resize", "Hires
// steps", "Hires upscaler"), in its order.
std::vector<std::pair<std::string, std::string>> hires_infotext(const GenerateOptions& o,
                                                                const HiresPlan& hp);

}  // namespace ggdiff
