// JPEG through libjpeg(-turbo). libjpeg reports errors by calling error_exit, which we turn
// into a longjmp: the functions that call setjmp keep no C++ objects with destructors alive
// across libjpeg calls; state lives in a context struct owned by the caller.
#include <cstdio>  // jpeglib.h needs FILE

#include <jerror.h>
#include <jpeglib.h>

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/log.h"
#include "core/safe_text.h"
#include "image/codecs.h"
#include "image/exif.h"

namespace ggdiff::codec {

namespace {

constexpr int kMaxProgressiveScans = 1000;  // libjpeg-turbo's advice against scan-count DoS
constexpr size_t kMaxSegmentPayload = 65533;

struct JpegError {
    jpeg_error_mgr mgr;  // first member: libjpeg hands us a pointer to it
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX] = {0};
    bool truncated = false;
};

void on_error_exit(j_common_ptr cinfo) {
    auto* err = reinterpret_cast<JpegError*>(cinfo->err);
    if (err->message[0] == '\0') (*cinfo->err->format_message)(cinfo, err->message);
    std::longjmp(err->jump, 1);
}

void on_emit_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return;  // trace messages
    auto* err = reinterpret_cast<JpegError*>(cinfo->err);
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) err->truncated = true;
    char text[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, text);
    GGDIFF_LOG_DEBUG("libjpeg: %s", text);
    cinfo->err->num_warnings++;
}

void on_progress(j_common_ptr cinfo) {
    if (!cinfo->is_decompressor) return;
    auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
    if (d->input_scan_number > kMaxProgressiveScans) {
        auto* err = reinterpret_cast<JpegError*>(cinfo->err);
        std::snprintf(err->message, sizeof err->message, "more than %d progressive scans",
                      kMaxProgressiveScans);
        std::longjmp(err->jump, 1);
    }
}

void install_error_handler(JpegError& err) {
    jpeg_std_error(&err.mgr);
    err.mgr.error_exit = on_error_exit;
    err.mgr.emit_message = on_emit_message;
}

struct JpegDecode {
    int64_t max_pixels = kMaxImagePixels;
    JpegError err;
    jpeg_decompress_struct cinfo;
    jpeg_progress_mgr progress;
    Image image;
    std::vector<uint8_t> cmyk_row;
    std::string error;  // set by our own checks
};

void cmyk_to_rgb(const uint8_t* in, uint8_t* out, size_t n, bool inverted) {
    for (size_t i = 0; i < n; ++i, in += 4, out += 3) {
        // Adobe writes inverted CMYK (0 = full ink); others write plain CMYK.
        const int k = inverted ? in[3] : 255 - in[3];
        for (int c = 0; c < 3; ++c) {
            const int v = inverted ? in[c] : 255 - in[c];
            out[c] = static_cast<uint8_t>((v * k + 127) / 255);
        }
    }
}

bool decode_inner(JpegDecode* d, const uint8_t* data, size_t size) {
    j_decompress_ptr cinfo = &d->cinfo;
    if (setjmp(d->err.jump)) return false;
    jpeg_create_decompress(cinfo);
    cinfo->progress = &d->progress;
    d->progress.progress_monitor = on_progress;
    jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
    jpeg_read_header(cinfo, TRUE);
    {
        const Status st =
            check_image_dimensions(cinfo->image_width, cinfo->image_height, d->max_pixels);
        if (!st.ok()) {
            d->error = st.message();
            return false;
        }
    }
    const bool cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
    cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(cinfo);
    const size_t w = cinfo->output_width, h = cinfo->output_height;
    if (cinfo->output_components != (cmyk ? 4 : 3)) {
        d->error = "unexpected JPEG output layout";
        return false;
    }
    try {
        d->image.width = static_cast<int>(w);
        d->image.height = static_cast<int>(h);
        d->image.channels = 3;
        d->image.pixels.resize(w * h * 3);
        if (cmyk) d->cmyk_row.resize(w * 4);
    } catch (const std::bad_alloc&) {
        d->error = "out of memory";
        return false;
    }
    while (cinfo->output_scanline < h) {
        uint8_t* dst = d->image.pixels.data() + cinfo->output_scanline * w * 3;
        JSAMPROW row = cmyk ? d->cmyk_row.data() : dst;
        if (jpeg_read_scanlines(cinfo, &row, 1) != 1) {
            d->error = "truncated data";
            return false;
        }
        if (cmyk) cmyk_to_rgb(d->cmyk_row.data(), dst, w, cinfo->saw_Adobe_marker);
    }
    jpeg_finish_decompress(cinfo);
    return true;
}

struct JpegEncode {
    JpegError err;
    jpeg_compress_struct cinfo;
    const Image* image = nullptr;  // 1 or 3 channels
    int quality = 90;
    std::vector<uint8_t> exif;  // APP1 payload, "Exif\0\0" + TIFF; empty = none
    std::string comment;        // COM payload(s) when the EXIF would not fit; empty = none
    unsigned char* buffer = nullptr;
    unsigned long buffer_size = 0;
};

bool encode_inner(JpegEncode* e) {
    j_compress_ptr cinfo = &e->cinfo;
    if (setjmp(e->err.jump)) return false;
    jpeg_create_compress(cinfo);
    jpeg_mem_dest(cinfo, &e->buffer, &e->buffer_size);
    cinfo->image_width = static_cast<JDIMENSION>(e->image->width);
    cinfo->image_height = static_cast<JDIMENSION>(e->image->height);
    cinfo->input_components = e->image->channels;
    cinfo->in_color_space = e->image->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(cinfo);
    jpeg_set_quality(cinfo, e->quality, TRUE);
    jpeg_start_compress(cinfo, TRUE);
    if (!e->exif.empty()) {
        jpeg_write_marker(cinfo, JPEG_APP0 + 1, e->exif.data(),
                          static_cast<unsigned int>(e->exif.size()));
    }
    for (size_t pos = 0; pos < e->comment.size(); pos += kMaxSegmentPayload) {
        const size_t n = std::min(kMaxSegmentPayload, e->comment.size() - pos);
        jpeg_write_marker(cinfo, JPEG_COM, reinterpret_cast<const JOCTET*>(e->comment.data() + pos),
                          static_cast<unsigned int>(n));
    }
    const size_t stride = e->image->row_bytes();
    while (cinfo->next_scanline < cinfo->image_height) {
        JSAMPROW row =
            const_cast<JSAMPROW>(e->image->pixels.data() + cinfo->next_scanline * stride);
        jpeg_write_scanlines(cinfo, &row, 1);
    }
    jpeg_finish_compress(cinfo);
    return true;
}

}  // namespace

Result<Image> decode_jpeg(const uint8_t* data, size_t size, int64_t max_pixels) {
    JpegDecode d;
    d.max_pixels = max_pixels;
    std::memset(&d.cinfo, 0, sizeof d.cinfo);
    std::memset(&d.progress, 0, sizeof d.progress);
    install_error_handler(d.err);
    d.cinfo.err = &d.err.mgr;
    const bool ok = decode_inner(&d, data, size);
    jpeg_destroy_decompress(&d.cinfo);
    if (!ok) {
        if (!d.error.empty()) return Status::Error("JPEG: " + d.error);
        if (d.err.truncated) return Status::Error("JPEG: truncated data (unexpected end of file)");
        return Status::Error("JPEG: corrupt data (" + escape_text(d.err.message) + ")");
    }
    // libjpeg pads a truncated stream with grey and only warns; we refuse it.
    if (d.err.truncated) return Status::Error("JPEG: truncated data (unexpected end of file)");
    return std::move(d.image);
}

Result<std::vector<uint8_t>> encode_jpeg(const Image& image, int quality,
                                         const std::string& parameters) {
    GGDIFF_TRY(validate_image(image));
    // JPEG has no alpha: grey+alpha becomes grey, RGBA becomes RGB.
    Image converted;
    const Image* src = &image;
    if (image.channels == 2 || image.channels == 4) {
        converted = convert_channels(image, image.channels - 1);
        src = &converted;
    }
    JpegEncode e;
    std::memset(&e.cinfo, 0, sizeof e.cinfo);
    install_error_handler(e.err);
    e.cinfo.err = &e.err.mgr;
    e.image = src;
    e.quality = quality < 1 ? 1 : (quality > 100 ? 100 : quality);
    if (!parameters.empty()) {
        std::vector<uint8_t> tiff = make_exif_user_comment(parameters);
        if (tiff.size() + 6 <= kMaxSegmentPayload) {
            e.exif = {'E', 'x', 'i', 'f', 0, 0};
            e.exif.insert(e.exif.end(), tiff.begin(), tiff.end());
        } else {
            e.comment = parameters;  // UTF-8 in COM segments
        }
    }
    const bool ok = encode_inner(&e);
    jpeg_destroy_compress(&e.cinfo);
    std::vector<uint8_t> out;
    if (ok) out.assign(e.buffer, e.buffer + e.buffer_size);
    std::free(e.buffer);
    if (!ok) return Status::Error(std::string("JPEG: encoding failed (") + e.err.message + ")");
    return out;
}

}  // namespace ggdiff::codec
