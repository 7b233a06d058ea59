#include "pipeline/phase_inputs.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/log.h"
#include "image/input_fit.h"
#include "pipeline/image_conditions.h"
#include "pipeline/latent_image.h"
#include "sampling/schedules.h"

namespace ggdiff {
namespace {

// A reference image's size for the VAE: about the output's pixel count (at most 1024x1024)
// with the image's aspect, in multiples of m. stable-diffusion.cpp's automatic resize, with
// its integer arithmetic (pixels * width / height is an integer division there).
std::pair<int, int> ref_image_size(const Image& img, int width, int height, int m) {
    const int64_t pixels = std::min<int64_t>(1024 * 1024, static_cast<int64_t>(width) * height);
    const double w = std::sqrt(static_cast<double>(pixels * img.width / img.height));
    const double h = w * img.height / img.width;
    return {std::max(m, static_cast<int>(std::round(w / m)) * m),
            std::max(m, static_cast<int>(std::round(h / m)) * m)};
}

// Without the automatic resize: the image cut to whole latent pixels of the VAE.
Image crop_to_multiple(const Image& img, int m) {
    const int w = std::max(m, img.width / m * m), h = std::max(m, img.height / m * m);
    if (w == img.width && h == img.height) return img;
    if (w > img.width || h > img.height) return resize_image_nearest(img, w, h);
    Image out;
    out.width = w;
    out.height = h;
    out.channels = img.channels;
    out.pixels.resize(static_cast<size_t>(w) * h * img.channels);
    for (int y = 0; y < h; ++y) {
        std::copy_n(&img.pixels[static_cast<size_t>(y) * img.width * img.channels],
                    static_cast<size_t>(w) * img.channels,
                    &out.pixels[static_cast<size_t>(y) * w * img.channels]);
    }
    return out;
}

}  // namespace

std::optional<ControlHint> control_condition(const Family& f, const GeneratePlan& p,
                                             const GenerateOptions& o, bool warn_unused) {
    if (o.control_image) {
        return make_control_hint(*o.control_image, p.width, p.height, o.canny, o.control_strength);
    }
    if (f.takes_control && warn_unused) {
        GGDIFF_LOG_WARN("a ControlNet is loaded but no --control-image is given: it is not used");
    }
    return std::nullopt;
}

Result<InitLatents> prepare_init(Family& f, const GeneratePlan& p, const GenerateOptions& o,
                                 sampling::Rng& rng, bool use_init_image) {
    const size_t n = p.latent_numel();
    const size_t plane = p.latent_plane();
    InitLatents init;
    init.sigmas = p.sigmas;
    if (!o.init_image || !use_init_image) {
        // Text to image with an inpainting model: everything to paint, nothing known.
        if (f.inpaint_inputs) {
            init.inpaint_input =
                inpaint_concat(std::vector<float>(plane, 1.0f),
                               HostTensor({p.latent_w, p.latent_h, p.latent_c, 1}));
        }
        return init;
    }
    const Image img = o.init_image->width == p.width && o.init_image->height == p.height
                          ? *o.init_image
                          : fit_input_image(*o.init_image, p.width, p.height);
    auto encode = [&](HostTensor t, const char* what) -> Result<HostTensor> {
        auto enc = f.vae->encode(t, rng);
        if (!enc.ok()) return enc.status().with_context(std::string("encoding ") + what);
        if (static_cast<size_t>(enc->numel()) * p.frames != n) {
            return Status::Error(std::string("encoding ") + what +
                                 ": the VAE's latent does not match the denoiser's");
        }
        return enc;
    };
    const HostTensor pixels = f.image_input ? f.image_input(img) : image_to_tensor(img);
    // Inpainting models repaint where the (rounded) mask is white, all of it without one.
    std::vector<float> mask;
    if (o.mask) mask = mask_weights(*o.mask, p.width, p.height, f.inpaint_inputs);
    if (f.inpaint_inputs && mask.empty()) {
        mask.assign(static_cast<size_t>(p.width) * p.height, 1.0f);
    }
    std::vector<float> latent_mask;
    if (!mask.empty()) {
        latent_mask = block_max(mask, p.width, p.height, f.vae->downscale());
    }
    // The init image is encoded first, then the masked image: each VAE posterior
    // sample takes the next noise from the RNG, in the reference engine's order.
    auto enc = encode(pixels, "the init image");
    if (!enc.ok()) return enc.status();
    // A latent of several frames starts every frame from the init image.
    init.latent.resize(n);
    for (size_t c = 0; c < static_cast<size_t>(f.latent_channels); ++c) {
        for (size_t fr = 0; fr < static_cast<size_t>(p.frames); ++fr) {
            std::copy_n(enc->data.begin() + c * plane, plane,
                        init.latent.begin() + (c * p.frames + fr) * plane);
        }
    }
    if (f.inpaint_inputs) {
        HostTensor masked = pixels;
        grey_out(masked, mask);
        auto enc_masked = encode(std::move(masked), "the masked init image");
        if (!enc_masked.ok()) return enc_masked.status();
        init.inpaint_input = inpaint_concat(latent_mask, *enc_masked);
    }
    // Outside the mask every step keeps the init latent; inpainting models get a
    // slightly larger repaint area so that the seam is theirs to paint.
    if (o.mask) {
        init.keep = f.inpaint_inputs ? dilate3x3(latent_mask, static_cast<int>(p.latent_w),
                                                 static_cast<int>(p.latent_h))
                                     : latent_mask;
    }
    init.sigmas = sampling::img2img_sigmas(init.sigmas, o.strength);
    return init;
}

void hold_frames(DenoiseInputs& in, const GeneratePlan& p) {
    const size_t plane = p.latent_plane(), frames = in.video.frame_keep.size();
    in.init.latent = in.video.latent;
    in.init.keep.assign(p.latent_numel(), 1.0f);
    // Planes are channel-major: plane c * frames + t.
    const size_t held = static_cast<size_t>(in.video.held_channels);
    for (size_t i = 0; i < in.init.keep.size(); ++i) {
        if (held && i / plane / frames >= held) continue;
        in.init.keep[i] = in.video.frame_keep[(i / plane) % frames];
    }
}

Result<std::vector<HostTensor>> encode_reference_images(Family& f, const GeneratePlan& p,
                                                        const GenerateOptions& o,
                                                        sampling::Rng& rng) {
    std::vector<HostTensor> latents;
    for (size_t i = 0; i < o.ref_images.size(); ++i) {
        const Image& ref = o.ref_images[i];
        Image img;
        if (o.auto_resize_ref_images && !f.ref_images_as_given) {
            const auto [rw, rh] = ref_image_size(ref, p.width, p.height, f.ref_image_multiple);
            img = ref.width == rw && ref.height == rh ? ref : resize_image_nearest(ref, rw, rh);
        } else {
            img = crop_to_multiple(ref, f.vae->downscale());
        }
        if (img.width != ref.width || img.height != ref.height) {
            GGDIFF_LOG_DEBUG("reference image %zu: %dx%d -> %dx%d", i + 1, ref.width, ref.height,
                             img.width, img.height);
        }
        auto enc = f.vae->encode(f.image_input ? f.image_input(img) : image_to_tensor(img), rng);
        if (!enc.ok()) {
            return enc.status().with_context("encoding reference image " + std::to_string(i + 1));
        }
        latents.push_back(std::move(*enc));
    }
    return latents;
}

}  // namespace ggdiff
