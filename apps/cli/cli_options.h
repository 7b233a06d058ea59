// Command-line options of the `ggdiff` binary: the sd-cli flag set (docs/CLI_FLAGS.md) plus
// ggdiff's additions, parsed with CLI11 into one plain struct.
//
// parse_cli() only parses and validates values (types, value sets, ranges, prompt files, the
// arguments a mode needs). It never opens a model or a device. check_supported() then rejects
// flags whose feature is not built yet; its table lives in cli_options.cpp (kNotSupportedYet)
// so entries can be removed one by one as features land.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace ggdiff::cli {

// -M/--mode. `info` is a ggdiff addition.
enum class Mode { img_gen, vid_gen, convert, upscale, metadata, info };

// What main() should do after parsing: run the mode, or print help_text / version_text and
// exit 0.
enum class CliAction { run, help, version };

const char* mode_name(Mode mode);

// Accepted values of the enumerated flags (sd-cli's spelling).
const std::vector<std::string>& sampler_names();      // --sampling-method, --high-noise-...
const std::vector<std::string>& scheduler_names();    // --scheduler
const std::vector<std::string>& rng_names();          // --rng, --sampler-rng
const std::vector<std::string>& weight_type_names();  // --type
const std::vector<std::string>& prediction_names();   // --prediction

struct CliOptions {
    CliAction action = CliAction::run;
    std::string help_text;     // the full --help text (always filled in)
    std::string version_text;  // "ggdiff X.Y.Z" (always filled in)

    // ---- run mode and logging
    Mode mode = Mode::img_gen;
    bool verbose = false;  // -v
    bool color = false;    // --color: colored log tags

    // ---- model files (paths are not checked here)
    std::string model;                // -m/--model: the last one given
    std::vector<std::string> models;  // every -m in order (-M info takes several)
    std::string diffusion_model;
    std::string high_noise_diffusion_model;
    std::string uncond_diffusion_model;
    std::string vae;
    std::string vae_format = "auto";
    std::string taesd;  // --taesd, alias --tae
    std::string clip_l;
    std::string clip_g;
    std::string clip_vision;
    std::string t5xxl;
    std::string llm;         // --llm, alias --qwen2vl
    std::string llm_vision;  // --llm_vision, alias --qwen2vl_vision
    std::string audio_vae;
    std::string embeddings_connectors;
    std::string tokenizer;      // ggdiff: merges.txt / vocab.json or their folder
    std::string llm_tokenizer;  // ggdiff: the LLM's vocab.json + merges.txt folder / tokenizer.json
    std::string control_net;
    std::string photo_maker;
    std::string pulid_weights;
    std::string upscale_model;
    std::string lora_model_dir;
    std::string embd_dir;
    std::string type;  // --type: weight type to convert to; "" = keep the file's types
    std::string tensor_type_rules;
    std::string lora_apply_mode = "auto";  // auto | immediately | at_runtime
    std::string prediction;                // "" = detect from the checkpoint

    // ---- devices and placement
    int threads = -1;            // -t: <= 0 means the number of physical cores
    std::string backend;         // --backend SPEC (parsed by the placement layer)
    std::string params_backend;  // --params-backend SPEC
    std::string split_mode;      // "" (= layer) | layer | row | module=layer|row,...
    std::string max_vram;        // GiB budgets, e.g. "8", "-1.5", "CUDA0=8,CUDA1=6"
    std::string rpc_servers;     // host:port,...
    bool auto_fit = false;       // --auto-fit [on|off]; bare = on
    bool fit_dry_run = false;    // ggdiff: print the auto-fit plan as JSON, load nothing
    bool list_devices = false;
    bool stream_layers = false;
    bool offload_to_cpu = false;
    bool mmap = false;
    bool eager_load = false;
    bool clip_on_cpu = false;      // = --backend te=CPU
    bool vae_on_cpu = false;       // = --backend vae=CPU
    bool control_net_cpu = false;  // = --backend controlnet=CPU
    bool fa = false;               // flash attention everywhere it is supported
    bool diffusion_fa = false;     // flash attention in the diffusion model only
    bool diffusion_conv_direct = false;
    bool vae_conv_direct = false;

    // ---- prompts (the *_file flags are already read into prompt / negative_prompt)
    std::string prompt;
    std::string negative_prompt;
    std::string prompt_file;
    std::string negative_prompt_file;

    // ---- input images
    std::string init_img;  // -i: img2img
    std::string end_img;
    std::string mask;
    std::string control_image;
    std::string control_video;
    std::vector<std::string> ref_images;  // -r, repeatable
    bool increase_ref_index = false;
    bool disable_auto_resize_ref_image = false;

    // ---- size, batch, seed
    int width = 512;
    int height = 512;
    int batch_count = 1;
    int64_t seed = 42;  // < 0: random (resolved by the caller)

    // ---- sampling
    std::string sampling_method;  // "" = the model family's default
    std::string scheduler;        // "" = discrete
    int steps = 20;
    float cfg_scale = 7.0f;
    std::optional<float> img_cfg_scale;  // unset = cfg_scale
    float guidance = 3.5f;
    std::optional<float> eta;         // unset = the sampler's default
    std::optional<float> flow_shift;  // unset = the model's default
    float strength = 0.75f;
    int clip_skip = -1;         // <= 0: the model's default
    std::vector<float> sigmas;  // --sigmas: custom schedule, overrides --scheduler
    std::string rng = "cuda";
    std::string sampler_rng;  // "" = same as --rng
    int timestep_shift = 0;
    std::string extra_sample_args;

    // ---- skip layer guidance (DiT models)
    float slg_scale = 0.0f;
    float skip_layer_start = 0.01f;
    float skip_layer_end = 0.2f;
    std::vector<int> skip_layers = {7, 8, 9};

    // ---- second (high-noise) expert, Wan 2.2
    std::string high_noise_sampling_method;
    int high_noise_steps = -1;  // -1 = auto (split at --moe-boundary)
    float high_noise_cfg_scale = 7.0f;
    std::optional<float> high_noise_img_cfg_scale;
    float high_noise_guidance = 3.5f;
    std::optional<float> high_noise_eta;
    float high_noise_slg_scale = 0.0f;
    float high_noise_skip_layer_start = 0.01f;
    float high_noise_skip_layer_end = 0.2f;
    std::vector<int> high_noise_skip_layers = {7, 8, 9};
    float moe_boundary = 0.875f;

    // ---- VAE
    bool vae_tiling = false;
    int vae_tile_size_x = 32;  // latent units (32 = 256 px for an 8x VAE)
    int vae_tile_size_y = 32;
    float vae_tile_overlap = 0.5f;          // fraction of the tile
    float vae_relative_tile_size_x = 0.0f;  // 0 = use vae_tile_size
    float vae_relative_tile_size_y = 0.0f;
    bool temporal_tiling = false;
    std::string extra_tiling_args;
    bool force_sdxl_vae_conv_scale = false;

    // ---- video
    int video_frames = 1;
    int fps = 16;
    float vace_strength = 1.0f;

    // ---- control net, PhotoMaker, PuLID
    float control_strength = 0.9f;
    bool canny = false;
    std::string pm_id_images_dir;
    std::string pm_id_embed_path;
    float pm_style_strength = 20.0f;
    std::string pulid_id_embedding;
    float pulid_id_weight = 1.0f;

    // ---- hires fix
    bool hires = false;
    std::string hires_upscaler = "Latent";
    std::string hires_upscalers_dir;
    float hires_scale = 2.0f;
    int hires_width = 0;   // 0 = width * hires_scale
    int hires_height = 0;  // 0 = height * hires_scale
    int hires_steps = 0;   // 0 = steps
    float hires_denoising_strength = 0.7f;
    int hires_upscale_tile_size = 128;
    std::vector<float> hires_sigmas;

    // ---- ESRGAN upscaling
    int upscale_repeats = 1;
    int upscale_tile_size = 128;

    // ---- step caching
    std::string cache_mode;  // "" = off
    std::string cache_option;
    std::string scm_mask;
    std::string scm_policy = "dynamic";

    // ---- family-specific switches
    bool chroma_disable_dit_mask = false;
    bool chroma_enable_t5_mask = false;
    int chroma_t5_mask_pad = 1;
    bool qwen_image_zero_cond_t = false;
    int qwen_image_layers = 3;
    bool circular = false;
    bool circularx = false;
    bool circulary = false;

    // ---- preview
    std::string preview = "none";  // none | proj | tae | vae
    std::string preview_path = "preview.png";
    int preview_interval = 1;
    bool preview_noisy = false;
    bool taesd_preview_only = false;

    // ---- output
    std::string output = "output.png";  // -M convert: "output.gguf" unless given
    int output_begin_idx = -1;          // -1 = sd-cli's automatic choice
    bool disable_image_metadata = false;

    // ---- convert / imatrix
    bool convert_name = false;
    std::string imat_out;
    std::vector<std::string> imat_in;

    // ---- -M metadata
    std::string image;
    std::string metadata_format = "text";  // text | json
    bool metadata_raw = false;
    bool metadata_brief = false;
    bool metadata_all = false;

    // Every flag present on the command line, by its main long name ("--mode" also for -M,
    // "--taesd" also for --tae), with the last raw value given ("" for a bare flag).
    std::map<std::string, std::string> given;
    bool was_given(const std::string& long_flag) const { return given.count(long_flag) != 0; }
};

// Parses argv (argv[0] is the program name). Errors name the offending flag and value.
// -h/--help and --version succeed with action help / version and nothing else validated.
Result<CliOptions> parse_cli(int argc, const char* const* argv);

// A flag (optionally only with one value) whose feature is not built yet.
struct UnsupportedFlag {
    const char* flag;   // main long name, e.g. "--control-net"
    const char* value;  // nullptr: any use; otherwise only this value ("--mode", "vid_gen")
};
const std::vector<UnsupportedFlag>& unsupported_flags();

// Error "--control-net is not supported yet" (one clause per such flag used, joined by "; "),
// or ok when every flag used is implemented.
Status check_supported(const CliOptions& options);

}  // namespace ggdiff::cli
