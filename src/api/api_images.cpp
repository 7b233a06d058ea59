// C API: images in memory (encode to PNG/JPEG/WebP bytes, decode uploads, image options).
#include <cstdlib>
#include <cstring>
#include <string>

#include "api/api_handles.h"
#include "api/option_schema.h"
#include "core/base64.h"
#include "ggdiff.h"
#include "image/image_io.h"
#include "image/image_metadata.h"
#include "image/image_probe.h"

using ggdiff::api::dup_string;
using ggdiff::api::fail;

namespace {

ggdiff::Status to_image(const ggdiff_image& in, ggdiff::Image& out) {
    if (!in.data) return ggdiff::Status::Error("image has no pixel data");
    if (in.channels < 1 || in.channels > 4) {
        return ggdiff::Status::Error("image has " + std::to_string(in.channels) +
                                     " channels (1 to 4 are supported)");
    }
    GGDIFF_TRY(ggdiff::check_image_dimensions(in.width, in.height));
    out.width = in.width;
    out.height = in.height;
    out.channels = in.channels;
    out.pixels.assign(in.data, in.data + out.byte_size());
    return ggdiff::Status::Ok();
}

}  // namespace

extern "C" {

char* ggdiff_base64_encode(const void* data, size_t size) {
    if (!data && size > 0) {
        fail("ggdiff_base64_encode: null data");
        return nullptr;
    }
    return dup_string(ggdiff::base64_encode(static_cast<const uint8_t*>(data), size));
}

int ggdiff_base64_decode(const char* text, size_t length, unsigned char** out_bytes,
                         size_t* out_size) {
    if ((!text && length > 0) || !out_bytes || !out_size) {
        return fail("ggdiff_base64_decode: null argument");
    }
    *out_bytes = nullptr;
    *out_size = 0;
    auto bytes = ggdiff::base64_decode(std::string_view(text ? text : "", length));
    if (!bytes.ok()) return fail(bytes.status());
    auto* buf = static_cast<unsigned char*>(std::malloc(bytes->empty() ? 1 : bytes->size()));
    if (!buf) return fail("out of memory");
    if (!bytes->empty()) std::memcpy(buf, bytes->data(), bytes->size());
    *out_bytes = buf;
    *out_size = bytes->size();
    return 0;
}

int ggdiff_options_set_image(ggdiff_options* options, const char* name, const ggdiff_image* image) {
    if (!options || !name) return fail("ggdiff_options_set_image: null argument");
    const std::string n = name;
    if (n != "init-img") {
        const ggdiff::api::OptionSpec* spec = ggdiff::api::find_option(n);
        if (!spec) return fail("unknown image option \"" + n + "\"");
        if (spec->support == ggdiff::api::Support::NotYet) {
            return fail(spec->flag_name() + " is not supported yet");
        }
        if (n != "mask" && n != "control-image" && n != "ref-image" && n != "end-img" &&
            n != "control-video") {
            return fail("option \"" + n + "\" is not an image");
        }
    }
    ggdiff::ApiOptions& o = options->opts;
    if (n == "ref-image") {
        // Repeatable: each image joins the list; NULL clears it (the files given too).
        if (!image) {
            o.ref_images_in_memory.clear();
            o.ref_image_paths.clear();
            o.values.erase(n);
            return 0;
        }
        ggdiff::Image img;
        ggdiff::Status st = to_image(*image, img);
        if (!st.ok()) return fail(st.with_context(n));
        o.ref_images_in_memory.push_back(std::move(img));
        return 0;
    }
    if (n == "control-video") {
        // The next control video frame; NULL clears them (and the folder given).
        o.control_video_path.clear();
        o.values.erase(n);
        if (!image) {
            o.gen.control_frames.clear();
            return 0;
        }
        ggdiff::Image img;
        ggdiff::Status st = to_image(*image, img);
        if (!st.ok()) return fail(st.with_context(n));
        o.gen.control_frames.push_back(std::move(img));
        return 0;
    }
    std::optional<ggdiff::Image>& slot = n == "mask"            ? o.gen.mask
                                         : n == "control-image" ? o.gen.control_image
                                         : n == "end-img"       ? o.gen.end_image
                                                                : o.gen.init_image;
    if (n == "init-img") o.init_image_path.clear();
    o.values.erase(n);
    if (!image) {
        slot.reset();
        return 0;
    }
    ggdiff::Image img;
    ggdiff::Status st = to_image(*image, img);
    if (!st.ok()) return fail(st.with_context(n));
    slot = std::move(img);
    return 0;
}

int ggdiff_image_encode(const ggdiff_image* image, const char* format, int quality,
                        unsigned char** out_bytes, size_t* out_size) {
    if (!image || !format || !out_bytes || !out_size) {
        return fail("ggdiff_image_encode: null argument");
    }
    *out_bytes = nullptr;
    *out_size = 0;
    try {
        auto fmt = ggdiff::parse_image_format(format);
        if (!fmt.ok()) return fail(fmt.status());
        if (quality < 1 || quality > 100) {
            return fail("image quality " + std::to_string(quality) + " is not in 1..100");
        }
        ggdiff::Image img;
        ggdiff::Status st = to_image(*image, img);
        if (!st.ok()) return fail(st);
        ggdiff::ImageWriteOptions wo;
        wo.quality = quality;
        wo.lossless = *fmt == ggdiff::ImageFormat::WebP && quality == 100;
        if (image->parameters) wo.parameters = image->parameters;
        auto bytes = ggdiff::encode_image(img, *fmt, wo);
        if (!bytes.ok()) return fail(bytes.status());
        auto* out = static_cast<unsigned char*>(std::malloc(bytes->empty() ? 1 : bytes->size()));
        if (!out) return fail("out of memory");
        std::memcpy(out, bytes->data(), bytes->size());
        *out_bytes = out;
        *out_size = bytes->size();
        return 0;
    } catch (const std::exception& e) {
        return fail(std::string("encoding failed: ") + e.what());
    }
}

int ggdiff_image_decode(const void* data, size_t size, int64_t max_pixels,
                        ggdiff_image** out_image) {
    if (!data || !out_image) return fail("ggdiff_image_decode: null argument");
    *out_image = nullptr;
    try {
        const auto* bytes = static_cast<const uint8_t*>(data);
        auto dims = ggdiff::probe_image_size(bytes, size);
        if (!dims.ok()) return fail(dims.status());
        ggdiff::Status st = ggdiff::check_image_dimensions(dims->width, dims->height);
        if (!st.ok()) return fail(st);
        if (max_pixels > 0 && dims->width * dims->height > max_pixels) {
            return fail("image size " + std::to_string(dims->width) + "x" +
                        std::to_string(dims->height) + " exceeds the limit of " +
                        std::to_string(max_pixels) + " pixels");
        }
        auto img = ggdiff::decode_image(bytes, size);
        if (!img.ok()) return fail(img.status());
        if (img->channels != 3 && img->channels != 4) {
            *img = ggdiff::convert_channels(*img, img->channels == 2 ? 4 : 3);
        }
        auto params = ggdiff::decode_image_parameters(bytes, size);
        auto* out = static_cast<ggdiff_image*>(std::calloc(1, sizeof(ggdiff_image)));
        if (!out) return fail("out of memory");
        out->width = img->width;
        out->height = img->height;
        out->channels = img->channels;
        out->data = static_cast<unsigned char*>(std::malloc(img->pixels.size()));
        if (!out->data) {
            std::free(out);
            return fail("out of memory");
        }
        std::memcpy(out->data, img->pixels.data(), img->pixels.size());
        if (params.ok() && params->has_value()) out->parameters = dup_string(**params);
        *out_image = out;
        return 0;
    } catch (const std::exception& e) {
        return fail(std::string("decoding failed: ") + e.what());
    }
}

}  // extern "C"
