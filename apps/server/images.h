// Images crossing HTTP: uploads (base64 or multipart bytes) decoded through the C API with
// the server's size limits, and results encoded to PNG/JPEG/WebP bytes with their A1111
// parameters.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ggdiff.h"

namespace ggdiff::server {

struct ImageDeleter {
    void operator()(ggdiff_image* image) const { ggdiff_images_free(image, 1); }
};
using ImagePtr = std::unique_ptr<ggdiff_image, ImageDeleter>;

// Decodes uploaded image bytes; errors are RequestErrors naming `field`: 400 for data that
// is no PNG/JPEG/WebP, 413 past `max_pixels`.
ImagePtr decode_upload(const uint8_t* data, size_t size, int64_t max_pixels,
                       const std::string& field);
// The same for a base64 string (raw or a data URL).
ImagePtr decode_base64_upload(const std::string& text, int64_t max_pixels,
                              const std::string& field);

struct EncodedImage {
    std::vector<uint8_t> bytes;
    std::string format;  // png | jpeg | webp
    int width = 0;
    int height = 0;
    int64_t seed = 0;
    std::string parameters;  // A1111 infotext (also embedded unless metadata is off)
    int frame_count = 0;     // a video container (format webp or avi): its frames
    int fps = 0;             // and their rate
    // A video's sound track (audio-video models: LTX-2.3); audio_samples 0: none. An AVI
    // carries it as its PCM stream (audio_in_container); otherwise audio_wav holds it as a
    // 16-bit PCM WAV file.
    int audio_sample_rate = 0;
    int audio_channels = 0;
    int64_t audio_samples = 0;  // per channel
    bool audio_in_container = false;
    std::vector<uint8_t> audio_wav;
};

// Encodes with `quality` (JPEG/WebP, 1..100). Throws std::runtime_error on failure.
EncodedImage encode_result(const ggdiff_image& image, const std::string& format, int quality,
                           bool embed_parameters);

std::string to_base64(const EncodedImage& image);
std::string to_base64(const std::vector<uint8_t>& bytes);

// Inpainting masks as the engine takes them (--mask: white repaints, black keeps, grey is a
// soft weight), made from what each API sends:
// A1111: the mask's grey level (its alpha when it has transparent pixels, as A1111 reads it),
// inverted with inpainting_mask_invert, then blurred as A1111 blurs it: a Gaussian of sigma
// blur_x across and blur_y down, kernel 2 * int(2.5 * sigma + 0.5) + 1, mirrored edges.
ImagePtr a1111_mask(ImagePtr mask, bool invert, double blur_x, double blur_y);
// OpenAI: transparent pixels (alpha < 128) repaint; a mask without alpha is taken as
// white = repaint.
ImagePtr openai_mask(ImagePtr mask);
const char* mime_type(const std::string& format);

}  // namespace ggdiff::server
