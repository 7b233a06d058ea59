// One generation request, whatever API it came through: engine options by their schema names
// (the C API's, e.g. "steps", "sampling-method"), each remembered with the request field it
// came from so that every error names the field the client sent, plus the uploaded init
// image, LoRA uses and how to encode the results. build_options() checks it against the
// server's limits and turns it into C API options.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "images.h"
#include "lora_dir.h"
#include "model_host.h"
#include "server_config.h"

namespace ggdiff::server {

class Fields;

struct RequestOption {
    std::string name;   // schema name ("sampling-method")
    std::string value;  // text as ggdiff_options_set takes it
    std::string field;  // where it came from ("sample_params.sample_method")
};

struct RequestImage {
    std::string option;  // image option of the C API ("init-img", "mask", ...)
    std::shared_ptr<ggdiff_image> image;
    std::string field;
};

struct LoraUse {
    std::string name;
    double weight = 1.0;
    std::string field;
};

struct GenRequest {
    std::string kind = "txt2img";        // txt2img | img2img (A1111's job names)
    std::vector<RequestOption> options;  // one per name; a later set replaces
    std::vector<RequestImage> images;    // decoded uploads (the C API says which it takes)
    std::vector<LoraUse> loras;
    bool strip_prompt_loras = false;  // remove <lora:...> tags from the prompts, unapplied

    // Output encoding (a video: webp or avi, its frames in one container at `fps`).
    bool video = false;
    int fps = 16;
    std::string output_format = "png";
    int quality = 90;
    bool embed_metadata = true;

    void set(const std::string& name, const std::string& value, const std::string& field);
    void add_image(const std::string& option, ImagePtr image, const std::string& field);
    const RequestImage* image(const std::string& option) const;
    const RequestOption* get(const std::string& name) const;
    std::string value_or(const std::string& name, const std::string& fallback) const;

    // Typed setters for values read from JSON; nullopt sets nothing.
    void set_text(const std::string& name, const std::optional<std::string>& v,
                  const std::string& field);
    void set_int(const std::string& name, const std::optional<int64_t>& v,
                 const std::string& field);
    void set_number(const std::string& name, const std::optional<double>& v,
                    const std::string& field);
    void set_bool(const std::string& name, const std::optional<bool>& v, const std::string& field);
};

// Reads `key` (an object of engine options by schema name, e.g. {"eta": 0.5, "rng": "cpu"};
// '_' may stand for '-') into the request: any per-request option of the schema, typed as
// the schema says. Paths are refused (no file-system path comes from a request).
void read_engine_options(const Fields& body, const std::string& key, GenRequest& request);

// The request's seed, resolved: its own when >= 0, else the -s default, else random.
int64_t resolve_seed(const GenRequest& request, const ModelHost& host, bool seed_given);

// Checks limits and names (sampler, scheduler, LoRA), resolves the seed into the request,
// and builds the C API options. Throws RequestError naming the field at fault.
OptionsPtr build_options(GenRequest& request, const ModelHost& host, const LoraDir& loras,
                         const ServerConfig& config);

// The canonical (CLI) name of a sampler or scheduler in any accepted spelling; throws a 400
// naming `field` for unknown ones.
std::string canonical_sampler(const std::string& name, const std::string& field);
std::string canonical_scheduler(const std::string& name, const std::string& field);

// "<lora:NAME:WEIGHT>" tags in a prompt (A1111's syntax), in order.
std::vector<LoraUse> prompt_lora_tags(const std::string& prompt, const std::string& field);
// The prompt without its (terminated) <lora:...> tags.
std::string strip_lora_tags(const std::string& prompt);

}  // namespace ggdiff::server
