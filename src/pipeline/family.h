// Model families as recipes. A family (SD1/SD2, SDXL, FLUX.1, ...) is three parts the
// generic generate path (pipeline/generate.cpp) drives, plus the data that tells the path
// how to use them:
//   - a TextConditioner: prompt -> conditioning (context tokens, pooled vectors);
//   - a Denoiser: the diffusion network on a batch of noisy latents;
//   - an Autoencoder: latent <-> image (KL VAE, TAESD, Wan VAE ...);
//   - the latent format, the noise parameterization and the family's defaults.
// A FamilyRecipe recognises a family's weights (detect) and builds its parts; the registry
// (families/registry.h) lists the recipes and is the only place that tells families apart.
// A family is one folder, src/families/<family>/ (docs/adding_a_family.md), plus one
// registry line; the generate path never branches on a family.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "image/image.h"
#include "io/lora_names.h"
#include "io/model_layout.h"
#include "io/tensor_index.h"
#include "pipeline/latent_rgb.h"
#include "pipeline/lora_tags.h"
#include "pipeline/options.h"
#include "pipeline/placement_setup.h"
#include "sampling/parameterization.h"
#include "sampling/rng.h"
#include "sampling/samplers.h"
#include "sampling/schedules.h"
#include "sampling/step_cache.h"

namespace ggdiff {

// One prompt's conditioning, as the family's denoiser wants it.
struct Conditioning {
    HostTensor context;  // [width, tokens, 1]: the tokens the denoiser attends to
    HostTensor pooled;   // [width] or empty: a pooled / vector conditioning (SDXL y, FLUX)
    // [tokens] or empty: an additive mask over the context tokens for the denoiser's
    // attention (0 attended, -inf hidden: Chroma's T5 padding).
    HostTensor key_mask;
    // What a family's conditioner prepares for its own denoiser beside the tokens (HiDream-O1's
    // edit mode: the reference images' pixels joined to the patches, and the RoPE positions of
    // the whole sequence); empty elsewhere.
    std::vector<HostTensor> images;
    std::vector<int32_t> positions;
    // Two conditionings can share one batched denoiser call when their shapes agree.
    bool batchable_with(const Conditioning& o) const {
        if (images.size() != o.images.size() || positions != o.positions) return false;
        for (size_t i = 0; i < images.size(); ++i) {
            if (images[i].ne != o.images[i].ne) return false;
        }
        return context.ne == o.context.ne && pooled.ne == o.pooled.ne &&
               key_mask.ne == o.key_mask.ne;
    }
};

// What a text conditioner is asked for.
struct TextRequest {
    std::string prompt;
    int clip_skip = -1;  // <= 0: the family's default
    int width = 0, height = 0;
    bool negative = false;  // the negative / unconditional prompt
    // The -r reference images as given (not resized), for text encoders that read them
    // (Qwen Image Edit's vision tower); null or empty: none.
    const std::vector<Image>* ref_images = nullptr;
};

class TextConditioner {
  public:
    virtual ~TextConditioner() = default;
    virtual Result<Conditioning> encode(const TextRequest& request) = 0;
    // Refuses a prompt the encoder would not take (too many windows), before any compute.
    virtual Status check(const TextRequest&) const { return Status::Ok(); }
    // The text phase is over for this generation (weights may be released).
    virtual void end_phase() = 0;
    // A1111's "TI hashes" of the textual-inversion embeddings the prompts encoded since the
    // last call used ("name: 0123456789ab, ..."); empty for none or encoders without them.
    virtual std::string embedding_hashes() { return std::string(); }
};

// Conditioning from identity images (PhotoMaker): a second positive conditioning that takes
// over from a step on, and the prompt the ordinary one is then made from.
struct IdConditions {
    std::string prompt;  // for the ordinary conditioning (the trigger word taken out)
    Conditioning cond;   // the prompt with the identity stacked into its class-word tokens
    // `cond` replaces the ordinary conditioning on the (1-based) steps after this one, on
    // every evaluation but a step's predictor (stable-diffusion.cpp's start_merge_step).
    int after_step = 0;
};

// A ControlNet condition, the same for every item of a batch.
struct ControlHint {
    HostTensor image;  // [W, H, 3, 1] in [0, 1]: the control image at the output size
    float strength = 0.9f;
};

// One denoiser evaluation over a batch of n latents.
struct DenoiseBatch {
    HostTensor x;                                   // [w, h, c, n]: noisy latents times c_in
    std::vector<float> timesteps;                   // n model timesteps
    std::vector<const Conditioning*> cond;          // n conditionings (batchable with each other)
    float guidance = 3.5f;                          // distilled guidance (guidance-embedded DiTs)
    const HostTensor* concat = nullptr;             // [w, h, k, 1] extra input channels, or null
    const std::vector<HostTensor>* refs = nullptr;  // reference latents (edit models), or null
    bool increase_ref_index = false;                // --increase-ref-index
    const ControlHint* control = nullptr;           // ControlNet condition, or null
    // Image tokens a video model attends to besides the text (Wan I2V's CLIP vision features,
    // [width, tokens, 1]), the same for every item; null: none.
    const HostTensor* image_context = nullptr;
    // Per latent frame, 1 sampled or 0 held (VideoConditions::frame_keep): a held frame is
    // evaluated at timestep 0; null: every frame at the item's timestep.
    const std::vector<float>* frame_keep = nullptr;
    // Wan VACE's control context ([w, h, k * frames, 1], the latent's frames), the same for
    // every item, and the scale of what the VACE blocks add (--vace-strength); null: none.
    const HostTensor* vace_context = nullptr;
    float vace_strength = 1.0f;
    // Skip-layer guidance: the denoiser's blocks (as --skip-layers numbers them) that pass
    // their inputs through unchanged in this call; null or empty: none. Only set for a
    // family with Family::skips_layers.
    // An identity the denoiser injects (PuLID-FLUX's embedding, [2048, tokens, 1]: see
    // Family::identity), the same for every item, and the scale of what it adds; null: none.
    const HostTensor* identity = nullptr;
    float identity_weight = 1.0f;
    const std::vector<int>* skip_layers = nullptr;
};

class Denoiser {
  public:
    virtual ~Denoiser() = default;
    // Raw network output (eps, v or flow velocity) of the shape of batch.x.
    virtual Result<HostTensor> run(const DenoiseBatch& batch) = 0;
    virtual void end_phase() = 0;
};

class Autoencoder {
  public:
    virtual ~Autoencoder() = default;
    // Image pixels per latent pixel (8 for every SD-style VAE).
    virtual int downscale() const = 0;
    // Diffusion-space latent [w, h, c, 1] -> images [w*d, h*d, channels, frames] in [-1, 1]
    // (frames > 1 when one latent holds several images, e.g. layers).
    virtual Result<HostTensor> decode(const HostTensor& latent) = 0;
    virtual bool can_encode() const = 0;
    // Image tensor [W, H, channels, 1] in [-1, 1] -> diffusion-space latent; `rng` samples
    // the posterior where the VAE has one.
    virtual Result<HostTensor> encode(const HostTensor& image, sampling::Rng& rng) = 0;
    virtual void end_phase() = 0;
    // Live previews (--preview tae|vae): the latent decoded as decode() does, or by the TAESD
    // loaded for previews only (--taesd-preview-only).
    virtual Result<HostTensor> decode_preview(const HostTensor& latent) { return decode(latent); }
    // Whether a TAESD decodes (the images, or the previews): --preview tae needs one.
    virtual bool has_taesd() const { return false; }
    // The sound track the last decode() made (an audio-video model's: LTX-2), handed over
    // once; null: none.
    virtual std::shared_ptr<const AudioTrack> take_audio() { return nullptr; }
    // Whether decode() tiles by itself as the request's --vae-tiling says (the engine then
    // does not split the latent into tiles for it).
    virtual bool tiles_itself() const { return false; }
};

// What a video model takes besides the prompt, made from the request's images (-i first frame,
// --end-img last frame) once per generation and shared by every batch item and step.
struct VideoConditions {
    HostTensor concat;             // extra denoiser input channels (DenoiseBatch::concat), or empty
    HostTensor image_context;      // DenoiseBatch::image_context, or empty
    bool used_init_image = false;  // -i went into these (not into img2img)
    // Latent frames given rather than sampled (Wan 2.2 TI2V's first frame from -i): per
    // latent frame 1 to sample it, 0 to hold it at `latent` (the whole latent; the held
    // frames' values), fed to the denoiser at timestep 0 and kept in every prediction, as
    // stable-diffusion.cpp does; empty: none.
    std::vector<float> frame_keep;
    std::vector<float> latent;
    // The latent channels frame_keep holds (LTX-2's video channels, not the sound packed after
    // them); 0: every channel. Values between 0 and 1 blend (LTX-2's -i at --strength).
    int held_channels = 0;
    HostTensor vace_context;     // DenoiseBatch::vace_context, or empty
    float vace_strength = 1.0f;  // DenoiseBatch::vace_strength
    // Latent frames at the start that only condition the denoiser (Wan VACE's reference
    // image, -i): sampled with the rest, dropped before decoding.
    int leading_frames = 0;
};

// A latent upscaler model the hires fix runs on the first pass's clean latent instead of a
// resize (LTX-2's spatial x2 / x1.5 and temporal x2 upscalers): the model decides the second
// pass's size and frames. Made by Family::latent_upscaler; shared by data-parallel replicas
// (upscale() takes turns).
class LatentUpscaler {
  public:
    virtual ~LatentUpscaler() = default;
    // The file's base name without extension (logs, errors).
    virtual const std::string& name() const = 0;
    // What a request of width x height and `frames` output frames becomes (video frames, as
    // Family::output_frames counts them).
    virtual void output(int& width, int& height, int& frames) const = 0;
    // Reads the weights onto their devices (before any compute of a request that uses it).
    virtual Status prepare() = 0;
    // The first pass's clean latent of request `first` (width w1 x h1) -> the latent of request
    // `second` (its size and frames from output()), in the diffusion latent's layout.
    virtual Result<std::vector<float>> upscale(const GenerateOptions& first, int w1, int h1,
                                               const GenerateOptions& second, int w2, int h2,
                                               std::vector<float> latent) = 0;
    virtual void end_phase() = 0;
};

// What the family does when the request leaves something unset.
struct FamilyDefaults {
    std::string sampler = "euler_a";  // CLI name
    float cfg_scale = 7.0f;
    int width = 512, height = 512;
    int clip_skip = 1;
    // The schedule when neither --scheduler nor the sampler asks for one (lcm for lcm/tcd,
    // simple for ddim_trailing, exponential for EDM); unset: discrete.
    std::optional<sampling::ScheduleKind> schedule;
    // The samplers' eta when --eta is not given; unset: each sampler's own default.
    std::optional<float> eta;
};

// A sampler loop of the family's own, for a model the generic samplers cannot drive (SeFi-Image
// steps its semantic and texture channels on two schedules). It replaces the plan's sampler
// and schedule: the family's check_request says what it makes of --sampling-method and
// --scheduler.
struct OwnSampler {
    // The noise levels of `steps` steps: the generic path noises the start to the first and
    // undoes the flow scaling of the last, as for any schedule.
    std::function<std::vector<float>(int steps)> sigmas;
    // One item's loop: x from sigmas[0] to the clean latent (sampling::sample's contract).
    std::function<Status(const sampling::DenoiseFn& denoise, std::vector<float>& x,
                         const std::vector<float>& sigmas, const sampling::SamplerOptions& so)>
        run;
};

// A module LoRA files can patch: its runner and, per weight (canonical name), the keys it
// answers to in LoRA files (see io/lora_names.h; the canonical name itself always counts).
struct LoraTarget {
    std::string label;  // "UNet", "CLIP-L", ... (logs)
    ModuleRunner* runner = nullptr;
    bool text_encoder = false;  // takes a tag's text-encoder weight, else its denoiser weight
    // The high-noise expert's DiT: patched only by <lora:|high_noise|NAME> tags, which patch
    // nothing else.
    bool high_noise = false;
    std::function<std::vector<std::string>(const std::string& weight)> keys;
    // Keys that address only some rows of a weight (given with its torch shape); several
    // weights may answer to one such key, each for its own rows of the module's output (see
    // io/lora_names.h: LoraRowKey). Null: none.
    std::function<std::vector<LoraRowKey>(const std::string& weight,
                                          const std::vector<int64_t>& shape)>
        row_keys;
};

// A loaded family: its parts and what the generate path needs to know about them.
struct Family {
    // The recipe's display name and the variant its load found ("SD1 inpainting",
    // "FLUX.1 dev"); set by the engine from the registry (logs, errors, the API's "family").
    std::string name;
    std::string variant;  // "", "inpainting", "dev", "schnell", ... (set by load)
    sampling::Parameterization param = sampling::Parameterization::discrete();
    FamilyDefaults defaults;
    int latent_channels = 4;
    // The latent format's linear latent-to-RGB map for --preview proj (None: refused).
    LatentRgb latent_rgb = LatentRgb::None;
    // Width and height must be multiples of this (the VAE's factor; families that patch or
    // pad inside the denoiser still take any multiple of 8).
    int size_multiple = 8;
    // The network behind the denoiser (UNet: SD1, SD2, SDXL; DiT: the rest); step caching
    // (--cache-mode) decides by it which modes apply, and sizes ggdiff computes itself (the
    // hires fix's target) are rounded up to the VAE's factor times 8 for a UNet, as
    // stable-diffusion.cpp does.
    sampling::DenoiserArch arch = sampling::DenoiserArch::DiT;
    // Whether the family's denoiser uses classifier-free guidance at all (distilled models
    // may ignore --cfg-scale and take --guidance instead).
    bool uses_cfg = true;
    // A ControlNet is loaded and the denoiser applies DenoiseBatch::control.
    bool takes_control = false;
    // An inpainting model: the denoiser takes, after the latent, the mask (1 channel,
    // 1 = repaint) and the latent of the init image with the repaint area mid grey
    // (latent_channels) as DenoiseBatch::concat.
    bool inpaint_inputs = false;
    // Whether the denoiser takes a distilled guidance value (DenoiseBatch::guidance, from
    // --guidance; FLUX.1-dev). Shown in the infotext when set.
    bool uses_guidance = false;
    // Whether the denoiser honours DenoiseBatch::skip_layers (skip-layer guidance,
    // --slg-scale); elsewhere asking for it is an error.
    bool skips_layers = false;
    // With skips_layers: how many blocks --skip-layers may name (0 .. skip_layer_count - 1,
    // numbered as DenoiseBatch::skip_layers numbers them).
    int skip_layer_count = 0;
    std::unique_ptr<TextConditioner> text;
    std::unique_ptr<Denoiser> denoiser;
    // Wan 2.2 A14B's high-noise expert (--high-noise-diffusion-model), or null: it samples the
    // plan's first high_noise_steps steps (GeneratePlan::high_noise).
    std::unique_ptr<Denoiser> high_noise;
    std::unique_ptr<Autoencoder> vae;
    // The identity embedding a request's --pulid-id-embedding names, read and checked against
    // the loaded PuLID weights (DenoiseBatch::identity). Null: the family injects none (the
    // option is refused).
    std::function<Result<HostTensor>(const GenerateOptions&)> identity;
    // Checks family-specific request fields before any compute.
    Status (*check_request)(const GenerateOptions&) = nullptr;
    // Identity conditioning (SDXL with --photo-maker) for a request and its text request
    // (the prompt without LoRA tags): nullopt when the request gives no ID images. Null: the
    // family takes none (--photo-maker is refused).
    std::function<Result<std::optional<IdConditions>>(const GenerateOptions&, const TextRequest&)>
        id_conditions;
    // Init/reference image -> the tensor the VAE encodes (default: RGB in [-1, 1]).
    HostTensor (*image_input)(const Image&) = nullptr;
    // Frames per latent for a request (Qwen Image Layered: one per layer); nullptr = 1. A
    // latent of F frames is [w, h, latent_channels * F, 1] with channel c of frame f in plane
    // c * F + f, and decodes to F images.
    int (*latent_frames)(const GenerateOptions&) = nullptr;
    // A video model: the frames its latent decodes to for a request (Wan: 1 + 4 (T - 1) from
    // T latent frames); the latent's planes are then the frames of one video, which the VAE
    // decodes together. nullptr: an image model, one image per latent frame, and
    // --video-frames above 1 is an error.
    int (*output_frames)(const GenerateOptions&) = nullptr;
    // Channels per latent frame for a request of width x height, when they depend on it
    // (LTX-2: the video's 128 plus the packed audio's share, which depends on the size, frames
    // and fps); nullptr: latent_channels.
    int (*request_latent_channels)(const GenerateOptions&, int width, int height) = nullptr;
    // The noise levels of `steps` steps for a request of width x height when --scheduler is
    // not given (LTX-2's ltx2 schedule, shifted by the video's token count); null: the
    // sampler's and the parameterization's default schedule.
    std::function<std::vector<float>(const GenerateOptions&, int width, int height, int steps)>
        default_sigmas;
    // What front ends call default_sigmas ("ltx2"): the model's default scheduler.
    std::string default_sigmas_name;
    // A video model's conditions from the request's images, for an output of width x height x
    // frames (Family::output_frames); null: the family takes none (--end-img is refused).
    std::function<Result<VideoConditions>(const GenerateOptions&, int width, int height, int frames,
                                          sampling::Rng& rng)>
        video_conditions;
    // The hires fix's upscaler models: opens the file at `path` (its header; the weights load
    // in LatentUpscaler::prepare) as a latent upscaler of this family, or says why it is not
    // one. Set: the fix takes only such models (--hires-upscaler names one in
    // --hires-upscalers-dir), runs them on the latent and samples the second pass at the size
    // and frames they give, its noise drawn after the first pass's from the same RNG (as
    // stable-diffusion.cpp does for LTX-2). Null: the fix resizes or decodes as for images
    // (refused for video models).
    std::function<Result<std::shared_ptr<LatentUpscaler>>(const std::string& path)> latent_upscaler;
    // Whether video_conditions reads --end-img.
    bool takes_end_image = false;
    // Whether video_conditions reads --control-video (Wan VACE); elsewhere it is refused.
    bool takes_control_video = false;
    // The family's own sampler loop (replacing the plan's sampler and schedule), or null.
    std::shared_ptr<const OwnSampler> own_sampler;
    // The starting noise is scaled by the eta in use (--eta, else defaults.eta) before the
    // init latent is noised with it (HiDream-O1, as stable-diffusion.cpp does).
    bool eta_scales_noise = false;
    // Reference images (-r) the denoiser attends to: each is resized to about the output's
    // pixel count (at most 1024x1024) in multiples of this, then encoded by the VAE (through
    // image_input). 0: the family takes none.
    int ref_image_multiple = 0;
    // Whether --img-cfg-scale guides by the reference images (a pass without them); false: it
    // has no effect (HiDream-O1, as in stable-diffusion.cpp).
    bool ref_image_guidance = true;
    // With ref_image_multiple 0: why -r is refused when the family's model has a use for it
    // that ggdiff does not run yet (the message); empty: the family takes no references.
    std::string ref_images_not_yet;
    // The reference images are encoded at their own size (cut to whole latent pixels of the
    // family's VAE), never resized to the output's pixel count (PiD, as the reference does).
    bool ref_images_as_given = false;
    // The modules <lora:...> prompt tags can patch (none: LoRA tags are an error).
    std::vector<LoraTarget> lora_targets;
    // LoRAs the model always carries besides the prompt's (PhotoMaker's UNet LoRA, with
    // LoraRequest::path set).
    std::vector<LoraRequest> own_loras;
    // Seamless tiling on these axes (set by the engine from --circular*, for recipes with
    // FamilyRecipe::circular): the denoiser and VAE convolutions wrap around; VAE tiles then
    // span the image on a wrapping axis.
    bool circular_x = false, circular_y = false;
};

struct FamilyRecipe;

// Everything a recipe gets when it builds a family.
struct FamilyContext {
    const ModelOptions& options;
    const TensorIndex& index;  // outlives the family
    const EnginePlacement& placement;
    int weight_type = -1;  // --type as a ggml_type, -1 = keep stored types
    int threads = 1;
    std::string main_file;                 // -m or --diffusion-model (tokenizer search, model name)
    const FamilyRecipe* recipe = nullptr;  // the recipe being loaded (its names)
};

struct FamilyRecipe {
    // The family's one identity: `id` is what -M info prints, -M convert writes as
    // ggdiff.family and the API reports ("sd1", "sdxl", "flux", ...; stable); `display` is
    // the name in logs and errors ("SD1", "FLUX.1").
    const char* id;
    const char* display;
    // What detect() looks for, as said when no family matches the files.
    const char* signature;
    // Whether the weights are this family's, from tensor names and shapes only.
    bool (*detect)(const TensorIndex& index);
    // Reads the configuration from the weights and builds the parts (loads weights).
    // nullptr: a family ggdiff recognises but cannot run yet; -M info says
    // "<id> (not supported yet)" and loading fails with that before reading any weight.
    Result<Family> (*load)(const FamilyContext& context);
    // The stand-alone part files its parts read, as their flags spell them without "--"
    // ("vae,taesd,clip_l"); a part file given for any other part (--clip_g, --t5xxl, --llm,
    // --clip_l, --taesd) is an error rather than silently unused. nullptr: not checked, but
    // for --clip_vision, which only a family that lists it reads.
    const char* part_files = nullptr;
    // The family's own tensor names (bare files, diffusers forms and pipelines), or nullptr
    // when it has none beyond the shared layouts (io/model_layout.h).
    const ModelLayout* layout = nullptr;
    // The diffusion model's block segments in graph order ({"double_blocks",
    // "single_blocks"}): what layer split and graph cutting number as blocks
    // (placement/block_index.h). Empty: the generic segments.
    std::vector<std::string> block_segments = {};
    // Whether the family honours --circular / --circularx / --circulary (wrap-around
    // padding of its denoiser's, ControlNet's and VAE's convolutions); elsewhere they fail
    // with "not supported yet for <family>".
    bool circular = false;
    // Whether its text encoders take --embd-dir textual-inversion embeddings (CLIP ones);
    // elsewhere the option only warns that it has no effect.
    bool text_embeddings = false;
    // Whether it takes a high-noise expert (--high-noise-diffusion-model: Wan 2.2 A14B);
    // elsewhere the option is an error.
    bool high_noise_expert = false;
    // Whether it takes an unconditional DiT (--uncond-diffusion-model: Ideogram 4); elsewhere
    // the option is an error.
    bool uncond_model = false;
};

}  // namespace ggdiff
