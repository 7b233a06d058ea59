/* ggdiff C API: load a diffusion model once, generate images from prompts.
 *
 * Options are set by name with text values; the names are the long CLI flags without
 * dashes ("prompt", "width", "sampling-method", "model", "backend", ...; aliases and the
 * short forms such as "W" work too). Every option ggdiff knows is described by the option
 * schema (ggdiff_option_count / ggdiff_option_info): type, default, allowed values, help,
 * and whether it works here, has no effect here, or is not supported yet. A value is
 * checked when it is set, so a bad value fails at ggdiff_options_set, before any model is
 * loaded; the image inputs "mask" (inpainting, with "init-img"), "control-image"
 * (with a "control-net") and "end-img" (video) are read when set, so a file that is not
 * an image fails there.
 * Every function that can fail returns 0 on success and non-zero on error;
 * ggdiff_last_error() then says why (per thread). GGDIFF_ERROR_INPUT means the error is in
 * what the call asked for, found only once generating (a prompt the model cannot take, such
 * as a PhotoMaker prompt without its trigger word): the caller's to fix, not the engine's.
 */
#ifndef GGDIFF_H
#define GGDIFF_H

#include <stddef.h>
#include <stdint.h>

#define GGDIFF_ERROR_INPUT 2

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggdiff_options ggdiff_options;
typedef struct ggdiff_model ggdiff_model;

typedef struct ggdiff_image {
    int width;
    int height;
    int channels;        /* 3 (RGB) or 4 (RGBA) */
    unsigned char* data; /* width * height * channels bytes, row-major */
    int64_t seed;        /* the seed this image was made with */
    char* parameters;    /* A1111 "parameters" text (prompt, steps, sampler, ...) */
} ggdiff_image;

/* Progress: phase ("sampling", "decode", ...), step (1-based), total, seconds in the
 * phase. Return 0 to cancel the generation. */
typedef int (*ggdiff_progress_fn)(const char* phase, int step, int total, double seconds,
                                  void* user);

const char* ggdiff_version(void);
const char* ggdiff_last_error(void);

/* ---- The option schema ---------------------------------------------------------- */

typedef enum ggdiff_option_type {
    GGDIFF_OPTION_STRING = 0,     /* free text */
    GGDIFF_OPTION_PATH = 1,       /* a file or folder name */
    GGDIFF_OPTION_INT = 2,        /* decimal integer within [min, max] */
    GGDIFF_OPTION_FLOAT = 3,      /* finite number within [min, max] */
    GGDIFF_OPTION_BOOL = 4,       /* true/false, on/off, 1/0, yes/no; "" means true */
    GGDIFF_OPTION_ENUM = 5,       /* one of `values` */
    GGDIFF_OPTION_FLOAT_LIST = 6, /* comma-separated numbers within [min, max] */
    GGDIFF_OPTION_INT_LIST = 7,   /* comma-separated integers within [min, max] */
    GGDIFF_OPTION_PAIR = 8        /* "N" or "WxH", each within [min, max] */
} ggdiff_option_type;

/* ggdiff_option_desc.flags */
#define GGDIFF_OPTION_MODEL 1           /* read by ggdiff_model_load */
#define GGDIFF_OPTION_GENERATE 2        /* read by ggdiff_generate (per request) */
#define GGDIFF_OPTION_FRONTEND 4        /* for the front end: outputs, run modes, logging */
#define GGDIFF_OPTION_REPEATABLE 8      /* every set adds a value (ggdiff_options_get_at) */
#define GGDIFF_OPTION_VALUE_OPTIONAL 16 /* a BOOL whose value may be left out on a CLI */

typedef enum ggdiff_option_support {
    GGDIFF_SUPPORT_WORKS = 0,     /* does what it says (some values may be not supported yet) */
    GGDIFF_SUPPORT_NO_EFFECT = 1, /* accepted, changes nothing here; `note` says why */
    GGDIFF_SUPPORT_NOT_YET = 2    /* setting it fails with "not supported yet" */
} ggdiff_option_support;

typedef struct ggdiff_option_desc {
    const char* name;               /* "sampling-method" */
    const char* aliases;            /* other names, comma-separated ("tae"); "" if none */
    const char* short_name;         /* "W" for -W; "" if none */
    int type;                       /* ggdiff_option_type */
    int flags;                      /* GGDIFF_OPTION_* bits */
    int support;                    /* ggdiff_option_support */
    double min, max;                /* numbers: inclusive range (+-1e300 = open) */
    const char* default_value;      /* text form; "" = unset (the library or the model decides) */
    const char* values;             /* ENUM: allowed values, comma-separated; else "" */
    const char* unsupported_values; /* values that fail as not supported yet ("a,b", or "!a"
                                       for all but a); "" if none */
    const char* help;               /* one or two sentences */
    const char* note;               /* NO_EFFECT: why; NOT_YET: what is missing (may be "") */
    const char* group;              /* section of the CLI help ("Generation", ...) */
} ggdiff_option_desc;

/* Number of options; ggdiff_option_info fills `out` for index 0..count-1 (the strings
 * live as long as the library). ggdiff_option_find: index by name, alias or short name,
 * or -1. */
int ggdiff_option_count(void);
int ggdiff_option_info(int index, ggdiff_option_desc* out);
int ggdiff_option_find(const char* name);

/* ---- Options --------------------------------------------------------------------- */

ggdiff_options* ggdiff_options_new(void);
void ggdiff_options_free(ggdiff_options* options);
/* Sets one option; unknown names, bad values and options that are not supported yet are
 * errors naming the option and the value. */
int ggdiff_options_set(ggdiff_options* options, const char* name, const char* value);
/* Whether the option was set (0 or 1); -1 for an unknown name. */
int ggdiff_options_is_set(const ggdiff_options* options, const char* name);
/* The value as set (the last one), or the default: canonical text, and typed. The text
 * pointer is valid until the option is set again or the options are freed. */
int ggdiff_options_get(const ggdiff_options* options, const char* name, const char** out_text);
int ggdiff_options_get_int(const ggdiff_options* options, const char* name, int64_t* out);
int ggdiff_options_get_float(const ggdiff_options* options, const char* name, double* out);
int ggdiff_options_get_bool(const ggdiff_options* options, const char* name, int* out);
/* Repeatable options: how many values were set, and value i. */
int ggdiff_options_count(const ggdiff_options* options, const char* name);
int ggdiff_options_get_at(const ggdiff_options* options, const char* name, int index,
                          const char** out_text);

/* ---- Logging --------------------------------------------------------------------- */

typedef enum ggdiff_log_level {
    GGDIFF_LOG_DEBUG = 0,
    GGDIFF_LOG_INFO = 1,
    GGDIFF_LOG_WARN = 2,
    GGDIFF_LOG_ERROR = 3,
    GGDIFF_LOG_QUIET = 4
} ggdiff_log_level;

/* Messages at `level` and above go to stderr (default: GGDIFF_LOG_INFO). */
void ggdiff_set_log_level(int level);
/* Colors the level tags with ANSI escapes (0 or 1). */
void ggdiff_set_log_color(int enabled);

/* Loads a model (files, weight type, devices) named by the options. Options that only
 * work together fail here before any weight is read ("mask" without "init-img",
 * "control-image" without "control-net"). */
int ggdiff_model_load(const ggdiff_options* options, ggdiff_model** out_model);
void ggdiff_model_free(ggdiff_model* model);

/* Generates images; *out_images gets *out_count images (free with ggdiff_images_free). */
int ggdiff_generate(ggdiff_model* model, const ggdiff_options* options, ggdiff_progress_fn progress,
                    void* user, ggdiff_image** out_images, int* out_count);
void ggdiff_images_free(ggdiff_image* images, int count);

/* Called with each image as soon as it is finished; the image is only valid during the
 * call (copy what you keep). */
typedef void (*ggdiff_image_fn)(const ggdiff_image* image, int index, void* user);

/* How many images ggdiff_generate makes for these options with this model: the batch count
 * times the images of one batch item (Qwen Image Layered: one per layer). Front ends use it
 * to check every output file before generating. */
int ggdiff_image_count(const ggdiff_model* model, const ggdiff_options* options, int* out_count);

/* Like ggdiff_generate, but hands over each image as it is finished, so a failure or a
 * cancel later in a batch loses nothing that was done. */
int ggdiff_generate_each(ggdiff_model* model, const ggdiff_options* options,
                         ggdiff_progress_fn progress, ggdiff_image_fn on_image, void* user);

/* The --auto-fit plan for the model files the options name, as JSON (devices with
 * free and budget bytes, components with params and reserve bytes, targets, split and
 * time-share flags, derived --backend/--params-backend), without loading weights.
 * *out_json is malloc'd (free()). */
int ggdiff_auto_fit_plan(const ggdiff_options* options, char** out_json);

/* Writes "name<TAB>description\n" per device into a malloc'd string (free()). */
int ggdiff_list_devices(const char* rpc_servers, char** out_text);

/* The CPU thread count used when the "threads" option is not set (the physical cores). */
int ggdiff_default_threads(void);

/* Called once the devices to serve are known, just before ggdiff_rpc_serve starts serving:
 * their names, space-separated. */
typedef void (*ggdiff_rpc_serving_fn)(const char* device_names, void* user);

/* ggdiff-rpc: serves local devices over ggml's RPC protocol at `endpoint` ("ip:port"), so
 * that another process can use them with --rpc. `devices` are names as ggdiff_list_devices
 * gives them (n_devices 0: the CPU device; accelerators that run only some ops are refused);
 * `threads` are the served CPU device's; `cache_dir` (may be null) holds ggml's RPC tensor
 * cache. Blocks while serving; returns non-zero when the arguments are refused or the server
 * loop ends (it cannot listen or accept), with ggdiff_last_error() saying why. */
int ggdiff_rpc_serve(const char* endpoint, const char* const* devices, int n_devices, int threads,
                     const char* cache_dir, ggdiff_rpc_serving_fn on_serving, void* user);

/* ---- Upscaling (-M upscale) --------------------------------------------------------- */

typedef struct ggdiff_upscaler ggdiff_upscaler;

/* Loads the ESRGAN / Real-ESRGAN model the "upscale-model" option names (.safetensors or
 * .gguf; RRDBNet x1, x2 or x4 in BasicSR or original ESRGAN names) on the device the
 * placement options give the "upscaler" module ("backend", "params-backend", "rpc",
 * "threads"); no diffusion model is needed. A file that is no ESRGAN, or a PyTorch file, is
 * an error saying so. (A model loaded with "upscale-model" set upscales its own outputs.) */
int ggdiff_upscaler_load(const ggdiff_options* options, ggdiff_upscaler** out_upscaler);
void ggdiff_upscaler_free(ggdiff_upscaler* upscaler);
/* The factor of one pass (1, 2 or 4), or 0 for NULL. */
int ggdiff_upscaler_scale(const ggdiff_upscaler* upscaler);
/* The model file's base name without extension (valid while the upscaler lives). */
const char* ggdiff_upscaler_name(const ggdiff_upscaler* upscaler);

/* The factor of one pass of the ESRGAN in `path` from its tensor names and shapes, without
 * loading it (for listing upscalers); an error when the file is no ESRGAN. */
int ggdiff_upscaler_file_scale(const char* path, int* out_scale);

/* Upscales `image` (1-4 channels; grey becomes RGB, alpha is resized with nearest neighbour)
 * "upscale-repeats" times, in tiles of "upscale-tile-size" pixels (both read from `options`,
 * which may be NULL for the defaults 1 and 128). *out_image (free with
 * ggdiff_images_free(image, 1)) gets the image's parameters text with A1111's
 * "Postprocess upscale by: F, Postprocess upscaler: NAME" added, and the image's seed.
 * `progress` (may be NULL) gets phase "upscale" after each pass; 0 cancels. */
int ggdiff_upscale(ggdiff_upscaler* upscaler, const ggdiff_options* options,
                   const ggdiff_image* image, ggdiff_progress_fn progress, void* user,
                   ggdiff_image** out_image);

/* A bilinear resize of `image` to width x height (channels, seed and parameters kept);
 * free with ggdiff_images_free(image, 1). */
int ggdiff_image_resize(const ggdiff_image* image, int width, int height, ggdiff_image** out_image);
/* Live previews during sampling, as the "preview" option asks (proj: the latent projected to
 * RGB, latent-sized, 1/8 of the image side for most models; tae: decoded by TAESD, needs
 * "taesd"; vae: decoded by the VAE, or by TAESD with "taesd-preview-only"), every
 * "preview-interval" steps, of the denoised estimate or with "preview-noisy" of the noisy
 * latent: `preview` is an RGB (or RGBA) image of the batch item being sampled (its seed in
 * preview->seed, parameters NULL) at sampling step `step` (1-based) of `total`. Two-evaluation
 * samplers (heun, dpm2, ...) preview at both evaluations of a step. Only valid during the call
 * (copy what you keep); one call at a time. */
typedef void (*ggdiff_preview_fn)(const ggdiff_image* preview, int step, int total, void* user);

/* Like ggdiff_generate_each, and `on_preview` (may be null) gets the live previews the
 * "preview" option asks for (ggdiff_generate and ggdiff_generate_each make none). */
int ggdiff_generate_each_preview(ggdiff_model* model, const ggdiff_options* options,
                                 ggdiff_progress_fn progress, ggdiff_image_fn on_image,
                                 ggdiff_preview_fn on_preview, void* user);

/* ---- Model files and images ------------------------------------------------------- */

/* -M info: a summary of the model files the options name (every "model" value, then
 * "diffusion-model", "vae", "clip_l", "clip_g", "t5xxl", "llm", "taesd"): the family,
 * components, tensor counts and types. *out_text is malloc'd (free()). */
int ggdiff_model_info(const ggdiff_options* options, char** out_text);

/* Opens and indexes checkpoint files as loading does (headers, tensor names and shapes, name
 * mapping) without reading any weights: for checking files and timing the index step
 * (ggdiff-bench --index-only). *out_tensors (may be null) gets the number of tensors. */
int ggdiff_index_files(const char* const* paths, int n_paths, int64_t* out_tensors);

/* Figures of the model's last ggdiff_generate call, as JSON: {"phases": [{"name": "text" |
 * "encode" | "sampling" | "decode", "seconds", "gflop" (matrix products, convolutions and
 * attention computed), "peak_rss_mib" (the process's peak resident set at the end of the phase;
 * with the "phase-peaks" option on, the peak during the phase alone: the kernel's high-water
 * mark is then reset at each phase, so tools reading it at exit see only the last phase's),
 * "uploaded_mib" (weights uploaded to a device during the phase by --max-vram graph
 * cutting: the bytes moved for segments not kept on the device)}]}. *out_json is malloc'd. */
int ggdiff_last_generation_stats(const ggdiff_model* model, char** out_json);

/* The rate the CPU kernels reach on a square f32 matrix product of `size` (e.g. 1024) with
 * `threads` threads, in GFLOP/s (best of three): the machine's practical limit for the
 * GEMM-heavy phases. Fails where the CPU kernels are off (no OpenBLAS). */
int ggdiff_measure_sgemm(int threads, int size, double* out_gflops);

/* -M convert: writes the model files the options name into one GGUF file at `path` (a
 * safetensors file when `path` ends in .safetensors; no quantized types there), converting the
 * weights to the "type" option when it is set. `progress` (may be null)
 * gets phase "convert" with tensors done and total; its return value is ignored. `path` is
 * checked before any model file is opened (see ggdiff_image_check_path for the rules). */
int ggdiff_convert(const ggdiff_options* options, const char* path, ggdiff_progress_fn progress,
                   void* user);

/* -M metadata: the generation parameters stored in a PNG, JPEG or WebP file (or a video of
 * -M vid_gen: animated WebP, AVI), as `format`
 * "text" (as stored, with a final newline, control characters other than newline and tab
 * escaped so that printing it cannot drive a terminal), "json" (parsed, with A1111's keys) or
 * "raw" (exactly as stored). *out_text is malloc'd (free()). */
int ggdiff_image_metadata(const char* path, const char* format, char** out_text);

/* Writes an image as PNG, JPEG or WebP (by the file extension), embedding its parameters
 * text unless `with_parameters` is 0. The file is replaced atomically. */
int ggdiff_image_save(const ggdiff_image* image, const char* path, int with_parameters);

/* 0 when ggdiff_image_save could write `path`, checked before minutes are spent making the
 * image: a .png, .jpg, .jpeg or .webp name in an existing, writable folder; an existing
 * regular file is replaced and a symbolic link to one is followed; a folder, device, FIFO or
 * socket (or a link to one, or a dangling link) is refused. Nothing is written. */
int ggdiff_image_check_path(const char* path);

/* ---- Video files (-M vid_gen) ------------------------------------------------------ */

/* Writes `count` frames (all of one size; 1-4 channels, stored as RGB, animated WebP keeps
 * alpha) as one video at `fps` (1..240) frames per second, the format by the file
 * extension: ".avi" (MJPEG AVI, JPEG quality 90, the frames' parameters text in a LIST INFO
 * ICMT chunk) or ".webp" (animated WebP, looping, each frame round(1000 / fps) ms, quality 90,
 * the parameters as EXIF UserComment). The first frame's parameters text is embedded unless
 * `with_parameters` is 0. The file is replaced atomically; nothing is left on failure. */
int ggdiff_video_save(const ggdiff_image* frames, int count, int fps, const char* path,
                      int with_parameters);

/* A sound track: `frames` samples per channel, interleaved (frame i, channel c at
 * samples[i * channels + c]), floats in [-1, 1]. */
typedef struct ggdiff_audio {
    int sample_rate;
    int channels;
    int64_t frames;
    const float* samples;
} ggdiff_audio;

/* The sound track of the batch item whose frames the on_image callback of
 * ggdiff_generate_each(_preview) is being called with (audio-video models: LTX-2), valid
 * during that call; `out` is zeroed when the item has none. */
int ggdiff_generated_audio(const ggdiff_model* model, ggdiff_audio* out);

/* ggdiff_video_save with a sound track (`audio` null or empty: none): AVI carries it as a
 * 16-bit PCM stream; WebP cannot, so it goes to a .wav file next to the video (the path with
 * its extension replaced by .wav). */
int ggdiff_video_save_audio(const ggdiff_image* frames, int count, int fps, const char* path,
                            int with_parameters, const ggdiff_audio* audio);

/* Writes `audio` as a 16-bit PCM WAV file. */
int ggdiff_audio_save_wav(const ggdiff_audio* audio, const char* path);

/* The in-memory counterpart of ggdiff_video_save: `format` "avi" or "webp" ("webm" is an
 * error: no WebM encoder in this build); quality 1..100 (AVI: JPEG quality of the frames;
 * WebP: 100 is lossless); the first frame's parameters text, when non-empty, is embedded.
 * *out_bytes is malloc'd (free()). */
int ggdiff_video_encode(const ggdiff_image* frames, int count, int fps, const char* format,
                        int quality, unsigned char** out_bytes, size_t* out_size);

/* ggdiff_video_encode with a sound track (`audio` null or empty: none): "avi" carries it as a
 * 16-bit PCM stream; "webp" cannot and leaves it out (ggdiff_audio_encode_wav gives the track
 * to hand out beside it). */
int ggdiff_video_encode_audio(const ggdiff_image* frames, int count, int fps, const char* format,
                              int quality, const ggdiff_audio* audio, unsigned char** out_bytes,
                              size_t* out_size);

/* The in-memory counterpart of ggdiff_audio_save_wav: a 16-bit PCM WAV file's bytes
 * (*out_bytes malloc'd, free()). */
int ggdiff_audio_encode_wav(const ggdiff_audio* audio, unsigned char** out_bytes, size_t* out_size);

/* 0 when ggdiff_video_save could write `path`: a .avi or .webp name, with the rules of
 * ggdiff_image_check_path for the target. Nothing is written. */
int ggdiff_video_check_path(const char* path);

/* ---- For front ends that keep images in memory (the HTTP server, bindings) ---- */

/* Copies an option set (e.g. a server's defaults, before one request's values). */
ggdiff_options* ggdiff_options_clone(const ggdiff_options* options);

/* Sets an image option from pixels in memory instead of a file path: "init-img" (img2img;
 * a Wan image-to-video model's first frame), "end-img" (its last frame), "mask"
 * (inpainting: white repaints), "control-image" (ControlNet), "ref-image" (a
 * reference image of edit models: each call adds one, after any given as files) or
 * "control-video" (the next frame of a Wan VACE control video; replaces a --control-video
 * folder). The pixels are copied; a NULL image clears the option (for "ref-image" and
 * "control-video": all of them). Other names are errors saying why. */
int ggdiff_options_set_image(ggdiff_options* options, const char* name, const ggdiff_image* image);

/* Encodes an image as "png", "jpeg" (or "jpg") or "webp" into a malloc'd buffer (free()).
 * quality 1..100 applies to JPEG and WebP (WebP at 100 is lossless); PNG ignores it. The
 * image's parameters text, when non-empty, is embedded as A1111 "parameters" metadata
 * (PNG text chunk, JPEG/WebP EXIF UserComment). The in-memory counterpart of
 * ggdiff_image_save. */
int ggdiff_image_encode(const ggdiff_image* image, const char* format, int quality,
                        unsigned char** out_bytes, size_t* out_size);

/* Base64 for images in HTTP bodies. ggdiff_base64_encode: standard alphabet with '='
 * padding, as a malloc'd NUL-terminated string (free()). ggdiff_base64_decode takes the
 * standard or the URL-safe alphabet, whitespace, missing padding and a "data:...;base64,"
 * header: 0 and a malloc'd buffer (free()), else -1 with ggdiff_last_error() naming the first
 * bad character and its offset, or saying the text is truncated. */
char* ggdiff_base64_encode(const void* data, size_t size);
int ggdiff_base64_decode(const char* text, size_t length, unsigned char** out_bytes,
                         size_t* out_size);

/* Decodes PNG, JPEG or WebP bytes (recognised by content, not by any name) into one image
 * with 3 (RGB) or 4 (RGBA) channels; free with ggdiff_images_free(image, 1). Its parameters
 * are the embedded A1111 text, or NULL. Images with more than max_pixels pixels (0: the
 * library's own limit of 16384 per side and 256 Mpixel) are refused from their header,
 * before any pixel memory is allocated. */
int ggdiff_image_decode(const void* data, size_t size, int64_t max_pixels,
                        ggdiff_image** out_image);

/* The loaded model as JSON (malloc'd, free()): {"name": main file base name without
 * extension, "family": "SD1" (the family's name with its variant, e.g. "FLUX.1 dev"),
 * "family_id": "sd1" (the registry's id, as ggdiff_list_families and -M info give it),
 * "ref_images": whether the family takes reference images, "control_video": whether it
 * takes a control video (Wan VACE: --control-video), "end_image": whether it takes a last
 * frame (Wan image-to-video: --end-img), "skip_layers": whether it does
 * skip-layer guidance (--slg-scale), "skip_layer_count": the blocks --skip-layers may name
 * (0 .. count-1; 0 without), "files": {"model": path, "vae": path, ...} (the files given, or the
 * built-in model's path as "model"), "vae": VAE file base name or null, "defaults": what the
 * family uses when a request leaves it unset ({"sample_method", "cfg_scale", "width", "height",
 * "clip_skip", "flow_shift" for the flow families with a fixed shift, e.g. SD3's 3, "eta"
 * for the families with their own eta, e.g. HiDream-O1's 8, and "scheduler" for the families
 * with their own schedule when a request names none, e.g. LTX-2's "ltx2"; samplers with a
 * schedule of their own keep it: lcm and tcd LCM, ddim_trailing simple}),
 * "version": library version}. (ggdiff_model_info describes model files before any loading.) */
int ggdiff_loaded_model_info(const ggdiff_model* model, char** out_json);

/* The model families the engine recognises, as a JSON array (malloc'd, free()) in detection
 * order: [{"id": "sd1", "name": "SD1", "supported": true, "detects": "what its detection
 * looks for"}, ...]; "supported": false for families that are recognised (-M info names them)
 * but cannot be run yet. */
int ggdiff_list_families(char** out_json);

/* The built-in model that ggdiff_model_load uses when the options name neither "model" nor
 * "diffusion-model": $GGDIFF_DEFAULT_MODEL, else models/ggdiff-toy-shapes.safetensors found
 * next to the executable's folder or in the source tree. The path of an existing file (valid
 * until the next call on this thread), or NULL when there is none (ggdiff_last_error() says
 * where it was looked for). */
const char* ggdiff_default_model(void);

/* Samplers and schedulers as JSON arrays (malloc'd, free()), in the order the CLI lists
 * them: [{"name": "dpm++2m_sde", "a1111": "DPM++ 2M SDE", "aliases": ["k_dpmpp_2m_sde",
 * ...]}, ...]. */
int ggdiff_list_samplers(char** out_json);
int ggdiff_list_schedulers(char** out_json);

/* The CLI name of a sampler or scheduler given in any accepted spelling (CLI, A1111,
 * k-diffusion alias; case-insensitive): "DPM++ 2M SDE" -> "dpm++2m_sde". NULL for unknown
 * names (ggdiff_last_error() lists the known ones). */
const char* ggdiff_sampler_name(const char* any_name);
const char* ggdiff_scheduler_name(const char* any_name);

/* An image's A1111 parameters text parsed into JSON (malloc'd, free()) with the keys of the
 * A1111 API's info object: prompt, negative_prompt, steps, sampler_name, cfg_scale, seed,
 * width, height, and when present sd_model_name, denoising_strength, clip_skip,
 * extra_generation_params ("Schedule type", ...), version: what ggdiff_image_metadata's
 * "json" format gives for a file, less its "infotext" key. */
int ggdiff_parameters_to_json(const char* parameters, char** out_json);

#ifdef __cplusplus
}
#endif

#endif /* GGDIFF_H */
