// What a caller asks of the engine: which model to load (ModelOptions) and what
// to generate with it (GenerateOptions). Front ends (CLI, server, C API) fill these.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "image/image.h"

namespace ggdiff {

struct ModelOptions {
    std::string model;            // -m: full checkpoint (file or diffusers folder)
    std::string diffusion_model;  // --diffusion-model
    std::string vae;              // --vae
    std::string clip_l, clip_g, t5xxl, llm;
    std::string taesd;        // --taesd
    std::string tokenizer;    // --tokenizer: CLIP merges.txt / folder
    std::string weight_type;  // --type ("" keeps the stored types)
    std::string prediction;   // --prediction override ("" = from the checkpoint)
    int threads = -1;         // -1: all hardware threads
    // Placement (validated by the placement layer before any weight is read).
    std::string backend;
    std::string params_backend;
    std::string split_mode;
    std::string max_vram;
    bool auto_fit = false;
    bool vae_on_cpu = false, clip_on_cpu = false;
};

struct TilingOptions {
    bool enabled = false;
    int tile_w = 32, tile_h = 32;  // latent units
    float overlap = 0.5f;
};

struct GenerateOptions {
    std::string prompt;
    std::string negative_prompt;
    int width = 0, height = 0;  // 0: the family's default size
    int steps = 20;
    float cfg_scale = NAN;      // NAN: the family's default
    float img_cfg_scale = NAN;  // NAN: same as cfg_scale
    float guidance = 3.5f;
    float eta = NAN;        // NAN: the sampler's default
    std::string sampler;    // "" = family default
    std::string scheduler;  // "" = the sampler's and the model's default schedule
    std::string sigmas;     // --sigmas: explicit list
    int64_t seed = 42;
    int batch = 1;
    std::optional<Image> init_image;
    float strength = 0.75f;
    int clip_skip = -1;
    std::string rng = "cuda";
    std::string sampler_rng;  // "" = same as rng
    TilingOptions vae_tiling;
    std::string output_model_name;  // for metadata (file base name)
};

struct GeneratedImage {
    Image image;
    int64_t seed = 0;
    std::string infotext;  // A1111 parameters text
};

// Progress: phase name ("text", "sampling", "decode", ...), step (1-based), total,
// seconds since the phase began. Return false to cancel.
using ProgressFn = std::function<bool(const std::string& phase, int step, int total, double secs)>;

// Called with each image as soon as it is finished (so a later failure or a cancel
// loses nothing that was done).
using ImageFn = std::function<void(const GeneratedImage& image)>;

}  // namespace ggdiff
