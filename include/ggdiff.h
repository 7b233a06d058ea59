/* ggdiff C API: load a diffusion model once, generate images from prompts.
 *
 * Options are set by name with string values; the names are the long CLI flags
 * without dashes ("prompt", "negative-prompt", "width", "steps", "cfg-scale",
 * "sampling-method", "scheduler", "seed", "batch-count", "strength", "clip-skip",
 * "rng", "sampler-rng", "eta", "sigmas", "vae-tiling", ...; for loading: "model",
 * "diffusion-model", "vae", "clip_l", "clip_g", "t5xxl", "llm", "taesd",
 * "tokenizer", "type", "prediction", "threads", "backend", "params-backend",
 * "split-mode", "max-vram", "rpc-servers"). Every function that can fail returns
 * 0 on success and non-zero on error; ggdiff_last_error() then says why (per thread).
 */
#ifndef GGDIFF_H
#define GGDIFF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggdiff_options ggdiff_options;
typedef struct ggdiff_model ggdiff_model;

typedef struct ggdiff_image {
    int width;
    int height;
    int channels;          /* 3 (RGB) or 4 (RGBA) */
    unsigned char* data;   /* width * height * channels bytes, row-major */
    int64_t seed;          /* the seed this image was made with */
    char* parameters;      /* A1111 "parameters" text (prompt, steps, sampler, ...) */
} ggdiff_image;

/* Progress: phase ("sampling", "decode", ...), step (1-based), total, seconds in the
 * phase. Return 0 to cancel the generation. */
typedef int (*ggdiff_progress_fn)(const char* phase, int step, int total, double seconds,
                                  void* user);

const char* ggdiff_version(void);
const char* ggdiff_last_error(void);

ggdiff_options* ggdiff_options_new(void);
void ggdiff_options_free(ggdiff_options* options);
/* Sets one option; unknown names and bad values are errors. */
int ggdiff_options_set(ggdiff_options* options, const char* name, const char* value);

/* Loads a model (files, weight type, devices) named by the options. */
int ggdiff_model_load(const ggdiff_options* options, ggdiff_model** out_model);
void ggdiff_model_free(ggdiff_model* model);

/* Generates images; *out_images gets *out_count images (free with ggdiff_images_free). */
int ggdiff_generate(ggdiff_model* model, const ggdiff_options* options,
                    ggdiff_progress_fn progress, void* user, ggdiff_image** out_images,
                    int* out_count);
void ggdiff_images_free(ggdiff_image* images, int count);

/* Called with each image as soon as it is finished; the image is only valid during the
 * call (copy what you keep). */
typedef void (*ggdiff_image_fn)(const ggdiff_image* image, int index, void* user);

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

#ifdef __cplusplus
}
#endif

#endif /* GGDIFF_H */
