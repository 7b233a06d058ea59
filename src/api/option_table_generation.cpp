// Schema entries of one generation: prompt, size, sampling, noise, VAE tiling.
#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "api/option_decl.h"

#include "core/log.h"
#include "image/image_io.h"
#include "sampling/rng.h"
#include "sampling/samplers.h"
#include "sampling/schedules.h"
#include "tokenizers/prompt_limits.h"

namespace ggdiff::api {
namespace {

constexpr int kMinSide = 64;
constexpr int kMaxSide = 16384;

// Image sides are multiples of 8 (one latent pixel) from 64 to 16384 (what image files
// hold); the error names the nearest valid sizes.
std::function<Status(const OptionValue&)> side_check(const char* flag) {
    return [flag](const OptionValue& v) -> Status {
        if (v.i % 8 == 0 && v.i >= kMinSide && v.i <= kMaxSide) return Status::Ok();
        int64_t below = v.i >= 0 ? v.i / 8 * 8 : 0, above = below + 8;
        if (v.i % 8 == 0) below = above = v.i;
        below = std::min<int64_t>(std::max<int64_t>(below, kMinSide), kMaxSide);
        above = std::min<int64_t>(std::max<int64_t>(above, kMinSide), kMaxSide);
        std::string nearest = std::to_string(below);
        if (above != below) nearest += " or " + std::to_string(above);
        return Status::Error(string_format(
            "%s %lld: must be a multiple of 8 from %d to %d (the limit of image files); "
            "nearest valid: %s",
            flag, static_cast<long long>(v.i), kMinSide, kMaxSide, nearest.c_str()));
    };
}

// Prompts past the length limit are refused when set (tokenizers/prompt_limits.h).
std::function<Status(const OptionValue&)> prompt_check(const char* what) {
    return [what](const OptionValue& v) { return check_prompt_bytes(v.text.size(), what); };
}

// An image input read when it is set, so that a missing or broken file fails before any
// model is loaded; "" clears it.
template <class F>
std::function<Status(ApiOptions&, OptionValue&)> image_file(const char* flag, F field) {
    return [flag, field](ApiOptions& o, OptionValue& v) -> Status {
        if (v.text.empty()) {
            field(o).reset();
            return Status::Ok();
        }
        auto img = read_image(v.text);
        if (!img.ok()) return img.status().with_context(flag);
        field(o) = std::move(*img);
        return Status::Ok();
    };
}

// --extra-tiling-args: "key=value,..." of the temporal tiling sizes (sd-cli's keys). An
// unknown key or a bad number is an error naming it; "" restores the defaults.
Status parse_extra_tiling_args(const std::string& text, TilingOptions& t) {
    const TilingOptions defaults;
    int frames = defaults.temporal_frames, overlap = defaults.temporal_overlap;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t comma = std::min(text.find(',', at), text.size());
        std::string item = text.substr(at, comma - at);
        at = comma + 1;
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        if (eq == std::string::npos) {
            return Status::Error("--extra-tiling-args: '" + item + "' is not key=value");
        }
        const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
        char* end = nullptr;
        const long n = std::strtol(value.c_str(), &end, 10);
        const bool number = !value.empty() && end && *end == '\0' && n >= 0 && n <= 4096;
        if (key == "temporal_tile_frames") {
            if (!number || n < 1) {
                return Status::Error("--extra-tiling-args temporal_tile_frames: '" + value +
                                     "' is not a whole number from 1 to 4096");
            }
            frames = static_cast<int>(n);
        } else if (key == "temporal_tile_overlap") {
            if (!number) {
                return Status::Error("--extra-tiling-args temporal_tile_overlap: '" + value +
                                     "' is not a whole number from 0 to 4096");
            }
            overlap = static_cast<int>(n);
        } else {
            return Status::Error("--extra-tiling-args: unknown key '" + key +
                                 "' (known: temporal_tile_frames, temporal_tile_overlap)");
        }
    }
    t.temporal_frames = frames;
    t.temporal_overlap = overlap;
    return Status::Ok();
}

}  // namespace

void add_generation_options(std::vector<OptionSpec>& out) {
    const char* g = "Generation";
    opt(out, g, "prompt", OptType::String, kGenerate)
        .short_name("p")
        .help("Prompt; (word:1.2) and [word] change a word's weight")
        .check(prompt_check("the prompt"))
        .bind(to_text(GGDIFF_FIELD(gen.prompt)));
    opt(out, g, "negative-prompt", OptType::String, kGenerate)
        .short_name("n")
        .help("Negative prompt")
        .check(prompt_check("the negative prompt"))
        .bind(to_text(GGDIFF_FIELD(gen.negative_prompt)));
    opt(out, g, "prompt-file", OptType::Path, kFrontend).help("Read the prompt from this file");
    opt(out, g, "negative-prompt-file", OptType::Path, kFrontend)
        .help("Read the negative prompt from this file");
    opt(out, g, "init-img", OptType::Path, kGenerate)
        .short_name("i")
        .help(
            "Initial image for img2img (resized to the output size); the first frame for Wan "
            "image-to-video models")
        .bind(to_text(GGDIFF_FIELD(init_image_path)));
    opt(out, g, "end-img", OptType::Path, kGenerate)
        .help(
            "Last frame of a video for Wan image-to-video and LTX-2 models (first-last-frame; "
            "resized to the output size; read when set)")
        .bind(image_file("--end-img", GGDIFF_FIELD(gen.end_image)));
    opt(out, g, "ref-image", OptType::Path, kGenerate | kRepeatable)
        .short_name("r")
        .help(
            "Reference image (repeatable) for models that take them: FLUX.1 Kontext (any FLUX.1 "
            "model), FLUX.2, Qwen Image Edit (also read by the LLM's vision tower), Qwen Image "
            "Layered; resized to about the output's pixel count")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            o.ref_image_paths.push_back(v.text);
            return Status::Ok();
        });
    opt(out, g, "increase-ref-index", OptType::Bool, kGenerate)
        .help(
            "Give each reference image its own position index, in the order given (FLUX.1 "
            "Kontext, Qwen Image); FLUX.2 and Boogu Image always do, so there it changes nothing")
        .bind(to_bool(GGDIFF_FIELD(gen.increase_ref_index)));
    opt(out, g, "disable-auto-resize-ref-image", OptType::Bool, kGenerate)
        .help(
            "Use reference images at their own size (cut to whole latent pixels) instead of "
            "resizing them to about the output's pixel count")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            o.gen.auto_resize_ref_images = !v.b;
            return Status::Ok();
        });
    opt(out, g, "mask", OptType::Path, kGenerate)
        .help(
            "Inpainting mask for --init-img: white repaints, black keeps, grey blends (resized "
            "to the output size; read when set)")
        .bind(image_file("--mask", GGDIFF_FIELD(gen.mask)));
    opt(out, g, "control-image", OptType::Path, kGenerate)
        .help("ControlNet condition image (resized to the output size; read when set)")
        .bind(image_file("--control-image", GGDIFF_FIELD(gen.control_image)));
    opt(out, g, "control-strength", OptType::Float, kGenerate)
        .range(0)
        .def("0.9")
        .help("How strongly the ControlNet steers")
        .bind(to_float(GGDIFF_FIELD(gen.control_strength)));
    opt(out, g, "canny", OptType::Bool, kGenerate)
        .help("Run a Canny edge detector on the control image first (as sd-cli does)")
        .bind(to_bool(GGDIFF_FIELD(gen.canny)));
    opt(out, g, "width", OptType::Int, kGenerate)
        .short_name("W")
        .range(kMinSide, kMaxSide)
        .help(
            "Image width in pixels, in steps of 8; default: the input image's size with -i / "
            "--end-img / -r (rounded up), else the model's (512 for SD1/SD2)")
        .check(side_check("--width"))
        .bind(to_int(GGDIFF_FIELD(gen.width)));
    opt(out, g, "height", OptType::Int, kGenerate)
        .short_name("H")
        .range(kMinSide, kMaxSide)
        .help("Image height in pixels, in steps of 8; default: as --width")
        .check(side_check("--height"))
        .bind(to_int(GGDIFF_FIELD(gen.height)));
    opt(out, g, "batch-count", OptType::Int, kGenerate)
        .short_name("b")
        .range(1, 4096)
        .def("1")
        .help("Number of images; image i uses seed + i")
        .bind(to_int(GGDIFF_FIELD(gen.batch)));
    opt(out, g, "seed", OptType::Int, kGenerate)
        .short_name("s")
        .def("42")
        .help("RNG seed; < 0 picks a random one")
        .bind(to_int(GGDIFF_FIELD(gen.seed)));
    opt(out, g, "sampling-method", OptType::Enum, kGenerate)
        .values(sampling::sampler_names)
        .help("Sampler (A1111 names such as \"DPM++ 2M\" work too); default: the model's")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            auto k = sampling::parse_sampler(v.text);
            if (!k.ok()) return k.status();
            o.gen.sampler = *k;
            v.text = sampling::sampler_cli_name(*k);
            return Status::Ok();
        });
    opt(out, g, "scheduler", OptType::Enum, kGenerate)
        .values(sampling::schedule_names)
        .unsupported_values("kl_optimal,bong_tangent")
        .help("Sigma schedule; default: the sampler's and the model's")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            auto k = sampling::parse_schedule(v.text);
            if (!k.ok()) return k.status();
            o.gen.scheduler = *k;
            v.text = sampling::schedule_name(*k);
            return Status::Ok();
        });
    opt(out, g, "sigmas", OptType::FloatList, kGenerate)
        .range(0)
        .help("Custom sigmas, comma separated (e.g. \"14.61,7.8,3.5,0\"); replaces the schedule")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            auto s = sampling::parse_sigmas(v.text);
            if (!s.ok()) return s.status();
            o.gen.sigmas = *s;
            return Status::Ok();
        });
    opt(out, g, "steps", OptType::Int, kGenerate)
        .range(1, 10000)
        .def("20")
        .help("Number of sampling steps")
        .bind(to_int(GGDIFF_FIELD(gen.steps)));
    opt(out, g, "cfg-scale", OptType::Float, kGenerate)
        .help(
            "Classifier-free guidance scale; 1 skips the negative prompt; default: the model's "
            "(7 for SD1/SD2)")
        .bind(to_float(GGDIFF_FIELD(gen.cfg_scale)));
    // Reference-image models read it (3-conditioning CFG); elsewhere it is dropped with a
    // warning, as stable-diffusion.cpp does, and --help says so.
    opt(out, g, "img-cfg-scale", OptType::Float, kGenerate)
        .help(
            "Image guidance scale for models given reference images (-r: FLUX.1 Kontext, "
            "FLUX.2, Qwen Image Edit): other than 1 (the default), a third pass without the "
            "references guides by them. Without -r, or on other models, it has no effect (a "
            "warning says so; instruct-pix2pix models are not supported yet)")
        .bind(to_float(GGDIFF_FIELD(gen.img_cfg_scale)));
    opt(out, g, "guidance", OptType::Float, kGenerate)
        .def("3.5")
        .help(
            "Distilled guidance of models with a guidance input (FLUX); models without one "
            "(SD1, SD2, SDXL, Qwen Image) have none")
        .bind(to_float(GGDIFF_FIELD(gen.guidance)));
    // Skip-layer guidance (sd-cli's --slg-scale and friends): start <= end is checked with
    // the request (pipeline/generate_plan.cpp), which also refuses it for families whose
    // denoiser cannot skip blocks and layer numbers past the model's blocks.
    opt(out, g, "slg-scale", OptType::Float, kGenerate)
        .def("0")
        .help(
            "Skip-layer guidance scale: on the steps in --skip-layer-start..--skip-layer-end the "
            "model runs once more with --skip-layers skipped and the result is pushed away from "
            "that prediction (SD 3.5 suggests 2.5); 0 disables. DiT models only (FLUX, SD3); "
            "an error for the others")
        .bind(to_float(GGDIFF_FIELD(gen.slg.scale)));
    opt(out, g, "skip-layers", OptType::IntList, kGenerate)
        .range(0, 1000000)
        .def("7,8,9")
        .help(
            "Blocks skipped by skip-layer guidance, \"[7,8,9]\" or 7,8,9 (SD3: the joint blocks "
            "0..depth-1; FLUX: double blocks 0..depth-1, then the single blocks)")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            o.gen.slg.layers.clear();
            for (double x : v.list) o.gen.slg.layers.push_back(static_cast<int>(x));
            return Status::Ok();
        });
    opt(out, g, "skip-layer-start", OptType::Float, kGenerate)
        .range(0, 1)
        .def("0.01")
        .help("Where skip-layer guidance starts, as a fraction of the schedule")
        .bind(to_float(GGDIFF_FIELD(gen.slg.start)));
    opt(out, g, "skip-layer-end", OptType::Float, kGenerate)
        .range(0, 1)
        .def("0.2")
        .help("Where skip-layer guidance ends, as a fraction of the schedule (at least the start)")
        .bind(to_float(GGDIFF_FIELD(gen.slg.end)));
    opt(out, g, "eta", OptType::Float, kGenerate)
        .range(0)
        .help(
            "Noise multiplier of stochastic samplers (default: 1 for euler_a, dpm++2s_a, "
            "dpm++2m_sde, er_sde, euler_a_cfg_pp; 0 for ddim_trailing, tcd, res_multistep, "
            "res_2s)")
        .bind(to_float(GGDIFF_FIELD(gen.eta)));
    opt(out, g, "flow-shift", OptType::Float, kGenerate)
        .help(
            "Timestep shift of flow models (SD3, FLUX, Qwen Image, Wan); default: the model's. "
            "Models that are not flow models (SD1, SD2, SDXL) have none. FLUX.2's own flux2 "
            "schedule takes its shift from the size and step count (as the reference does): "
            "there this applies to the other schedules only")
        .bind(to_float(GGDIFF_FIELD(gen.flow_shift)));
    opt(out, g, "strength", OptType::Float, kGenerate)
        .range(0, 1)
        .def("0.75")
        .help("img2img denoising strength: 0 keeps the image, 1 replaces it")
        .bind(to_float(GGDIFF_FIELD(gen.strength)));
    opt(out, g, "clip-skip", OptType::Int, kGenerate)
        .def("-1")
        .help("Skip the last CLIP layers: 1 none, 2 one; <= 0 uses the model's default")
        .bind(to_int(GGDIFF_FIELD(gen.clip_skip)));
    auto rng_help = "Noise generator: cuda (A1111/Forge noise), cpu (ComfyUI), std_default";
    opt(out, g, "rng", OptType::Enum, kGenerate)
        .values(sampling::rng_names)
        .def("cuda")
        .help(rng_help)
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            auto k = sampling::parse_rng(v.text);
            if (!k.ok()) return k.status();
            o.gen.rng = *k;
            v.text = sampling::rng_name(*k);
            return Status::Ok();
        });
    opt(out, g, "sampler-rng", OptType::Enum, kGenerate)
        .values(sampling::rng_names)
        .help("Noise generator inside the sampler; default: the same as --rng")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            auto k = sampling::parse_rng(v.text);
            if (!k.ok()) return k.status();
            o.gen.sampler_rng = *k;
            v.text = sampling::rng_name(*k);
            return Status::Ok();
        });

    g = "VAE";
    opt(out, g, "vae-tiling", OptType::Bool, kGenerate)
        .help(
            "Decode in tiles to save memory (a video in tiles of its region; encoding is not "
            "tiled)")
        .bind(to_bool(GGDIFF_FIELD(gen.vae_tiling.enabled)));
    opt(out, g, "vae-tile-size", OptType::Pair, kGenerate)
        .range(4, 4096)
        .def("32x32")
        .help("Tile size in latent pixels, N or XxY (at least 4, as in sd-cli)")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            const double x = v.list[0], y = v.list[1];
            if (x != static_cast<int>(x) || y != static_cast<int>(y))
                return Status::Error("tile sizes are whole latent pixels");
            o.gen.vae_tiling.tile_w = static_cast<int>(x);
            o.gen.vae_tiling.tile_h = static_cast<int>(y);
            return Status::Ok();
        });
    opt(out, g, "vae-tile-overlap", OptType::Float, kGenerate)
        .range(0, 0.99)
        .def("0.5")
        .help("Tile overlap as a fraction of the tile (above 0.5 it is taken as 0.5, as in sd-cli)")
        .bind(to_float(GGDIFF_FIELD(gen.vae_tiling.overlap)));
    opt(out, g, "temporal-tiling", OptType::Bool, kGenerate)
        .help(
            "Decode a video in windows of latent frames (LTX-2's video VAE, which otherwise "
            "decodes every frame in one graph; sizes from --extra-tiling-args). Wan's video VAE "
            "already decodes one latent frame at a time, so for Wan it changes nothing (as in "
            "sd-cli)")
        .bind(to_bool(GGDIFF_FIELD(gen.vae_tiling.temporal)));
    opt(out, g, "extra-tiling-args", OptType::String, kGenerate)
        .help(
            "Temporal tiling sizes, key=value,...: temporal_tile_frames (latent frames per "
            "window, default 4), temporal_tile_overlap (latent frames shared by neighbouring "
            "windows, default 1); used with --temporal-tiling")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            return parse_extra_tiling_args(v.text, o.gen.vae_tiling);
        });

    g = "Model family switches";
    opt(out, g, "qwen-image-layers", OptType::Int, kGenerate)
        .range(0, 64)
        .def("3")
        .help("Qwen Image Layered: N gives N+1 RGBA layers (images) per batch item")
        .bind(to_int(GGDIFF_FIELD(gen.qwen_image_layers)));

    g = "Video";
    opt(out, g, "video-frames", OptType::Int, kGenerate)
        .range(1, 4096)
        .def("1")
        .help(
            "Frames of a video (-M vid_gen with a video model such as Wan); Wan makes 4n+1 "
            "frames and aligns other counts down (10 -> 9); image models make 1")
        .bind(to_int(GGDIFF_FIELD(gen.video_frames)));
    opt(out, g, "control-video", OptType::Path, kGenerate)
        .help(
            "Folder of control video frames for Wan VACE models: its .png, .jpg, .jpeg, .webp "
            "and .bmp files in name order (00.png, 01.png, ...), the first --video-frames of "
            "them, each resized to the output size; missing frames are mid grey. With -i, the "
            "init image is VACE's reference image")
        .check([](const OptionValue& v) -> Status {
            std::error_code ec;
            if (!v.text.empty() && !std::filesystem::is_directory(v.text, ec)) {
                return Status::Error("--control-video " + v.text +
                                     ": not a directory (give a folder of frame images)");
            }
            return Status::Ok();
        })
        .bind(to_text(GGDIFF_FIELD(control_video_path)));
    opt(out, g, "vace-strength", OptType::Float, kGenerate)
        .def("1")
        .help("Wan VACE: scale of what the VACE blocks add to the video (1: full control)")
        .bind(to_float(GGDIFF_FIELD(gen.vace_strength)));

    g = "High-noise expert (Wan 2.2)";
    auto high_noise = [&](const char* name, OptType type) {
        return opt(out, g, name, type, kGenerate);
    };
    high_noise("high-noise-steps", OptType::Int)
        .range(-1, 10000)
        .def("20")
        .help(
            "Steps the high-noise expert (--high-noise-diffusion-model) samples before the model "
            "takes over; the schedule has --steps + this many steps. -1: the steps whose sigma is "
            "at least --moe-boundary, of a --steps schedule. Default 20, as sd-cli really does "
            "(its help says -1)")
        .bind([](ApiOptions& o, OptionValue& v) {
            o.gen.high_noise.steps = static_cast<int>(v.i);
            o.gen.high_noise.any_set = true;
            return Status::Ok();
        });
    high_noise("high-noise-sampling-method", OptType::Enum)
        .values(sampling::sampler_names)
        .help("Sampler of the high-noise expert; default: the model's")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            auto k = sampling::parse_sampler(v.text);
            if (!k.ok()) return k.status();
            o.gen.high_noise.sampler = *k;
            o.gen.high_noise.any_set = true;
            v.text = sampling::sampler_cli_name(*k);
            return Status::Ok();
        });
    high_noise("high-noise-cfg-scale", OptType::Float)
        .help("CFG scale of the high-noise expert's steps; default: the model's (7 for Wan)")
        .bind([](ApiOptions& o, OptionValue& v) {
            o.gen.high_noise.cfg_scale = static_cast<float>(v.f);
            o.gen.high_noise.any_set = true;
            return Status::Ok();
        });
    high_noise("high-noise-eta", OptType::Float)
        .range(0)
        .help("Noise multiplier of the high-noise expert's sampler (as --eta)")
        .bind([](ApiOptions& o, OptionValue& v) {
            o.gen.high_noise.eta = static_cast<float>(v.f);
            o.gen.high_noise.any_set = true;
            return Status::Ok();
        });
    high_noise("high-noise-guidance", OptType::Float)
        .help("Distilled guidance of the high-noise expert's steps")
        .no_effect("Wan's experts take no distilled guidance (it acts on FLUX.1-dev-like models)");
    high_noise("high-noise-img-cfg-scale", OptType::Float)
        .help("Image guidance scale of the high-noise expert's steps")
        .no_effect("Wan's experts take no reference images, which image guidance needs");
    high_noise("moe-boundary", OptType::Float)
        .range(0, 1)
        .def("0.875")
        .help(
            "With --high-noise-steps -1: the sigma below which the model takes over from the "
            "high-noise expert (0.875 for Wan 2.2 T2V, 0.9 for I2V)")
        .bind([](ApiOptions& o, OptionValue& v) {
            o.gen.high_noise.moe_boundary = static_cast<float>(v.f);
            o.gen.high_noise.any_set = true;
            return Status::Ok();
        });

    g = "Measurement";
    opt(out, g, "phase-peaks", OptType::Bool, kGenerate | kOptionalValue)
        .help(
            "Measure each phase's own peak resident set (peak_rss_mib in the generation "
            "figures, ggdiff-bench's phases): the kernel's high-water mark is reset at each "
            "phase, so tools that read it at exit (time -v) see only the last phase's peak, "
            "not the whole run's; on or off (ggdiff-bench: on unless --phase-peaks off)")
        .bind(to_bool(GGDIFF_FIELD(gen.phase_peaks)));
}

}  // namespace ggdiff::api
