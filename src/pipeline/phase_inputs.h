// Phase "inputs": what the denoiser gets besides the noisy latent and the text, prepared once
// per generation and shared by every batch item: the init latent of img2img (the init image
// through the VAE) with the schedule cut by --strength, the inpainting mask and the
// masked-image latent, the reference images' latents, and the ControlNet's hint. Progress
// calls the init image's part "encode". A pass that starts from a latent it already has
// (hires fix) fills InitLatents itself.
#pragma once

#include <optional>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "pipeline/family.h"
#include "pipeline/generate_plan.h"
#include "pipeline/options.h"
#include "sampling/rng.h"

namespace ggdiff {

// Where sampling starts and what each denoised prediction keeps of it.
struct InitLatents {
    std::vector<float> sigmas;  // the schedule to sample: the plan's, cut by --strength for img2img
    std::vector<float> latent;  // img2img: the init image's latent (every frame); empty: none
    // Inpainting models: their extra denoiser input (mask + masked-image latent); empty when
    // the model takes none.
    HostTensor inpaint_input;
    // Per latent pixel, how much of each denoised prediction to keep (the rest is `latent`);
    // empty: all of it.
    std::vector<float> keep;
};

// What the inputs phase produces.
struct DenoiseInputs {
    InitLatents init;
    std::vector<HostTensor> refs;        // reference image latents, in -r order
    std::optional<ControlHint> control;  // with --control-image
    VideoConditions video;  // a video model's image conditions (Family::video_conditions)
    HostTensor identity;    // the identity embedding (Family::identity), or empty
};

// The ControlNet hint of o.control_image at the output size; none without one (logging, when
// `warn_unused`, that a loaded ControlNet goes unused).
std::optional<ControlHint> control_condition(const Family& f, const GeneratePlan& p,
                                             const GenerateOptions& o, bool warn_unused);

// With o.init_image: encodes it (the VAE's posterior samples come from `rng`, the init image
// first, then the masked one of inpainting models), derives the mask's latent weights and
// cuts the schedule by o.strength. Without one: the plan's schedule, and for inpainting
// models an input that says "paint everything".
// `use_init_image` false: o.init_image went elsewhere (a video model's conditions) and is no
// img2img input.
Result<InitLatents> prepare_init(Family& f, const GeneratePlan& p, const GenerateOptions& o,
                                 sampling::Rng& rng, bool use_init_image = true);

// A video model's held frames (in.video.frame_keep, one value per latent frame): sampling
// starts from in.video.latent there and every prediction keeps it (in.init.latent / keep).
void hold_frames(DenoiseInputs& in, const GeneratePlan& p);

// Encodes each of o.ref_images at about the output's pixel count (posterior samples from
// `rng`); errors name the image.
Result<std::vector<HostTensor>> encode_reference_images(Family& f, const GeneratePlan& p,
                                                        const GenerateOptions& o,
                                                        sampling::Rng& rng);

}  // namespace ggdiff
