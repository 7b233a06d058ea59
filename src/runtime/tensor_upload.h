// Writing bytes into a weight that lives in a device buffer, in pieces sized for the
// device: ggml's RPC client copies each write into a fresh zeroed message and, above
// 10 MiB, first hashes it (so that a worker started with a tensor cache can skip it).
// For a worker on this machine the hash and the copy cost more than sending the bytes,
// so its writes go in 8 MiB pieces; a worker elsewhere gets 64 MiB pieces (each still
// offered by hash to its cache, and the client's copy stays bounded). Other devices get
// one write.
#pragma once

#include <ggml-backend.h>

#include <cstddef>
#include <string>

namespace ggdiff {

// The piece size for writes into buffers of type `buffer_type_name` (0: one write).
size_t upload_piece_bytes(const std::string& buffer_type_name);

// ggml_backend_tensor_set(t, data, offset, size) in pieces of upload_piece_bytes.
void set_tensor_in_pieces(ggml_tensor* t, const void* data, size_t offset, size_t size);
// The same through `backend`'s queue (ggml_backend_tensor_set_async).
void set_tensor_in_pieces_async(ggml_backend_t backend, ggml_tensor* t, const void* data,
                                size_t offset, size_t size);

}  // namespace ggdiff
