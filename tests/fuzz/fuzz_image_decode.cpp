// Fuzz target: the PNG, JPEG and WebP decoders (seeds in corpus/image_decode). A decoded
// image must be valid; small ones are encoded again in every format and decoded back, and the
// lossless formats must give the same pixels. base64 (how HTTP requests carry images) is fed
// the same bytes.
#include <cstring>

#include "core/base64.h"
#include "core/log.h"
#include "fuzz_util.h"
#include "image/image_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace ggdiff;
    static const bool quiet = [] {
        set_log_level(LogLevel::Quiet);
        return true;
    }();
    (void)quiet;
    (void)base64_decode(std::string_view(reinterpret_cast<const char*>(data), size));

    // A small pixel budget keeps each input fast; the limit itself is what is under test.
    Result<Image> image = decode_image(data, size, 1 << 20);
    if (!image.ok()) return 0;
    GGDIFF_FUZZ_CHECK(validate_image(*image).ok());
    GGDIFF_FUZZ_CHECK(image->channels == 3 || image->channels == 4);
    if (static_cast<int64_t>(image->width) * image->height > 64 * 64) return 0;

    for (ImageFormat format : {ImageFormat::Png, ImageFormat::WebP, ImageFormat::Jpeg}) {
        ImageWriteOptions wo;
        wo.lossless = true;
        wo.parameters = "fuzz\nSteps: 1, Seed: 2, Size: 1x1";
        Result<std::vector<uint8_t>> bytes = encode_image(*image, format, wo);
        GGDIFF_FUZZ_CHECK(bytes.ok());
        Result<Image> back = decode_image(*bytes);
        GGDIFF_FUZZ_CHECK(back.ok());
        GGDIFF_FUZZ_CHECK(back->width == image->width && back->height == image->height);
        if (format != ImageFormat::Jpeg) {
            // WebP stores RGB for opaque images; compare in the decoded channel count.
            const Image a = convert_channels(*image, back->channels);
            GGDIFF_FUZZ_CHECK(a.pixels == back->pixels);
        }
    }
    return 0;
}
