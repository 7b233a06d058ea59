#include "runtime/tensor_upload.h"

#include <algorithm>
#include <cstdint>

namespace ggdiff {
namespace {

constexpr size_t kLocalPiece = size_t(8) << 20;    // under ggml RPC's 10 MiB hash threshold
constexpr size_t kRemotePiece = size_t(64) << 20;  // hashed, bounded client copy

// ggml names an RPC buffer type "RPC<device>[host:port]".
bool is_loopback_host(const std::string& host) {
    return host.rfind("127.", 0) == 0 || host == "localhost" || host == "::1" || host == "[::1]";
}

}  // namespace

size_t upload_piece_bytes(const std::string& name) {
    if (name.rfind("RPC", 0) != 0) return 0;
    const size_t open = name.find('[');
    const size_t close = name.rfind(']');
    if (open == std::string::npos || close == std::string::npos || close <= open) return 0;
    const std::string endpoint = name.substr(open + 1, close - open - 1);
    const size_t colon = endpoint.rfind(':');
    const std::string host = colon == std::string::npos ? endpoint : endpoint.substr(0, colon);
    return is_loopback_host(host) ? kLocalPiece : kRemotePiece;
}

namespace {

size_t piece_for(const ggml_tensor* t) {
    ggml_backend_buffer_t buffer = t->view_src ? t->view_src->buffer : t->buffer;
    if (!buffer) return 0;
    return upload_piece_bytes(ggml_backend_buft_name(ggml_backend_buffer_get_type(buffer)));
}

// write(bytes, offset, size) once, or per piece.
template <typename Write>
void in_pieces(size_t piece, const void* data, size_t offset, size_t size, Write write) {
    const uint8_t* bytes = static_cast<const uint8_t*>(data);
    if (piece == 0) piece = size;
    for (size_t done = 0; done < size; done += piece) {
        write(bytes + done, offset + done, std::min(piece, size - done));
    }
}

}  // namespace

void set_tensor_in_pieces(ggml_tensor* t, const void* data, size_t offset, size_t size) {
    in_pieces(piece_for(t), data, offset, size,
              [t](const void* d, size_t o, size_t n) { ggml_backend_tensor_set(t, d, o, n); });
}

void set_tensor_in_pieces_async(ggml_backend_t backend, ggml_tensor* t, const void* data,
                                size_t offset, size_t size) {
    in_pieces(piece_for(t), data, offset, size, [backend, t](const void* d, size_t o, size_t n) {
        ggml_backend_tensor_set_async(backend, t, d, o, n);
    });
}

}  // namespace ggdiff
