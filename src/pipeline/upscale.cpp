#include "pipeline/upscale.h"

#include <algorithm>

#include "core/log.h"
#include "devices/devices.h"
#include "image/infotext.h"
#include "pipeline/placement_setup.h"

namespace ggdiff {

Result<ModuleDevices> upscaler_placement(const ModelOptions& options) {
    auto spec = validate_placement(options);
    if (!spec.ok()) return spec.status();
    return upscaler_module_devices(*spec, options);
}

Result<std::unique_ptr<models::EsrganUpscaler>> load_upscaler(const ModelOptions& options,
                                                              const ModuleDevices& where,
                                                              const std::string& path) {
    const int threads = options.threads > 0 ? options.threads : default_threads();
    KernelChoices choices;
    choices.conv_direct = options.diffusion_conv_direct;  // as the reference shares it
    auto u = models::EsrganUpscaler::load(path.empty() ? options.upscale_model : path, where,
                                          threads, choices);
    if (!u.ok() && path.empty()) return u.status().with_context("--upscale-model");
    return u;
}

Result<Image> upscale_image(models::EsrganUpscaler& upscaler, const Image& image, int repeats,
                            int tile_size, const UpscaleProgressFn& progress) {
    GGDIFF_TRY(validate_image(image));
    const bool alpha = image.channels == 2 || image.channels == 4;
    const Image rgb0 = convert_channels(image, 3);
    Image rgb = rgb0;
    for (int pass = 1; pass <= std::max(1, repeats); ++pass) {
        const int64_t w = rgb.width, h = rgb.height, plane = w * h;
        HostTensor x({w, h, 3, 1});
        for (int64_t i = 0; i < plane; ++i) {
            for (int c = 0; c < 3; ++c) x.data[c * plane + i] = rgb.pixels[i * 3 + c] / 255.0f;
        }
        auto y = upscaler.upscale(x, tile_size);
        if (!y.ok()) return y.status().with_context("upscale");
        Image out;
        out.width = static_cast<int>(y->dim(0));
        out.height = static_cast<int>(y->dim(1));
        out.channels = 3;
        GGDIFF_TRY(check_image_dimensions(out.width, out.height)
                       .with_context("upscale pass " + std::to_string(pass)));
        const int64_t oplane = static_cast<int64_t>(out.width) * out.height;
        out.pixels.resize(static_cast<size_t>(oplane) * 3);
        for (int64_t i = 0; i < oplane; ++i) {
            for (int c = 0; c < 3; ++c) {
                const float v = std::min(1.0f, std::max(0.0f, y->data[c * oplane + i]));
                out.pixels[i * 3 + c] = static_cast<uint8_t>(v * 255.0f);
            }
        }
        rgb = std::move(out);
        if (progress && !progress(pass, std::max(1, repeats))) return Status::Error("cancelled");
    }
    if (!alpha) return rgb;
    // The alpha channel, resized with nearest neighbour to the upscaled size.
    const Image rgba0 = convert_channels(image, 4);
    Image out = convert_channels(rgb, 4);
    for (int y = 0; y < out.height; ++y) {
        const int sy = static_cast<int>(static_cast<int64_t>(y) * image.height / out.height);
        for (int x = 0; x < out.width; ++x) {
            const int sx = static_cast<int>(static_cast<int64_t>(x) * image.width / out.width);
            out.pixels[(static_cast<size_t>(y) * out.width + x) * 4 + 3] =
                rgba0.pixels[(static_cast<size_t>(sy) * image.width + sx) * 4 + 3];
        }
    }
    return out;
}

std::string parameters_with_upscale(const std::string& parameters, int factor,
                                    const std::string& upscaler) {
    const std::string fields = "Postprocess upscale by: " + std::to_string(factor) +
                               ", Postprocess upscaler: " + infotext_quote(upscaler);
    std::string text = parameters;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    if (text.empty()) return fields;
    // The last line holds the parameters when it has "Key: value" pairs (parse_infotext).
    const size_t nl = text.rfind('\n');
    const std::string last = nl == std::string::npos ? text : text.substr(nl + 1);
    if (infotext_find_params(last).size() >= 3) return text + ", " + fields;
    return text + "\n" + fields;
}

}  // namespace ggdiff
