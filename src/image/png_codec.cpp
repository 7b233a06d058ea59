// PNG through libpng. libpng reports errors by longjmp: the functions that call setjmp keep
// no C++ objects with destructors alive across libpng calls; state lives in a context
// struct owned by the caller.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <new>

#include "core/log.h"
#include "core/safe_text.h"
#include "image/codecs.h"
#include "image/text_encoding.h"

namespace ggdiff::codec {

namespace {

constexpr size_t kMaxChunkBytes = 64u << 20;  // ancillary chunks (text, ICC) we let libpng hold

struct PngContext {
    // Reading.
    const uint8_t* data = nullptr;
    size_t size = 0;
    size_t pos = 0;
    // Writing.
    std::vector<uint8_t>* out = nullptr;
    // The first error libpng or our callbacks reported.
    char message[256] = {0};
    bool truncated = false;
};

void set_message(PngContext* ctx, const char* msg) {
    if (ctx != nullptr && ctx->message[0] == '\0') {
        std::snprintf(ctx->message, sizeof ctx->message, "%s", msg ? msg : "unknown error");
    }
}

void on_error(png_structp png, png_const_charp msg) {
    set_message(static_cast<PngContext*>(png_get_error_ptr(png)), msg);
    png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp msg) {
    GGDIFF_LOG_DEBUG("libpng: %s", msg);
}

void on_read(png_structp png, png_bytep out, size_t n) {
    auto* ctx = static_cast<PngContext*>(png_get_io_ptr(png));
    if (n > ctx->size - ctx->pos) {
        ctx->truncated = true;
        png_error(png, "unexpected end of data");
    }
    std::memcpy(out, ctx->data + ctx->pos, n);
    ctx->pos += n;
}

void on_write(png_structp png, png_bytep data, size_t n) {
    auto* ctx = static_cast<PngContext*>(png_get_io_ptr(png));
    try {
        ctx->out->insert(ctx->out->end(), data, data + n);
    } catch (const std::bad_alloc&) {
        png_error(png, "out of memory");
    }
}

void on_flush(png_structp) {}

uint32_t be32(const uint8_t* p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

struct PngDecode {
    PngContext ctx;
    int64_t max_pixels = kMaxImagePixels;
    Image image;
    std::vector<png_bytep> rows;
    std::string error;  // set by our own checks (not libpng)
};

bool decode_inner(png_structp png, png_infop info, PngDecode* d) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_set_user_limits(png, kMaxImageSide, kMaxImageSide);
    png_set_chunk_malloc_max(png, kMaxChunkBytes);
    png_read_info(png, info);
    png_uint_32 w = 0, h = 0;
    int depth = 0, color = 0, interlace = 0;
    png_get_IHDR(png, info, &w, &h, &depth, &color, &interlace, nullptr, nullptr);
    {
        const Status st = check_image_dimensions(w, h, d->max_pixels);
        if (!st.ok()) {
            d->error = st.message();
            return false;
        }
    }
    if (depth == 16) png_set_scale_16(png);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
        png_set_gray_to_rgb(png);
    }
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    const int channels = png_get_channels(png, info);
    const size_t row_bytes = png_get_rowbytes(png, info);
    if ((channels != 3 && channels != 4) || png_get_bit_depth(png, info) != 8 ||
        row_bytes != static_cast<size_t>(w) * channels) {
        d->error = "unexpected PNG pixel layout after conversion";
        return false;
    }
    try {
        d->image.width = static_cast<int>(w);
        d->image.height = static_cast<int>(h);
        d->image.channels = channels;
        d->image.pixels.resize(row_bytes * h);
        d->rows.resize(h);
    } catch (const std::bad_alloc&) {
        d->error = "out of memory";
        return false;
    }
    for (png_uint_32 y = 0; y < h; ++y) d->rows[y] = d->image.pixels.data() + y * row_bytes;
    png_read_image(png, d->rows.data());
    png_read_end(png, nullptr);
    return true;
}

struct PngEncode {
    PngContext ctx;
    const Image* image = nullptr;
    std::vector<png_bytep> rows;
    int compression = 6;
    std::string key = "parameters";
    std::string text;
    bool has_text = false;
    bool itxt = false;
    png_text text_chunk;
};

bool encode_inner(png_structp png, png_infop info, PngEncode* e) {
    if (setjmp(png_jmpbuf(png))) return false;
    static const int kColor[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                  PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
    png_set_write_fn(png, &e->ctx, on_write, on_flush);
    png_set_IHDR(png, info, e->image->width, e->image->height, 8, kColor[e->image->channels],
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, e->compression);
    if (e->has_text) {
        std::memset(&e->text_chunk, 0, sizeof e->text_chunk);
        e->text_chunk.compression = e->itxt ? PNG_ITXT_COMPRESSION_NONE : PNG_TEXT_COMPRESSION_NONE;
        e->text_chunk.key = &e->key[0];
        e->text_chunk.text = &e->text[0];
        if (e->itxt) {
            e->text_chunk.itxt_length = e->text.size();
        } else {
            e->text_chunk.text_length = e->text.size();
        }
        png_set_text(png, info, &e->text_chunk, 1);
    }
    png_write_info(png, info);
    png_write_image(png, e->rows.data());
    png_write_end(png, info);
    return true;
}

// Every chunk's length against the bytes that follow it: libpng allocates a text chunk's
// claimed length before reading it (a 290-byte file claiming a 1.8 GB zTXt cost 1.8 GB).
Status check_chunk_lengths(const uint8_t* data, size_t size) {
    size_t p = 8;
    while (p + 8 <= size) {
        const uint64_t length = be32(data + p);
        char type[5] = {0, 0, 0, 0, 0};
        std::memcpy(type, data + p + 4, 4);
        if (p + 12 + length > size) {
            return Status::Error("PNG: truncated data (chunk " + escape_text(type) + " claims " +
                                 std::to_string(length) + " bytes, the file has " +
                                 std::to_string(size - p - 8) + " after its header)");
        }
        if (std::memcmp(type, "IEND", 4) == 0) break;
        p += 12 + length;
    }
    return Status::Ok();
}

}  // namespace

Result<Image> decode_png(const uint8_t* data, size_t size, int64_t max_pixels) {
    // Check the IHDR size ourselves first, for a clearer message than libpng's limit error.
    if (size >= 24 && std::memcmp(data + 12, "IHDR", 4) == 0) {
        GGDIFF_TRY(check_image_dimensions(be32(data + 16), be32(data + 20), max_pixels));
    }
    GGDIFF_TRY(check_chunk_lengths(data, size));
    PngDecode d;
    d.max_pixels = max_pixels;
    d.ctx.data = data;
    d.ctx.size = size;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &d.ctx, on_error, on_warning);
    if (png == nullptr) return Status::Error("PNG: cannot create the libpng reader");
    png_infop info = png_create_info_struct(png);
    if (info == nullptr) {
        png_destroy_read_struct(&png, nullptr, nullptr);
        return Status::Error("PNG: cannot create the libpng reader");
    }
    png_set_read_fn(png, &d.ctx, on_read);
    const bool ok = decode_inner(png, info, &d);
    png_destroy_read_struct(&png, &info, nullptr);
    if (!ok) {
        if (!d.error.empty()) return Status::Error("PNG: " + d.error);
        if (d.ctx.truncated) return Status::Error("PNG: truncated data (unexpected end of file)");
        return Status::Error("PNG: corrupt data (" + escape_text(d.ctx.message) + ")");
    }
    return std::move(d.image);
}

Result<std::vector<uint8_t>> encode_png(const Image& image, int compression_level,
                                        const std::string& parameters) {
    GGDIFF_TRY(validate_image(image));
    if (parameters.find('\0') != std::string::npos) {
        return Status::Error("PNG: the parameters text contains a NUL byte");
    }
    std::vector<uint8_t> out;
    PngEncode e;
    e.ctx.out = &out;
    e.image = &image;
    e.compression = compression_level < 0 ? 6 : (compression_level > 9 ? 9 : compression_level);
    e.has_text = !parameters.empty();
    e.text = parameters;
    // tEXt is Latin-1; UTF-8 text that is not plain ASCII goes into an iTXt chunk.
    e.itxt = !is_ascii(parameters);
    e.rows.resize(image.height);
    for (int y = 0; y < image.height; ++y) {
        e.rows[y] = const_cast<png_bytep>(image.pixels.data() + y * image.row_bytes());
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &e.ctx, on_error, on_warning);
    if (png == nullptr) return Status::Error("PNG: cannot create the libpng writer");
    png_infop info = png_create_info_struct(png);
    if (info == nullptr) {
        png_destroy_write_struct(&png, nullptr);
        return Status::Error("PNG: cannot create the libpng writer");
    }
    const bool ok = encode_inner(png, info, &e);
    png_destroy_write_struct(&png, &info);
    if (!ok) return Status::Error(std::string("PNG: encoding failed (") + e.ctx.message + ")");
    return out;
}

}  // namespace ggdiff::codec
