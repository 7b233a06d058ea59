// Fuzz target: reading A1111 parameters from PNG text chunks, JPEG EXIF/COM segments and WebP
// EXIF chunks without decoding pixels (seeds in corpus/image_metadata), then what -M metadata
// does with the text; and the EXIF reader on the raw bytes.
#include "core/log.h"
#include "fuzz_util.h"
#include "image/exif.h"
#include "image/image_metadata.h"
#include "image/infotext.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace ggdiff;
    (void)exif_user_comment(data, size);
    auto text = decode_image_parameters(data, size);
    if (!text.ok() || !text->has_value()) return 0;
    const std::string& t = **text;
    (void)format_metadata(t, "text");
    (void)format_metadata(t, "json");
    return 0;
}
