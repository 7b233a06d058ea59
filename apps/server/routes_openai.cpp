// OpenAI Images: POST /v1/images/generations (JSON), POST /v1/images/edits (multipart),
// GET /v1/models; errors in OpenAI's {"error": {message, type, param, code}} shape. Besides
// OpenAI's fields, requests may carry seed, steps, negative_prompt, cfg_scale, sampler,
// scheduler (and strength for edits).
#include <cerrno>
#include <cstdlib>

#include "engine_options.h"
#include "http_util.h"
#include "json_fields.h"
#include "routes.h"

namespace ggdiff::server {

namespace {

constexpr int64_t kMaxSeed = INT64_MAX - (1 << 20);

// Output settings shared by both routes.
struct OpenAiOutput {
    std::string format = "png";
    int quality = 100;
};

void parse_size(const std::string& size, GenRequest& r) {
    if (size == "auto") return;
    const size_t x = size.find('x');
    auto num = [&](const std::string& s, int64_t* out) {
        if (s.empty() || s.size() > 6) return false;
        for (char c : s)
            if (c < '0' || c > '9') return false;
        *out = std::strtoll(s.c_str(), nullptr, 10);
        return true;
    };
    int64_t w = 0, h = 0;
    if (x == std::string::npos || !num(size.substr(0, x), &w) || !num(size.substr(x + 1), &h)) {
        throw bad_field("size", "'" + size + "' is not WIDTHxHEIGHT (e.g. 512x512) or auto");
    }
    r.set("width", std::to_string(w), "size");
    r.set("height", std::to_string(h), "size");
}

void check_response_format(const std::optional<std::string>& rf) {
    if (rf && *rf != "b64_json") {
        if (*rf == "url") throw not_supported("response_format", "'url' (use b64_json)");
        throw bad_field("response_format", "'" + *rf + "' is not b64_json");
    }
}

std::string output_format(const std::string& v) {
    if (v == "png" || v == "webp") return v;
    if (v == "jpeg" || v == "jpg") return "jpeg";
    throw bad_field("output_format", "'" + v + "' is not one of png, jpeg, webp");
}

// The `model` field: a model of the server's library by name; OpenAI's own model names
// (dall-e-2, dall-e-3, gpt-image-1, ..., which clients send by default) mean the current one.
void choose_openai_model(GenRequest& r, ServerContext& ctx, std::optional<std::string> model) {
    if (model && (model->rfind("dall-e", 0) == 0 || model->rfind("gpt-image", 0) == 0)) {
        model.reset();
    }
    choose_model(r, ctx.host, model, "model");
}

// The JSON route's fields.
GenRequest parse_generation(const nlohmann::json& body, ServerContext& ctx) {
    const ServerConfig& config = ctx.config;
    Fields f(body);
    GenRequest r;
    choose_openai_model(r, ctx, f.string("model", 4096));
    r.embed_metadata = config.embed_metadata;
    r.set_text("prompt", f.string("prompt"), "prompt");
    if (!r.get("prompt")) throw bad_field("prompt", "required");
    const int64_t n = f.integer("n", 1, 1 << 20).value_or(1);
    if (n > config.max_batch) {
        throw bad_field("n", "must be at most " + std::to_string(config.max_batch) +
                                 " (the server's --max-batch)");
    }
    r.set("batch-count", std::to_string(n), "n");
    if (auto size = f.string("size", 64)) parse_size(*size, r);
    check_response_format(f.string("response_format", 64));
    if (auto of = f.string("output_format", 16)) r.output_format = output_format(*of);
    r.quality =
        std::max<int>(1, static_cast<int>(f.integer("output_compression", 0, 100).value_or(100)));
    if (auto bg = f.string("background", 32); bg && *bg == "transparent") {
        throw not_supported("background", "a transparent background");
    }
    if (f.boolean("stream").value_or(false)) throw not_supported("stream", "streamed images");
    if (f.integer("partial_images", 0, 3).value_or(0) > 0)
        throw not_supported("partial_images", "partial images");
    // ggdiff's extensions.
    r.set_text("negative-prompt", f.string("negative_prompt"), "negative_prompt");
    r.set_int("seed", f.integer("seed", INT64_MIN, kMaxSeed), "seed");
    r.set_int("steps", f.integer("steps", -(1 << 20), 1 << 20), "steps");
    r.set_number("cfg-scale", f.number("cfg_scale", -1000, 1000), "cfg_scale");
    r.set_text("sampling-method", f.string("sampler", 256), "sampler");
    r.set_text("scheduler", f.string("scheduler", 256), "scheduler");
    r.set_int("clip-skip", f.integer("clip_skip", -1, 12), "clip_skip");
    read_engine_options(f, "ggdiff", r);
    return r;
}

// A multipart text field as a string, or nullopt.
std::optional<std::string> form_text(const httplib::Request& req, const std::string& key) {
    if (!req.has_file(key)) return std::nullopt;
    const auto file = req.get_file_value(key);
    if (!file.filename.empty()) throw bad_field(key, "expected a text field, got a file");
    return file.content;
}

std::optional<int64_t> form_int(const httplib::Request& req, const std::string& key, int64_t min,
                                int64_t max) {
    auto text = form_text(req, key);
    if (!text) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text->c_str(), &end, 10);
    if (text->empty() || errno != 0 || *end != '\0') {
        throw bad_field(key, "'" + text->substr(0, 64) + "' is not an integer");
    }
    if (v < min) throw bad_field(key, "must be at least " + std::to_string(min));
    if (v > max) throw bad_field(key, "must be at most " + std::to_string(max));
    return v;
}

std::optional<double> form_number(const httplib::Request& req, const std::string& key, double min,
                                  double max) {
    auto text = form_text(req, key);
    if (!text) return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(text->c_str(), &end);
    if (text->empty() || *end != '\0' || !std::isfinite(v) || v < min || v > max) {
        throw bad_field(key, "'" + text->substr(0, 64) + "' is not a number in the allowed range");
    }
    return v;
}

// A model that attends to reference images (FLUX.2, Qwen Image Edit, ...): as
// stable-diffusion.cpp's server does, every input image is then a reference image too and the
// first one also the init image (for a model never loaded, decided when it loads).
GenRequest parse_edit(const httplib::Request& req, ServerContext& ctx) {
    const ServerConfig& config = ctx.config;
    if (!req.is_multipart_form_data()) {
        throw bad_field("body", "expected multipart/form-data (fields image, prompt, ...)");
    }
    GenRequest r;
    choose_openai_model(r, ctx, form_text(req, "model"));
    const bool takes_refs = model_can(r, ctx.host, "ref_images").value_or(true);
    r.kind = "img2img";
    r.embed_metadata = config.embed_metadata;
    r.set_text("prompt", form_text(req, "prompt"), "prompt");
    if (!r.get("prompt")) throw bad_field("prompt", "required");
    // The image: "image" or "image[]" (OpenAI's newer clients); several only for a model
    // that takes reference images.
    std::string key = req.has_file("image") ? "image" : "image[]";
    const size_t count = req.files.count(key);
    if (count == 0) throw bad_field("image", "required (a PNG, JPEG or WebP file)");
    if (count > 1 && !takes_refs) {
        throw not_supported(key,
                            "more than one input image (only for models that take "
                            "reference images)");
    }
    constexpr size_t kMaxImages = 64;  // as the native API's ref_images
    if (count > kMaxImages) {
        throw bad_field(key, "at most " + std::to_string(kMaxImages) + " images");
    }
    ImagePtr mask;
    if (req.has_file("mask")) {
        require_supported("mask", "mask");
        const auto m = req.get_file_value("mask");
        mask = openai_mask(decode_upload(reinterpret_cast<const uint8_t*>(m.content.data()),
                                         m.content.size(), config.max_upload_pixels, "mask"));
    }
    const auto file = req.get_file_value(key);
    ImagePtr img = decode_upload(reinterpret_cast<const uint8_t*>(file.content.data()),
                                 file.content.size(), config.max_upload_pixels, key);
    const int64_t n = form_int(req, "n", 1, 1 << 20).value_or(1);
    if (n > config.max_batch) {
        throw bad_field("n", "must be at most " + std::to_string(config.max_batch) +
                                 " (the server's --max-batch)");
    }
    r.set("batch-count", std::to_string(n), "n");
    if (auto size = form_text(req, "size")) parse_size(*size, r);
    if (!r.get("width")) {
        // Without a size: the image's own, in whole multiples of 8.
        r.set("width", std::to_string(std::max(8, img->width / 8 * 8)), "image");
        r.set("height", std::to_string(std::max(8, img->height / 8 * 8)), "image");
    }
    check_response_format(form_text(req, "response_format"));
    if (auto bg = form_text(req, "background"); bg && *bg == "transparent") {
        throw not_supported("background", "a transparent background");
    }
    if (auto stream = form_text(req, "stream"); stream && *stream == "true")
        throw not_supported("stream", "streamed images");
    if (form_int(req, "partial_images", 0, 3).value_or(0) > 0)
        throw not_supported("partial_images", "partial images");
    if (auto of = form_text(req, "output_format")) r.output_format = output_format(*of);
    r.quality = std::max<int>(
        1, static_cast<int>(form_int(req, "output_compression", 0, 100).value_or(100)));
    r.set_text("negative-prompt", form_text(req, "negative_prompt"), "negative_prompt");
    r.set_int("seed", form_int(req, "seed", INT64_MIN, kMaxSeed), "seed");
    r.set_int("steps", form_int(req, "steps", -(1 << 20), 1 << 20), "steps");
    r.set_number("cfg-scale", form_number(req, "cfg_scale", -1000, 1000), "cfg_scale");
    r.set_number("strength", form_number(req, "strength", -1e9, 1e9), "strength");
    r.set_text("sampling-method", form_text(req, "sampler"), "sampler");
    r.set_text("scheduler", form_text(req, "scheduler"), "scheduler");
    r.add_image("init-img", std::move(img), key);
    if (mask) r.add_image("mask", std::move(mask), "mask");
    if (takes_refs) {
        auto range = req.files.equal_range(key);
        for (auto it = range.first; it != range.second; ++it) {
            const std::string& bytes = it->second.content;
            add_ref_image(r, ctx.host,
                          decode_upload(reinterpret_cast<const uint8_t*>(bytes.data()),
                                        bytes.size(), config.max_upload_pixels, key),
                          key, count > 1);
        }
    }
    return r;
}

void answer(httplib::Response& res, ServerContext& ctx, GenRequest request) {
    auto job = submit_request(ctx, std::move(request), "openai");
    const JobView done = ctx.jobs.wait_done(*job);
    if (done.status == JobStatus::failed) {
        throw RequestError(done.failure_http_status(), "",
                           "generation failed: " + done.error_message);
    }
    if (done.status == JobStatus::cancelled && done.images.empty()) {
        throw RequestError(409, "", "the generation was cancelled before any image was finished");
    }
    nlohmann::json data = nlohmann::json::array();
    for (const EncodedImage& img : done.images) {
        data.push_back({{"b64_json", to_base64(img)}, {"seed", img.seed}});
    }
    const EncodedImage& first = done.images.front();
    send_json(res, 200,
              {{"created", done.created},
               {"data", data},
               {"output_format", first.format},
               {"size", std::to_string(first.width) + "x" + std::to_string(first.height)}});
}

}  // namespace

void register_openai_routes(httplib::Server& server, ServerContext& ctx) {
    server.Post(
        "/v1/images/generations", [&ctx](const httplib::Request& req, httplib::Response& res) {
            guarded(res, ApiStyle::openai,
                    [&] { answer(res, ctx, parse_generation(parse_json_object(req.body), ctx)); });
        });
    server.Post("/v1/images/edits", [&ctx](const httplib::Request& req, httplib::Response& res) {
        guarded(res, ApiStyle::openai, [&] { answer(res, ctx, parse_edit(req, ctx)); });
    });
    // The library's models; the `model` field of a request names one by its id.
    server.Get("/v1/models", [&ctx](const httplib::Request&, httplib::Response& res) {
        nlohmann::json data = nlohmann::json::array();
        for (const CatalogEntry& e : ctx.host.library().catalog().models) {
            data.push_back(
                {{"id", e.name}, {"object", "model"}, {"created", 0}, {"owned_by", "ggdiff"}});
        }
        send_json(res, 200, {{"object", "list"}, {"data", data}});
    });
}

}  // namespace ggdiff::server
