// The pixel size an encoded image declares in its header, read without decoding, so that
// callers with tighter limits than the decoders' (a server) can refuse an upload cheaply.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace ggdiff {

struct ImageSize {
    int64_t width = 0;
    int64_t height = 0;
};

// PNG: the IHDR chunk; JPEG: the first SOFn segment; WebP: the VP8/VP8L/VP8X header.
// Errors for unknown data or a header cut short.
Result<ImageSize> probe_image_size(const uint8_t* data, size_t size);

}  // namespace ggdiff
