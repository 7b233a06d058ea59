// Parsing of the ggdiff command line with CLI11; see cli_options.h.
#include "cli_options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef GGDIFF_VERSION
#define GGDIFF_VERSION "0.1.0"
#endif

namespace ggdiff::cli {

namespace {

// ---------------------------------------------------------------------------------------------
// Features that parse but are not built yet. Remove an entry when its feature lands.
// `value`: nullptr = any use of the flag; "x" = only that value; "!x" = any value but x.
const std::vector<UnsupportedFlag> kNotSupportedYet = {
    // run modes
    {"--mode", "vid_gen"},
    {"--mode", "upscale"},
    // control net
    {"--control-net", nullptr},
    {"--control-image", nullptr},
    {"--control-strength", nullptr},
    {"--control-video", nullptr},
    {"--canny", nullptr},
    // PhotoMaker and PuLID
    {"--photo-maker", nullptr},
    {"--pm-id-images-dir", nullptr},
    {"--pm-id-embed-path", nullptr},
    {"--pm-style-strength", nullptr},
    {"--pulid-weights", nullptr},
    {"--pulid-id-embedding", nullptr},
    {"--pulid-id-weight", nullptr},
    // hires fix
    {"--hires", nullptr},
    {"--hires-upscaler", nullptr},
    {"--hires-upscalers-dir", nullptr},
    {"--hires-scale", nullptr},
    {"--hires-width", nullptr},
    {"--hires-height", nullptr},
    {"--hires-steps", nullptr},
    {"--hires-denoising-strength", nullptr},
    {"--hires-upscale-tile-size", nullptr},
    {"--hires-sigmas", nullptr},
    // ESRGAN upscaling
    {"--upscale-model", nullptr},
    {"--upscale-repeats", nullptr},
    {"--upscale-tile-size", nullptr},
    // embeddings
    {"--embd-dir", nullptr},
    // step caching
    {"--cache-mode", nullptr},
    {"--cache-option", nullptr},
    {"--scm-mask", nullptr},
    {"--scm-policy", nullptr},
    // previews
    {"--preview", "!none"},
    {"--preview-path", nullptr},
    {"--preview-interval", nullptr},
    {"--preview-noisy", nullptr},
    {"--taesd-preview-only", nullptr},
    // inpainting and reference images
    {"--mask", nullptr},
    {"--ref-image", nullptr},
    {"--increase-ref-index", nullptr},
    {"--disable-auto-resize-ref-image", nullptr},
    // video, audio, Wan 2.2 high-noise expert
    {"--end-img", nullptr},
    {"--video-frames", nullptr},
    {"--fps", nullptr},
    {"--vace-strength", nullptr},
    {"--temporal-tiling", nullptr},
    {"--extra-tiling-args", nullptr},
    {"--audio-vae", nullptr},
    {"--embeddings-connectors", nullptr},
    {"--high-noise-diffusion-model", nullptr},
    {"--high-noise-sampling-method", nullptr},
    {"--high-noise-steps", nullptr},
    {"--high-noise-cfg-scale", nullptr},
    {"--high-noise-img-cfg-scale", nullptr},
    {"--high-noise-guidance", nullptr},
    {"--high-noise-eta", nullptr},
    {"--high-noise-slg-scale", nullptr},
    {"--high-noise-skip-layer-start", nullptr},
    {"--high-noise-skip-layer-end", nullptr},
    {"--high-noise-skip-layers", nullptr},
    {"--moe-boundary", nullptr},
    {"--uncond-diffusion-model", nullptr},
    // skip layer guidance
    {"--slg-scale", nullptr},
    {"--skip-layers", nullptr},
    {"--skip-layer-start", nullptr},
    {"--skip-layer-end", nullptr},
    // family-specific switches and encoders
    {"--circular", nullptr},
    {"--circularx", nullptr},
    {"--circulary", nullptr},
    {"--chroma-disable-dit-mask", nullptr},
    {"--chroma-enable-t5-mask", nullptr},
    {"--chroma-t5-mask-pad", nullptr},
    {"--qwen-image-zero-cond-t", nullptr},
    {"--qwen-image-layers", nullptr},
    {"--clip_vision", nullptr},
    {"--llm_vision", nullptr},
    {"--force-sdxl-vae-conv-scale", nullptr},
    {"--timestep-shift", nullptr},
    {"--scheduler", "kl_optimal"},
    {"--scheduler", "bong_tangent"},
    {"--extra-sample-args", nullptr},
    // weights and conversion
    {"--tensor-type-rules", nullptr},
    {"--imat-in", nullptr},
    {"--imat-out", nullptr},
    {"--convert-name", nullptr},
    {"--vae-format", "!auto"},
    // placement and VAE
    {"--stream-layers", nullptr},
    {"--vae-relative-tile-size", nullptr},
};

// In the order of enum class Mode.
const std::vector<std::string> kModes = {"img_gen", "vid_gen",  "convert",
                                         "upscale", "metadata", "info"};
const std::vector<std::string> kLoraApplyModes = {"auto", "immediately", "at_runtime"};
const std::vector<std::string> kPreviews = {"none", "proj", "tae", "vae"};
const std::vector<std::string> kCacheModes = {"easycache",  "ucache",    "dbcache",
                                              "taylorseer", "cache-dit", "spectrum"};
const std::vector<std::string> kScmPolicies = {"dynamic", "static"};
const std::vector<std::string> kMetadataFormats = {"text", "json"};
const std::vector<std::string> kSplitModes = {"layer", "row"};

std::string join(const std::vector<std::string>& items, const char* sep) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += sep;
        out += items[i];
    }
    return out;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trim(const std::string& s) {
    const char* ws = " \t\r\n";
    size_t b = s.find_first_not_of(ws);
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// "one of a, b, c" for help texts.
std::string one_of_text(const std::vector<std::string>& names) {
    return "one of " + join(names, ", ");
}

// Exact match against a value set; `fold_case` also accepts other spellings and stores the
// canonical one (q4_k -> q4_K).
CLI::Validator value_set(const std::vector<std::string>* names, bool fold_case = false) {
    return CLI::Validator(
        [names, fold_case](std::string& value) -> std::string {
            for (const std::string& name : *names) {
                if (value == name || (fold_case && lower(value) == lower(name))) {
                    value = name;
                    return "";
                }
            }
            return "unknown value '" + value + "' (valid: " + join(*names, ", ") + ")";
        },
        "");
}

CLI::Validator split_mode_validator() {
    return CLI::Validator(
        [](std::string& value) -> std::string {
            std::stringstream ss(value);
            std::string token;
            bool any = false;
            while (std::getline(ss, token, ',')) {
                token = trim(token);
                if (token.empty()) continue;
                any = true;
                size_t eq = token.find('=');
                std::string mode =
                    lower(trim(eq == std::string::npos ? token : token.substr(eq + 1)));
                if (eq != std::string::npos && trim(token.substr(0, eq)).empty()) {
                    return "missing module name in '" + token + "'";
                }
                if (std::find(kSplitModes.begin(), kSplitModes.end(), mode) == kSplitModes.end()) {
                    return "unknown split mode '" + mode + "' in '" + token +
                           "' (valid: layer, row, or MODULE=layer|row,...)";
                }
            }
            if (!any) return "empty split mode";
            return "";
        },
        "");
}

// Numbers inside list and size values; false on trailing garbage or overflow.
bool to_float(const std::string& text, float& out) {
    std::string t = trim(text);
    if (t.empty()) return false;
    char* end = nullptr;
    errno = 0;
    float v = std::strtof(t.c_str(), &end);
    if (errno != 0 || end != t.c_str() + t.size() || !std::isfinite(v)) return false;
    out = v;
    return true;
}

bool to_int(const std::string& text, int& out) {
    std::string t = trim(text);
    if (t.empty()) return false;
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(t.c_str(), &end, 10);
    if (errno != 0 || end != t.c_str() + t.size() || v < INT32_MIN || v > INT32_MAX) return false;
    out = static_cast<int>(v);
    return true;
}

// "a,b,c" or "[a, b, c]".
std::vector<std::string> split_list(std::string text) {
    text = trim(text);
    if (!text.empty() && text.front() == '[') text.erase(0, 1);
    if (!text.empty() && text.back() == ']') text.pop_back();
    std::vector<std::string> items;
    std::string item;
    std::stringstream ss(text);
    while (std::getline(ss, item, ',')) {
        if (!trim(item).empty()) items.push_back(trim(item));
    }
    return items;
}

[[noreturn]] void bad_value(const std::string& flag, const std::string& value,
                            const std::string& why) {
    throw CLI::ValidationError(flag, "invalid value '" + value + "': " + why);
}

std::vector<float> parse_float_list(const std::string& flag, const std::string& value) {
    std::vector<float> out;
    for (const std::string& item : split_list(value)) {
        float v = 0;
        if (!to_float(item, v)) bad_value(flag, value, "'" + item + "' is not a number");
        out.push_back(v);
    }
    if (out.empty()) bad_value(flag, value, "expected comma-separated numbers");
    return out;
}

std::vector<int> parse_int_list(const std::string& flag, const std::string& value) {
    std::vector<int> out;
    for (const std::string& item : split_list(value)) {
        int v = 0;
        if (!to_int(item, v)) bad_value(flag, value, "'" + item + "' is not an integer");
        out.push_back(v);
    }
    return out;
}

// "X" or "XxY".
template <class T, class Conv>
void parse_pair(const std::string& flag, const std::string& value, T& x, T& y, Conv conv) {
    size_t pos = value.find('x');
    std::string a = pos == std::string::npos ? value : value.substr(0, pos);
    std::string b = pos == std::string::npos ? value : value.substr(pos + 1);
    T vx{}, vy{};
    if (!conv(a, vx) || !conv(b, vy)) bad_value(flag, value, "expected N or NxM");
    if (!(vx > 0) || !(vy > 0)) bad_value(flag, value, "sizes must be > 0");
    x = vx;
    y = vy;
}

bool parse_on_off(const std::string& value, bool& out) {
    std::string v = lower(trim(value));
    if (v.empty() || v == "on" || v == "true" || v == "1" || v == "yes") {
        out = true;
    } else if (v == "off" || v == "false" || v == "0" || v == "no") {
        out = false;
    } else {
        return false;
    }
    return true;
}

// CLI11's formatter with option descriptions word-wrapped to a readable width.
class WrappingFormatter : public CLI::Formatter {
  public:
    std::string make_option_desc(const CLI::Option* opt) const override {
        const std::string& text = opt->get_description();
        std::string out;
        size_t line = 0;
        std::istringstream words(text);
        std::string word;
        while (words >> word) {
            if (line > 0 && line + 1 + word.size() > kWidth) {
                out += '\n';
                line = 0;
            } else if (line > 0) {
                out += ' ';
                ++line;
            }
            out += word;
            line += word.size();
        }
        return out;
    }

  private:
    static constexpr size_t kWidth = 66;
};

// Declares every flag on `app`, bound to `o`.
void add_options(CLI::App& app, CliOptions& o) {
    app.option_defaults()
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
        ->always_capture_default();
    // A file or folder name, shown as PATH in the help.
    auto path = [&app](const std::string& names, std::string& var, const std::string& help) {
        return app.add_option(names, var, help)->type_name("PATH");
    };

    // ------------------------------------------------------------------ general
    app.option_defaults()->group("General");
    app.add_option_function<std::string>(
           "-M,--mode",
           [&o](const std::string& v) {
               o.mode =
                   static_cast<Mode>(std::find(kModes.begin(), kModes.end(), v) - kModes.begin());
           },
           "Run mode: img_gen (text/image to image), vid_gen, convert (write GGUF), upscale, "
           "metadata (print an image's generation settings), info (summarize model files)")
        ->check(value_set(&kModes))
        ->default_str("img_gen");
    app.add_flag("-v,--verbose", o.verbose, "Print details and per-phase timings");
    app.add_flag("--color", o.color, "Color the log level tags");
    app.add_option("-t,--threads", o.threads,
                   "CPU threads for computation; <= 0 uses the number of physical cores");

    // ------------------------------------------------------------------ model files
    app.option_defaults()->group("Model files");
    app.add_option_function<std::string>(
           "-m,--model", [&o](const std::string& v) { o.model = v; },
           "Checkpoint with all components (.safetensors, .gguf); repeat for -M info")
        ->type_name("PATH");
    path("--diffusion-model", o.diffusion_model,
         "Stand-alone diffusion model (UNet / DiT) weights");
    path("--high-noise-diffusion-model", o.high_noise_diffusion_model,
         "Stand-alone high-noise expert (Wan 2.2)");
    path("--uncond-diffusion-model", o.uncond_diffusion_model,
         "Separate diffusion model for the unconditional pass");
    path("--vae", o.vae, "Stand-alone VAE weights (replace the checkpoint's)");
    app.add_option("--vae-format", o.vae_format, "Layout of the --vae file");
    path("--taesd,--tae", o.taesd, "Tiny AutoEncoder for fast, lower quality decoding");
    path("--clip_l", o.clip_l, "CLIP ViT-L text encoder");
    path("--clip_g", o.clip_g, "OpenCLIP ViT-bigG text encoder");
    path("--clip_vision", o.clip_vision, "CLIP vision encoder");
    path("--t5xxl", o.t5xxl, "T5-XXL text encoder");
    path("--llm,--qwen2vl", o.llm,
         "LLM text encoder (Qwen2.5-VL for Qwen Image, Mistral for FLUX.2, ...)");
    path("--llm_vision,--qwen2vl_vision", o.llm_vision, "Vision tower of the LLM text encoder");
    path("--audio-vae", o.audio_vae, "Audio VAE (audio-video models)");
    path("--embeddings-connectors", o.embeddings_connectors,
         "Text embeddings connector weights (LTX)");
    path("--tokenizer", o.tokenizer,
         "Tokenizer files (merges.txt / vocab.json, or their folder) when the "
         "checkpoint has none");
    path("--control-net", o.control_net, "ControlNet model");
    path("--photo-maker", o.photo_maker, "PhotoMaker model");
    path("--pulid-weights", o.pulid_weights, "PuLID model");
    path("--upscale-model", o.upscale_model, "ESRGAN upscaler model");
    path("--lora-model-dir", o.lora_model_dir,
         "Folder searched for <lora:NAME:WEIGHT> prompt tags");
    path("--embd-dir", o.embd_dir, "Folder of textual inversion embeddings");
    app.add_option("--type", o.type,
                   "Convert weights on load to this type (" + one_of_text(weight_type_names()) +
                       "); default: keep the file's types")
        ->transform(value_set(&weight_type_names(), true));
    app.add_option("--tensor-type-rules", o.tensor_type_rules,
                   "Weight type per tensor name pattern, e.g. \"^vae\\.=f16,model\\.=q8_0\"");
    app.add_option("--lora-apply-mode", o.lora_apply_mode,
                   "How LoRAs are applied: " + one_of_text(kLoraApplyModes))
        ->check(value_set(&kLoraApplyModes));
    app.add_option("--prediction", o.prediction,
                   "Override the detected prediction type: " + one_of_text(prediction_names()))
        ->check(value_set(&prediction_names()));

    // ------------------------------------------------------------------ devices
    app.option_defaults()->group("Devices and placement");
    app.add_flag("--list-devices", o.list_devices,
                 "Print one 'name<TAB>description' line per device and exit");
    app.add_option("--backend", o.backend,
                   "Compute device: DEVICE, or MODULE=DEVICE,... (modules diffusion, te, vae, "
                   "...; all= sets the default); DEV1&DEV2 splits a module across devices")
        ->type_name("SPEC");
    app.add_option("--params-backend", o.params_backend,
                   "Where weights live when not on their compute device: DEVICE, cpu or disk, "
                   "or MODULE=...,...")
        ->type_name("SPEC");
    app.add_option("--split-mode", o.split_mode,
                   "How a module is split across devices: layer or row, or MODULE=layer|row,...")
        ->check(split_mode_validator())
        ->type_name("SPEC");
    app.add_option("--max-vram", o.max_vram,
                   "GiB budget per GPU for --auto-fit: N caps it, -N leaves N free; one value "
                   "or DEVICE=N,...")
        ->type_name("SPEC");
    app.add_option_function<std::string>(
           "--auto-fit",
           [&o](const std::string& v) {
               if (!parse_on_off(v, o.auto_fit)) bad_value("--auto-fit", v, "expected on or off");
           },
           "Place the model's components on the devices automatically: on or off "
           "(default off; the bare flag means on)")
        ->expected(0, 1)
        ->always_capture_default(false)
        ->type_name("[on|off]");
    app.add_flag("--fit-dry-run", o.fit_dry_run,
                 "Print the --auto-fit plan as JSON and exit without loading weights");
    app.add_option("--rpc-servers", o.rpc_servers,
                   "Remote ggml RPC servers host:port,... (devices RPC0, RPC1, ...)")
        ->type_name("HOST:PORT,...");
    app.add_flag("--stream-layers", o.stream_layers,
                 "Stream diffusion weights to the device layer by layer");
    app.add_flag("--offload-to-cpu", o.offload_to_cpu,
                 "Keep weights in RAM and move them to the device when needed");
    app.add_flag("--mmap", o.mmap, "Memory-map model files (ggdiff always does)");
    app.add_flag("--eager-load", o.eager_load, "Load every weight before the first phase");
    app.add_flag("--clip-on-cpu", o.clip_on_cpu, "Run the text encoders on the CPU");
    app.add_flag("--vae-on-cpu", o.vae_on_cpu, "Run the VAE on the CPU");
    app.add_flag("--control-net-cpu", o.control_net_cpu, "Run the ControlNet on the CPU");
    app.add_flag("--fa", o.fa, "Use flash attention wherever the device supports it");
    app.add_flag("--diffusion-fa", o.diffusion_fa, "Use flash attention in the diffusion model");
    app.add_flag("--diffusion-conv-direct", o.diffusion_conv_direct,
                 "Use direct 2-D convolution kernels in the diffusion model");
    app.add_flag("--vae-conv-direct", o.vae_conv_direct,
                 "Use direct 2-D convolution kernels in the VAE");

    // ------------------------------------------------------------------ generation
    app.option_defaults()->group("Generation");
    app.add_option("-p,--prompt", o.prompt, "Prompt");
    app.add_option("-n,--negative-prompt", o.negative_prompt, "Negative prompt");
    path("--prompt-file", o.prompt_file, "Read the prompt from this file");
    path("--negative-prompt-file", o.negative_prompt_file,
         "Read the negative prompt from this file");
    path("-i,--init-img", o.init_img, "Initial image for img2img");
    path("--end-img", o.end_img, "Last frame (first-last-frame video)");
    path("--mask", o.mask, "Inpainting mask image");
    path("--control-image", o.control_image, "ControlNet condition image");
    path("--control-video", o.control_video, "Folder of ControlNet frames, read in name order");
    app.add_option("-r,--ref-image", o.ref_images, "Reference image (repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->type_name("PATH")
        ->default_str("");
    app.add_flag("--increase-ref-index", o.increase_ref_index,
                 "Give reference images increasing indices in listing order");
    app.add_flag("--disable-auto-resize-ref-image", o.disable_auto_resize_ref_image,
                 "Use reference images at their own size");
    app.add_option("-W,--width", o.width, "Image width in pixels");
    app.add_option("-H,--height", o.height, "Image height in pixels");
    app.add_option("-b,--batch-count", o.batch_count, "Number of images; image i uses seed + i");
    app.add_option("-s,--seed", o.seed, "RNG seed; < 0 picks a random one");
    app.add_option("--sampling-method", o.sampling_method,
                   "Sampler: " + one_of_text(sampler_names()) +
                       " (default: euler_a for SD1/SD2/SDXL, euler for flow models)")
        ->check(value_set(&sampler_names()))
        ->default_str("auto");
    app.add_option("--scheduler", o.scheduler, "Sigma schedule: " + one_of_text(scheduler_names()))
        ->check(value_set(&scheduler_names()))
        ->default_str("discrete");
    app.add_option_function<std::string>(
           "--sigmas", [&o](const std::string& v) { o.sigmas = parse_float_list("--sigmas", v); },
           "Custom sigmas, comma separated (e.g. \"14.61,7.8,3.5,0\"); replaces the schedule")
        ->default_str("");
    app.add_option("--steps", o.steps, "Number of sampling steps");
    app.add_option("--cfg-scale", o.cfg_scale, "Classifier-free guidance scale");
    app.add_option_function<float>(
           "--img-cfg-scale", [&o](const float& v) { o.img_cfg_scale = v; },
           "Image guidance scale of inpainting / instruct models (default: --cfg-scale)")
        ->default_str("auto");
    app.add_option("--guidance", o.guidance,
                   "Distilled guidance for models with a guidance input (FLUX)");
    app.add_option_function<float>(
           "--eta", [&o](const float& v) { o.eta = v; },
           "Noise multiplier of stochastic samplers (default: 1 for euler_a, dpm++2s_a, "
           "dpm++2m_sde, er_sde, euler_a_cfg_pp; 0 for ddim_trailing, tcd, res_multistep, "
           "res_2s)")
        ->default_str("auto");
    app.add_option_function<float>(
           "--flow-shift", [&o](const float& v) { o.flow_shift = v; },
           "Timestep shift of flow models (SD3, FLUX, Wan)")
        ->default_str("auto");
    app.add_option("--strength", o.strength,
                   "img2img denoising strength: 0 keeps the image, 1 replaces it");
    app.add_option("--clip-skip", o.clip_skip,
                   "Skip the last CLIP layers: 1 none, 2 one; <= 0 uses the model's default");
    app.add_option("--rng", o.rng,
                   "Noise generator: cuda (A1111/Forge noise), cpu (ComfyUI), std_default")
        ->check(value_set(&rng_names()));
    app.add_option("--sampler-rng", o.sampler_rng,
                   "Noise generator inside the sampler; default: same as --rng")
        ->check(value_set(&rng_names()));
    app.add_option("--timestep-shift", o.timestep_shift,
                   "Timestep shift for NitroFusion models (e.g. 250 or 500)");
    app.add_option("--extra-sample-args", o.extra_sample_args,
                   "Extra sampler parameters, key=value,...");
    app.add_option("--slg-scale", o.slg_scale,
                   "Skip layer guidance scale for DiT models; 0 disables");
    app.add_option("--skip-layer-start", o.skip_layer_start,
                   "Skip layer guidance start, as a fraction of the steps");
    app.add_option("--skip-layer-end", o.skip_layer_end,
                   "Skip layer guidance end, as a fraction of the steps");
    app.add_option_function<std::string>(
           "--skip-layers",
           [&o](const std::string& v) { o.skip_layers = parse_int_list("--skip-layers", v); },
           "Layers skipped by skip layer guidance, e.g. [7,8,9]")
        ->default_str("[7,8,9]");

    // ------------------------------------------------------------------ high-noise expert
    app.option_defaults()->group("High-noise expert (Wan 2.2)");
    app.add_option("--high-noise-sampling-method", o.high_noise_sampling_method,
                   "Sampler of the high-noise expert")
        ->check(value_set(&sampler_names()))
        ->default_str("auto");
    app.add_option("--high-noise-steps", o.high_noise_steps,
                   "Steps of the high-noise expert; -1 splits at --moe-boundary");
    app.add_option("--high-noise-cfg-scale", o.high_noise_cfg_scale, "High-noise CFG scale");
    app.add_option_function<float>(
           "--high-noise-img-cfg-scale", [&o](const float& v) { o.high_noise_img_cfg_scale = v; },
           "High-noise image guidance scale (default: --high-noise-cfg-scale)")
        ->default_str("auto");
    app.add_option("--high-noise-guidance", o.high_noise_guidance, "High-noise distilled guidance");
    app.add_option_function<float>(
           "--high-noise-eta", [&o](const float& v) { o.high_noise_eta = v; },
           "High-noise sampler noise multiplier")
        ->default_str("auto");
    app.add_option("--high-noise-slg-scale", o.high_noise_slg_scale,
                   "High-noise skip layer guidance scale");
    app.add_option("--high-noise-skip-layer-start", o.high_noise_skip_layer_start,
                   "High-noise skip layer guidance start");
    app.add_option("--high-noise-skip-layer-end", o.high_noise_skip_layer_end,
                   "High-noise skip layer guidance end");
    app.add_option_function<std::string>(
           "--high-noise-skip-layers",
           [&o](const std::string& v) {
               o.high_noise_skip_layers = parse_int_list("--high-noise-skip-layers", v);
           },
           "High-noise skip layer guidance layers")
        ->default_str("[7,8,9]");
    app.add_option("--moe-boundary", o.moe_boundary,
                   "Timestep fraction where the low-noise expert takes over");

    // ------------------------------------------------------------------ VAE
    app.option_defaults()->group("VAE");
    app.add_flag("--vae-tiling", o.vae_tiling, "Decode / encode in tiles to save memory");
    app.add_option_function<std::string>(
           "--vae-tile-size",
           [&o](const std::string& v) {
               parse_pair<int>("--vae-tile-size", v, o.vae_tile_size_x, o.vae_tile_size_y, to_int);
           },
           "Tile size in latent pixels, N or XxY")
        ->default_str("32x32");
    app.add_option_function<std::string>(
           "--vae-relative-tile-size",
           [&o](const std::string& v) {
               parse_pair<float>("--vae-relative-tile-size", v, o.vae_relative_tile_size_x,
                                 o.vae_relative_tile_size_y, to_float);
           },
           "Tile size relative to the image, XxY: < 1 a fraction, >= 1 tiles per side "
           "(overrides --vae-tile-size)")
        ->default_str("");
    app.add_option("--vae-tile-overlap", o.vae_tile_overlap,
                   "Tile overlap as a fraction of the tile");
    app.add_flag("--temporal-tiling", o.temporal_tiling, "Tile video VAE work over time");
    app.add_option("--extra-tiling-args", o.extra_tiling_args,
                   "Extra tiling parameters, key=value,...");
    app.add_flag("--force-sdxl-vae-conv-scale", o.force_sdxl_vae_conv_scale,
                 "Apply the conv scale of the SDXL VAE");

    // ------------------------------------------------------------------ video
    app.option_defaults()->group("Video");
    app.add_option("--video-frames", o.video_frames, "Number of video frames");
    app.add_option("--fps", o.fps, "Frames per second of the video");
    app.add_option("--vace-strength", o.vace_strength, "Wan VACE strength");

    // ------------------------------------------------------------------ control / identity
    app.option_defaults()->group("ControlNet, PhotoMaker, PuLID");
    app.add_option("--control-strength", o.control_strength, "ControlNet strength");
    app.add_flag("--canny", o.canny, "Run a Canny edge detector on the control image");
    path("--pm-id-images-dir", o.pm_id_images_dir, "PhotoMaker identity images");
    path("--pm-id-embed-path", o.pm_id_embed_path, "PhotoMaker v2 identity embedding");
    app.add_option("--pm-style-strength", o.pm_style_strength, "PhotoMaker style strength");
    path("--pulid-id-embedding", o.pulid_id_embedding, "PuLID identity embedding");
    app.add_option("--pulid-id-weight", o.pulid_id_weight, "PuLID identity weight");

    // ------------------------------------------------------------------ hires fix
    app.option_defaults()->group("Hires fix");
    app.add_flag("--hires", o.hires, "Run a second, upscaled pass (hires fix)");
    app.add_option("--hires-upscaler", o.hires_upscaler,
                   "Upscaler: Latent or a model file name in --hires-upscalers-dir");
    path("--hires-upscalers-dir", o.hires_upscalers_dir, "Folder of upscaler models");
    app.add_option("--hires-scale", o.hires_scale, "Upscale factor");
    app.add_option("--hires-width", o.hires_width, "Target width; 0 uses --hires-scale");
    app.add_option("--hires-height", o.hires_height, "Target height; 0 uses --hires-scale");
    app.add_option("--hires-steps", o.hires_steps, "Steps of the second pass; 0 = --steps");
    app.add_option("--hires-denoising-strength", o.hires_denoising_strength,
                   "Denoising strength of the second pass");
    app.add_option("--hires-upscale-tile-size", o.hires_upscale_tile_size,
                   "Tile size of model upscalers");
    app.add_option_function<std::string>(
           "--hires-sigmas",
           [&o](const std::string& v) { o.hires_sigmas = parse_float_list("--hires-sigmas", v); },
           "Custom sigmas of the second pass, comma separated")
        ->default_str("");

    // ------------------------------------------------------------------ upscale
    app.option_defaults()->group("Upscaling");
    app.add_option("--upscale-repeats", o.upscale_repeats, "Run the upscaler this many times");
    app.add_option("--upscale-tile-size", o.upscale_tile_size, "Upscaler tile size");

    // ------------------------------------------------------------------ caching
    app.option_defaults()->group("Step caching");
    app.add_option("--cache-mode", o.cache_mode, "Caching method: " + one_of_text(kCacheModes))
        ->check(value_set(&kCacheModes))
        ->default_str("off");
    app.add_option("--cache-option", o.cache_option, "Cache parameters, key=value,...");
    app.add_option("--scm-mask", o.scm_mask,
                   "Steps mask for cache-dit, comma separated 0/1 (1 = compute)");
    app.add_option("--scm-policy", o.scm_policy, "SCM policy: dynamic or static")
        ->check(value_set(&kScmPolicies));

    // ------------------------------------------------------------------ family switches
    app.option_defaults()->group("Model family switches");
    app.add_flag("--chroma-disable-dit-mask", o.chroma_disable_dit_mask,
                 "Chroma: no attention mask in the DiT");
    app.add_flag("--chroma-enable-t5-mask", o.chroma_enable_t5_mask, "Chroma: mask T5 padding");
    app.add_option("--chroma-t5-mask-pad", o.chroma_t5_mask_pad,
                   "Chroma: T5 padding tokens kept unmasked");
    app.add_flag("--qwen-image-zero-cond-t", o.qwen_image_zero_cond_t,
                 "Qwen Image: zero conditioning timestep");
    app.add_option("--qwen-image-layers", o.qwen_image_layers,
                   "Qwen Image Layered: number of layers (N+1 RGBA images per item)");
    app.add_flag("--circular", o.circular, "Seamless tiling in both directions");
    app.add_flag("--circularx", o.circularx, "Seamless tiling horizontally");
    app.add_flag("--circulary", o.circulary, "Seamless tiling vertically");

    // ------------------------------------------------------------------ preview
    app.option_defaults()->group("Preview");
    app.add_option("--preview", o.preview, "Preview method: " + one_of_text(kPreviews))
        ->check(value_set(&kPreviews));
    path("--preview-path", o.preview_path, "Preview image file");
    app.add_option("--preview-interval", o.preview_interval, "Steps between preview updates");
    app.add_flag("--preview-noisy", o.preview_noisy,
                 "Preview the noisy latent instead of the denoised one");
    app.add_flag("--taesd-preview-only", o.taesd_preview_only,
                 "Use TAESD for previews only, not for the final image");

    // ------------------------------------------------------------------ output
    app.option_defaults()->group("Output");
    path("-o,--output", o.output,
         "Output file; printf-style %d gives numbered files (GGUF for -M convert, "
         "default output.gguf there)");
    app.add_option("--output-begin-idx", o.output_begin_idx,
                   "First index of numbered outputs; -1 = 0 with %d in the name, else 1");
    app.add_flag("--disable-image-metadata", o.disable_image_metadata,
                 "Do not write the generation settings into image files");

    // ------------------------------------------------------------------ convert
    app.option_defaults()->group("Convert (-M convert)");
    app.add_flag("--convert-name", o.convert_name, "Rename tensors to sd-cli's names");
    app.add_option("--imat-in", o.imat_in, "Importance matrix file to load (repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->type_name("PATH")
        ->default_str("");
    path("--imat-out", o.imat_out, "Collect an importance matrix and write it here");

    // ------------------------------------------------------------------ metadata
    app.option_defaults()->group("Metadata (-M metadata)");
    path("--image", o.image, "Image whose metadata is printed");
    app.add_option("--metadata-format", o.metadata_format,
                   "Output format: " + one_of_text(kMetadataFormats))
        ->check(value_set(&kMetadataFormats));
    app.add_flag("--metadata-raw", o.metadata_raw, "Add hex dumps of unparsed payloads");
    app.add_flag("--metadata-brief", o.metadata_brief, "Truncate long text values");
    app.add_flag("--metadata-all", o.metadata_all,
                 "Also list structural entries (IHDR, IDAT, other JPEG segments)");
}

// Fills o.given from the parsed options.
void record_given(const CLI::App& app, CliOptions& o) {
    for (const CLI::Option* opt : app.get_options()) {
        if (opt->count() == 0) continue;
        std::string name = !opt->get_lnames().empty()   ? "--" + opt->get_lnames().front()
                           : !opt->get_snames().empty() ? "-" + opt->get_snames().front()
                                                        : opt->get_name();
        bool is_flag = opt->get_type_size() == 0;
        const auto& results = opt->results();
        o.given[name] = is_flag || results.empty() ? "" : results.back();
        if (name == "--model") o.models = results;
    }
}

Status read_text_file(const std::string& flag, const std::string& path, std::string& out) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        return Status::Error(flag + ": cannot read '" + path + "': it is a directory");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return Status::Error(flag + ": cannot read '" + path + "': " + std::strerror(errno));
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return Status::Error(flag + ": error while reading '" + path + "'");
    out = ss.str();
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return Status::Ok();
}

Status load_prompt_files(CliOptions& o) {
    if (o.was_given("--prompt-file")) {
        if (o.was_given("--prompt")) {
            return Status::Error("--prompt and --prompt-file cannot be used together");
        }
        GGDIFF_TRY(read_text_file("--prompt-file", o.prompt_file, o.prompt));
    }
    if (o.was_given("--negative-prompt-file")) {
        if (o.was_given("--negative-prompt")) {
            return Status::Error(
                "--negative-prompt and --negative-prompt-file cannot be used together");
        }
        GGDIFF_TRY(
            read_text_file("--negative-prompt-file", o.negative_prompt_file, o.negative_prompt));
    }
    return Status::Ok();
}

template <class T>
std::string num_text(T v) {
    std::ostringstream ss;
    ss << v;
    return ss.str();
}

// Range checks on the parsed values; the first failure wins.
Status check_ranges(const CliOptions& o) {
    Status st;
    auto fail = [&](const char* flag, const std::string& value, const char* rule) {
        if (st.ok()) {
            st = Status::Error(std::string(flag) + ": invalid value '" + value + "': " + rule);
        }
    };
    auto at_least = [&](const char* flag, long long v, long long min) {
        if (v < min) {
            fail(flag, num_text(v),
                 (min == 1 ? std::string("must be > 0") : ("must be >= " + num_text(min))).c_str());
        }
    };
    auto finite = [&](const char* flag, float v) {
        if (!std::isfinite(v)) fail(flag, num_text(v), "must be a finite number");
    };
    auto in_range = [&](const char* flag, float v, float lo, float hi) {
        if (!std::isfinite(v) || v < lo || v > hi) {
            fail(flag, num_text(v),
                 ("must be between " + num_text(lo) + " and " + num_text(hi)).c_str());
        }
    };
    auto non_negative = [&](const char* flag, float v) {
        if (!std::isfinite(v) || v < 0) fail(flag, num_text(v), "must be >= 0");
    };
    auto positive = [&](const char* flag, float v) {
        if (!std::isfinite(v) || v <= 0) fail(flag, num_text(v), "must be > 0");
    };

    at_least("--width", o.width, 1);
    at_least("--height", o.height, 1);
    at_least("--steps", o.steps, 1);
    at_least("--batch-count", o.batch_count, 1);
    in_range("--strength", o.strength, 0, 1);
    finite("--cfg-scale", o.cfg_scale);
    if (o.img_cfg_scale) finite("--img-cfg-scale", *o.img_cfg_scale);
    finite("--guidance", o.guidance);
    if (o.eta) non_negative("--eta", *o.eta);
    if (o.flow_shift) finite("--flow-shift", *o.flow_shift);
    for (float s : o.sigmas) non_negative("--sigmas", s);
    at_least("--timestep-shift", o.timestep_shift, 0);
    non_negative("--slg-scale", o.slg_scale);
    in_range("--skip-layer-start", o.skip_layer_start, 0, 1);
    in_range("--skip-layer-end", o.skip_layer_end, 0, 1);

    if (o.high_noise_steps != -1) at_least("--high-noise-steps", o.high_noise_steps, 1);
    finite("--high-noise-cfg-scale", o.high_noise_cfg_scale);
    if (o.high_noise_img_cfg_scale)
        finite("--high-noise-img-cfg-scale", *o.high_noise_img_cfg_scale);
    finite("--high-noise-guidance", o.high_noise_guidance);
    if (o.high_noise_eta) non_negative("--high-noise-eta", *o.high_noise_eta);
    non_negative("--high-noise-slg-scale", o.high_noise_slg_scale);
    in_range("--high-noise-skip-layer-start", o.high_noise_skip_layer_start, 0, 1);
    in_range("--high-noise-skip-layer-end", o.high_noise_skip_layer_end, 0, 1);
    in_range("--moe-boundary", o.moe_boundary, 0, 1);

    in_range("--vae-tile-overlap", o.vae_tile_overlap, 0, 0.99f);
    at_least("--video-frames", o.video_frames, 1);
    at_least("--fps", o.fps, 1);
    finite("--vace-strength", o.vace_strength);
    non_negative("--control-strength", o.control_strength);
    finite("--pm-style-strength", o.pm_style_strength);
    finite("--pulid-id-weight", o.pulid_id_weight);

    positive("--hires-scale", o.hires_scale);
    at_least("--hires-width", o.hires_width, 0);
    at_least("--hires-height", o.hires_height, 0);
    at_least("--hires-steps", o.hires_steps, 0);
    in_range("--hires-denoising-strength", o.hires_denoising_strength, 0, 1);
    at_least("--hires-upscale-tile-size", o.hires_upscale_tile_size, 1);
    for (float s : o.hires_sigmas) non_negative("--hires-sigmas", s);
    at_least("--upscale-repeats", o.upscale_repeats, 1);
    at_least("--upscale-tile-size", o.upscale_tile_size, 1);

    at_least("--chroma-t5-mask-pad", o.chroma_t5_mask_pad, 0);
    at_least("--qwen-image-layers", o.qwen_image_layers, 0);
    at_least("--preview-interval", o.preview_interval, 1);
    if (o.was_given("--output-begin-idx")) at_least("--output-begin-idx", o.output_begin_idx, 0);
    return st;
}

// What each mode cannot run without.
Status check_mode_inputs(const CliOptions& o) {
    const bool any_model = !o.model.empty() || !o.diffusion_model.empty();
    switch (o.mode) {
        case Mode::img_gen:
        case Mode::vid_gen:
        case Mode::convert:
            if (!any_model) {
                return Status::Error(std::string("-M ") + mode_name(o.mode) +
                                     " needs a model: pass -m/--model or --diffusion-model");
            }
            break;
        case Mode::info:
            if (o.models.empty() && o.diffusion_model.empty() && o.vae.empty() &&
                o.clip_l.empty() && o.clip_g.empty() && o.t5xxl.empty() && o.llm.empty()) {
                return Status::Error("-M info needs at least one model file (-m FILE ...)");
            }
            break;
        case Mode::metadata:
            if (o.image.empty()) return Status::Error("-M metadata needs --image FILE");
            break;
        case Mode::upscale:
            if (o.upscale_model.empty()) {
                return Status::Error("-M upscale needs an upscaler model (--upscale-model)");
            }
            break;
    }
    return Status::Ok();
}

}  // namespace

const char* mode_name(Mode mode) {
    switch (mode) {
        case Mode::img_gen:
            return "img_gen";
        case Mode::vid_gen:
            return "vid_gen";
        case Mode::convert:
            return "convert";
        case Mode::upscale:
            return "upscale";
        case Mode::metadata:
            return "metadata";
        case Mode::info:
            return "info";
    }
    return "?";
}

const std::vector<std::string>& sampler_names() {
    static const std::vector<std::string> names = {
        "euler",     "euler_a",       "heun",   "dpm2",    "dpm++2s_a",    "dpm++2m",
        "dpm++2mv2", "dpm++2m_sde",   "ipndm",  "ipndm_v", "lcm",          "ddim_trailing",
        "tcd",       "res_multistep", "res_2s", "er_sde",  "euler_cfg_pp", "euler_a_cfg_pp"};
    return names;
}

const std::vector<std::string>& scheduler_names() {
    static const std::vector<std::string> names = {
        "discrete", "karras",     "exponential", "ays",        "gits",        "sgm_uniform",
        "simple",   "smoothstep", "lcm",         "kl_optimal", "bong_tangent"};
    return names;
}

const std::vector<std::string>& rng_names() {
    static const std::vector<std::string> names = {"cuda", "cpu", "std_default"};
    return names;
}

const std::vector<std::string>& weight_type_names() {
    static const std::vector<std::string> names = {"f32",  "f16",  "bf16", "q8_0", "q5_0",
                                                   "q5_1", "q4_0", "q4_1", "q6_K", "q5_K",
                                                   "q4_K", "q3_K", "q2_K"};
    return names;
}

const std::vector<std::string>& prediction_names() {
    static const std::vector<std::string> names = {"eps",      "v",         "edm_v",
                                                   "sd3_flow", "flux_flow", "flux2_flow"};
    return names;
}

Result<CliOptions> parse_cli(int argc, const char* const* argv) {
    CliOptions o;
    o.version_text = std::string("ggdiff ") + GGDIFF_VERSION;

    CLI::App app("ggdiff " GGDIFF_VERSION
                 ": diffusion image generation on ggml. Accepts sd-cli's command lines.",
                 "ggdiff");
    app.set_help_flag("-h,--help", "Print this help and exit");
    app.set_version_flag("--version", o.version_text, "Print the version and exit");
    auto formatter = std::make_shared<WrappingFormatter>();
    formatter->column_width(42);
    app.formatter(formatter);
    app.footer(
        "Example:\n"
        "  ggdiff -m model.safetensors -p \"a lighthouse at dusk\" -n \"blurry\" -W 512 -H 512 "
        "--steps 20 --cfg-scale 7 --sampling-method euler_a -s 42 -b 2 -o out.png\n"
        "Devices: --list-devices; --backend \"diffusion=CUDA0&CUDA1,te=CPU\"; --auto-fit");
    add_options(app, o);
    o.help_text = app.help();

    std::vector<std::string> args;
    for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i] ? argv[i] : "");
    try {
        app.parse(args);
    } catch (const CLI::CallForHelp&) {
        o.action = CliAction::help;
        return o;
    } catch (const CLI::CallForVersion&) {
        o.action = CliAction::version;
        return o;
    } catch (const CLI::ParseError& e) {
        return Status::Error(e.what());
    } catch (const std::exception& e) {
        return Status::Error(std::string("invalid command line: ") + e.what());
    }

    record_given(app, o);
    if (o.mode == Mode::convert && !o.was_given("--output")) o.output = "output.gguf";
    GGDIFF_TRY(load_prompt_files(o));
    GGDIFF_TRY(check_ranges(o));
    if (!o.list_devices) GGDIFF_TRY(check_mode_inputs(o));
    return o;
}

const std::vector<UnsupportedFlag>& unsupported_flags() {
    return kNotSupportedYet;
}

Status check_supported(const CliOptions& options) {
    std::string message;
    for (const UnsupportedFlag& entry : kNotSupportedYet) {
        auto it = options.given.find(entry.flag);
        if (it == options.given.end()) continue;
        std::string what = entry.flag;
        if (entry.value != nullptr) {
            bool negated = entry.value[0] == '!';
            const char* value = negated ? entry.value + 1 : entry.value;
            bool matches = negated ? it->second != value : it->second == value;
            if (!matches) continue;
            what += " " + it->second;
        }
        if (!message.empty()) message += "; ";
        message += what + " is not supported yet";
    }
    return message.empty() ? Status::Ok() : Status::Error(message);
}

}  // namespace ggdiff::cli
