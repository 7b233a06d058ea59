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
    // The model of the library it runs on, and its VAE ("" = the model's own), resolved by
    // choose_model (submit_request fills in the current ones when a route did not).
    std::string model, vae;
    bool model_chosen = false;
    // What waits for the model's family when that model was never loaded (its capabilities
    // are not known yet); the job settles it once the model is loaded. `pending_refs` become
    // reference images when the model takes them and are dropped otherwise; each of `needs`
    // fails the job ("field: message") when the model lacks the capability.
    struct Need {
        std::string capability;  // a flag of ggdiff_loaded_model_info: "ref_images", ...
        std::string field, message;
    };
    std::vector<RequestImage> pending_refs;
    std::vector<Need> needs;

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

// Sets the request's model: `model` (any name ModelLibrary::resolve takes; none: the current
// one) and `vae` (a --vae-dir name, "Automatic" or "None"; none: the current choice). An
// unknown name is a 400 naming `model_field` / `vae_field` and where the names are listed.
void choose_model(GenRequest& request, const ModelHost& host,
                  const std::optional<std::string>& model, const std::string& model_field,
                  const std::optional<std::string>& vae = std::nullopt,
                  const std::string& vae_field = "");

// Whether the request's model (choose_model first) has `capability` ("ref_images",
// "control_video", "end_image"): known once the model has been loaded, nullopt before.
std::optional<bool> model_can(const GenRequest& request, const ModelHost& host,
                              const char* capability);
// The request needs `capability`: a 400 "field: message" when the model is known to lack it;
// left to the job (GenRequest::needs) when the model was never loaded.
void require_capability(GenRequest& request, const ModelHost& host, const char* capability,
                        const std::string& field, const std::string& message);
// A reference image: added when the model takes them; when that is not known yet, kept in
// pending_refs (and with `needed`, the job fails on a model without them).
void add_ref_image(GenRequest& request, const ModelHost& host, ImagePtr image,
                   const std::string& field, bool needed);

// Settles what waited for the model (GenRequest::needs, pending_refs) now that it is loaded
// with `info`: "" or the "field: message" the job fails with.
std::string settle_for_model(const GenRequest& request, const nlohmann::json& info,
                             ggdiff_options* options);

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
