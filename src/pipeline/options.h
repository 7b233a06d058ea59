// What a caller asks of the engine: which model to load (ModelOptions) and what
// to generate with it (GenerateOptions). Front ends fill these through the C API's option
// schema (src/api/option_schema.h), which checks every value when it is set: what arrives
// here is typed and valid, and is not parsed again.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "image/image.h"
#include "sampling/guidance.h"
#include "sampling/rng.h"
#include "sampling/samplers.h"
#include "sampling/schedules.h"
#include "sampling/step_cache.h"

namespace ggdiff {

struct ModelOptions {
    std::string model;            // -m: full checkpoint (file or diffusers folder)
    std::string diffusion_model;  // --diffusion-model
    // --high-noise-diffusion-model: Wan 2.2's high-noise expert (A14B), which samples the
    // first steps (see HighNoiseOptions).
    std::string high_noise_diffusion_model;
    // --uncond-diffusion-model: a second DiT for the unconditional pass (Ideogram 4's).
    std::string uncond_diffusion_model;
    std::string vae;  // --vae
    // --vae-format: the latent format of the VAE for families whose checkpoint does not name it
    // (PiD): "auto", "flux", "sd3" or "flux2".
    std::string vae_format = "auto";
    std::string clip_l, clip_g, t5xxl, llm;
    std::string llm_vision;  // --llm_vision: the LLM's vision tower in its own file
    // --audio-vae, --embeddings-connectors: LTX-2's audio VAE (+ vocoder) and its text
    // projections / embeddings connectors, each in its own file
    std::string audio_vae, embeddings_connectors;
    std::string clip_vision;  // --clip_vision: a CLIP vision encoder (Wan image-to-video)
    std::string taesd;        // --taesd
    // --taesd-preview-only: with --taesd, TAESD decodes the previews only; the final images
    // (and img2img encodes) use the full VAE.
    bool taesd_preview_only = false;
    std::string control_net;      // --control-net: a ControlNet for the model
    std::string photo_maker;      // --photo-maker: a PhotoMaker (v1 / v2) ID encoder for SDXL
    std::string upscale_model;    // --upscale-model: an ESRGAN run on every output image
    std::string tokenizer;        // --tokenizer: CLIP merges.txt / folder
    std::string llm_tokenizer;    // --llm-tokenizer: Qwen2 BPE vocab folder / tokenizer.json
    std::string t5xxl_tokenizer;  // --t5xxl-tokenizer: T5 tokenizer.json / folder
    int weight_type = -1;         // --type: a ggml_type, or -1 to keep the stored types
    std::string prediction;       // --prediction override (a prediction_names() value; "" = detect)
    int threads = -1;             // -1: all hardware threads
    // Placement (validated by the placement layer before any weight is read).
    std::string backend;
    std::string params_backend;
    std::string split_mode;
    std::string max_vram;
    bool auto_fit = false;
    // --stream-layers: with a --max-vram budget that cuts a module's graph, keep the leading
    // segments on the device and upload the next segment during the current one.
    bool stream_layers = false;
    bool vae_on_cpu = false, clip_on_cpu = false;
    bool offload_to_cpu = false;  // params of every module in RAM (= --params-backend cpu)
    // Kernel choices off the CPU kernels: --fa (every module), --diffusion-fa,
    // --diffusion-conv-direct, --vae-conv-direct.
    bool flash_attn = false, diffusion_flash_attn = false;
    bool diffusion_conv_direct = false, vae_conv_direct = false;
    bool control_net_cpu = false;
    // --qwen-image-zero-cond-t: Qwen Image Edit 2511's timestep-0 modulation of the reference
    // tokens, for files without the "__index_timestep_zero__" marker.
    bool qwen_image_zero_cond_t = false;  // --control-net-cpu: = --backend controlnet=CPU
    // Chroma's T5 padding: the DiT's attention mask (on unless --chroma-disable-dit-mask)
    // keeps the first --chroma-t5-mask-pad pads visible; --chroma-enable-t5-mask also masks
    // the padding inside T5.
    bool chroma_dit_mask = true;
    bool chroma_t5_mask = false;
    int chroma_t5_mask_pad = 1;
    // LoRA: the folder <lora:NAME:WEIGHT> prompt tags load NAME from, and how they are
    // applied: "auto" (merged into the weights unless quantized or row-split, then at run
    // time), "immediately" (merged) or "at_runtime".
    std::string lora_model_dir;
    std::string lora_apply_mode = "auto";
    // --hires-upscalers-dir: where --hires-upscaler NAME finds NAME.safetensors / .gguf.
    std::string hires_upscalers_dir;
    // --embd-dir: the folder of textual-inversion embeddings a prompt names (CLIP families).
    std::string embd_dir;
    // --pulid-weights: PuLID-FLUX's cross-attention modules (pulid_flux_v0.9.x.safetensors), run
    // inside the FLUX.1 DiT with --pulid-id-embedding.
    std::string pulid_weights;
    // Seamless tiling (--circular = both axes, --circularx, --circulary): the denoiser's,
    // ControlNet's and VAE's convolutions pad by wrap-around on these axes instead of zeros.
    bool circular = false, circularx = false, circulary = false;
    bool circular_x() const { return circular || circularx; }
    bool circular_y() const { return circular || circulary; }
};

// The hires fix: after the first pass each image's latent is upscaled (in latent space, or
// decoded, resized or run through an upscaler model and encoded again) and sampled once more
// as img2img at the target size (pipeline/phase_hires.h).
struct HiresOptions {
    bool enabled = false;
    std::string upscaler = "Latent";  // a hires_upscaler_names() entry or a model name
    float scale = 2.0f;
    int width = 0, height = 0;  // target; 0: by scale (one given: square)
    int steps = 0;              // 0: the first pass's
    float denoising_strength = 0.7f;
    int tile_size = 128;        // of an upscaler model, in pixels
    std::vector<float> sigmas;  // explicit schedule of the pass; empty: derived
};

struct TilingOptions {
    bool enabled = false;
    int tile_w = 32, tile_h = 32;  // latent units
    float overlap = 0.5f;
    // --temporal-tiling: a video VAE that decodes all frames in one graph (LTX-2) decodes
    // windows of temporal_frames latent frames sharing temporal_overlap (--extra-tiling-args).
    bool temporal = false;
    int temporal_frames = 4, temporal_overlap = 1;
};

// Live previews during sampling (--preview, --preview-interval, --preview-noisy): what the
// caller's PreviewFn gets.
enum class PreviewMode {
    None,
    Proj,  // the family's latent-to-RGB projection (cheap, latent-sized)
    Tae,   // decoded by TAESD (needs --taesd)
    Vae,   // decoded by the VAE that previews use (TAESD with --taesd-preview-only)
};

struct PreviewOptions {
    PreviewMode mode = PreviewMode::None;
    int interval = 1;    // every interval-th sampling step (1-based step % interval == 0)
    bool noisy = false;  // the sampler's noisy input (times c_in) instead of the denoised one
};

// The high-noise expert's sampling (--high-noise-*; Wan 2.2 A14B with
// --high-noise-diffusion-model): it runs the first `steps` steps (< 0: every step whose sigma is
// at least --moe-boundary), the model the rest; the schedule covers both (steps + this). 20 by
// default, as sd-cli (the library's own default, and its server's, is -1).
struct HighNoiseOptions {
    int steps = 20;
    float cfg_scale = NAN;                         // NAN: the family's default
    float eta = NAN;                               // NAN: the sampler's default
    std::optional<sampling::SamplerKind> sampler;  // nullopt: the family's default
    float moe_boundary = 0.875f;
    bool any_set = false;  // some --high-noise-* sampling option was given
};

struct GenerateOptions {
    std::string prompt;
    std::string negative_prompt;
    int width = 0, height = 0;  // 0: the family's default size
    int steps = 20;
    float cfg_scale = NAN;      // NAN: the family's default
    float img_cfg_scale = NAN;  // NAN: same as cfg_scale
    float guidance = 3.5f;
    // Skip-layer guidance (--slg-scale, --skip-layers, --skip-layer-start/end): off at scale
    // 0; only for families whose denoiser can skip blocks (Family::skips_layers).
    sampling::SlgParams slg;
    float eta = NAN;                                  // NAN: the sampler's default
    std::optional<sampling::SamplerKind> sampler;     // nullopt: the family's default
    std::optional<sampling::ScheduleKind> scheduler;  // nullopt: the sampler's/model's default
    std::vector<float> sigmas;        // --sigmas: explicit schedule (replaces the scheduler)
    std::optional<float> flow_shift;  // --flow-shift: flow models' shift (nullopt: model's)
    int64_t seed = 42;                // < 0: a random seed (picked by the C API)
    int batch = 1;
    std::optional<Image> init_image;
    // --end-img: a video's last frame (Wan first-last-frame models; resized to the output size).
    std::optional<Image> end_image;
    std::vector<Image> ref_images;  // -r: reference images (edit / Layered models)
    // --control-video: a video's control frames in order (Wan VACE; each resized to the output
    // size; frames past the video's are unused, missing ones mid grey).
    std::vector<Image> control_frames;
    float vace_strength = 1.0f;  // --vace-strength: scale of the VACE blocks' contribution
    // PuLID-FLUX (with --pulid-weights): the identity embedding (--pulid-id-embedding, a .pulidembd
    // GGUF of 32 tokens of 2048) and the scale of what its modules add (--pulid-id-weight).
    std::string pulid_id_embedding;
    float pulid_id_weight = 1.0f;
    // Reference images are resized to about the output's pixel count (nearest neighbour, as
    // stable-diffusion.cpp does); off (--disable-auto-resize-ref-image): used at their own
    // size, cropped to whole latent pixels.
    bool auto_resize_ref_images = true;
    // --increase-ref-index: each reference image gets its own position index (else they
    // share one, side by side). FLUX.2 always increases.
    bool increase_ref_index = false;
    float strength = 0.75f;
    // Inpainting (with init_image): white repaints, black keeps, grey is a soft weight
    // for ordinary checkpoints (inpainting models round it); resized to the output size.
    std::optional<Image> mask;
    // ControlNet condition image (resized to the output size), used with --control-net.
    std::optional<Image> control_image;
    float control_strength = 0.9f;
    bool canny = false;  // run the Canny edge detector on control_image first
    // PhotoMaker (with --photo-maker): the identity images (--pm-id-images-dir, in name
    // order), v2's InsightFace embeddings of them (--pm-id-embed-path, the reference's tensor
    // file) and the percentage of the steps sampled with the plain prompt first
    // (--pm-style-strength).
    std::vector<Image> pm_id_images;
    std::string pm_id_embed_path;
    float pm_style_strength = 20.0f;
    int clip_skip = -1;
    sampling::RngKind rng = sampling::RngKind::Cuda;
    std::optional<sampling::RngKind> sampler_rng;  // nullopt: same as rng
    TilingOptions vae_tiling;
    HiresOptions hires;
    // With --upscale-model: each output image goes through the upscaler this many times,
    // in tiles of this many input pixels per side (<= 0: the whole image at once).
    int upscale_repeats = 1;
    int upscale_tile_size = 128;
    // Step caching (--cache-mode, --scm-mask, --scm-policy as set; the rest of the
    // parameters at the reference's defaults). --cache-option is kept as text and applied
    // for the mode by plan_request, since its keys mean different parameters per mode.
    sampling::CacheParams cache;
    std::string cache_option;
    int qwen_image_layers = 3;  // Qwen Image Layered: N+1 RGBA layers per batch item
    // --video-frames: frames of a video model's result (Wan: aligned down to 4n + 1); image
    // models refuse more than 1.
    int video_frames = 1;
    int fps = 16;  // --fps: a video's frame rate (LTX-2 times its audio and positions by it)
    HighNoiseOptions high_noise;
    std::string output_model_name;  // for metadata (file base name)
    // --phase-peaks: each phase's figures get the phase's own peak resident set (the
    // process's high-water mark is reset at each phase start, so readers of the peak at exit
    // see only the last phase's); off, each gets the process's peak so far.
    bool phase_peaks = false;
    PreviewOptions preview;
};

struct AudioTrack;

struct GeneratedImage {
    Image image;
    int64_t seed = 0;
    std::string infotext;  // A1111 parameters text
    // A video model's sound track (LTX-2), on every frame of the item it goes with; null: none.
    std::shared_ptr<const AudioTrack> audio;
};

// Progress: phase name ("text", "sampling", "decode", ...), step (1-based), total,
// seconds since the phase began. Return false to cancel.
using ProgressFn = std::function<bool(const std::string& phase, int step, int total, double secs)>;

// Called with each image as soon as it is finished (so a later failure or a cancel
// loses nothing that was done).
using ImageFn = std::function<void(const GeneratedImage& image)>;

// Called with a live preview of the batch item being sampled (its seed) at step `step`
// (1-based) of `total`, as GenerateOptions::preview asks; one call at a time.
using PreviewFn = std::function<void(const Image& preview, int64_t seed, int step, int total)>;

}  // namespace ggdiff
