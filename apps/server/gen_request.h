// One generation request, whatever API it came through: the fields each API understood,
// each remembered with the name that API gave it, so that every error names the field the
// client sent. build_options() checks it against the server's limits and turns it into C
// API options.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "images.h"
#include "lora_dir.h"
#include "model_host.h"
#include "server_config.h"

namespace ggdiff::server {

// A value and the request field it came from.
template <class T>
struct Field {
    std::optional<T> value;
    std::string name;  // e.g. "sample_params.sample_steps"

    void set(std::optional<T> v, std::string field) {
        if (v) {
            value = std::move(v);
            name = std::move(field);
        }
    }
    explicit operator bool() const { return value.has_value(); }
};

struct LoraUse {
    std::string name;
    double weight = 1.0;
    std::string field;
};

struct GenRequest {
    std::string kind = "txt2img";  // txt2img | img2img (A1111's job names)
    Field<std::string> prompt, negative_prompt;
    Field<int64_t> width, height, steps, clip_skip, batch, seed;
    Field<double> cfg_scale, img_cfg_scale, guidance, strength, eta;
    Field<std::string> sampler, scheduler, sigmas, rng, sampler_rng;
    Field<bool> vae_tiling;
    Field<int64_t> vae_tile_x, vae_tile_y;
    Field<double> vae_tile_overlap;
    std::shared_ptr<ggdiff_image> init_image;  // decoded upload
    std::string init_image_field;
    std::vector<LoraUse> loras;

    // Output encoding.
    std::string output_format = "png";
    int quality = 90;
    bool embed_metadata = true;
};

// The seed a request without one gets: the -s default, or a fresh random one.
int64_t resolve_seed(const GenRequest& request, const ModelHost& host, bool seed_given);

// Checks limits and names (sampler, scheduler, LoRA), resolves the seed into request.seed, and
// builds the C API options. Throws RequestError naming the field at fault.
OptionsPtr build_options(GenRequest& request, const ModelHost& host, const LoraDir& loras,
                         const ServerConfig& config);

// The canonical (CLI) name of a sampler or scheduler in any accepted spelling; throws a 400
// naming `field` for unknown ones.
std::string canonical_sampler(const std::string& name, const std::string& field);
std::string canonical_scheduler(const std::string& name, const std::string& field);

// "<lora:NAME:WEIGHT>" tags in a prompt (A1111's syntax), in order.
std::vector<LoraUse> prompt_lora_tags(const std::string& prompt, const std::string& field);

}  // namespace ggdiff::server
