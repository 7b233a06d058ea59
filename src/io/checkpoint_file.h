// Header readers for checkpoint files: the list of stored tensors (name, dtype, shape,
// byte range) and string metadata, without touching tensor data.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/dtype.h"

namespace ggdiff {

class MappedFile;

struct StoredTensor {
    std::string name;            // as stored in the file
    DType dtype = DType::F32;    // DType::GGML for quantized ggml types
    int ggml_type = -1;          // equivalent ggml_type, -1 if none
    std::vector<int64_t> shape;  // torch order
    uint64_t offset = 0;         // absolute byte offset in the file
    uint64_t nbytes = 0;
};

struct CheckpointHeader {
    std::string format;  // "safetensors" or "gguf"
    std::vector<StoredTensor> tensors;
    std::map<std::string, std::string> metadata;
    std::map<std::string, std::vector<std::string>> tables;  // GGUF "ggdiff.*" string arrays
};

// Limit on the JSON header of a safetensors file.
constexpr uint64_t kMaxSafetensorsHeader = 100ull << 20;

Result<CheckpointHeader> read_safetensors_header(const MappedFile& file);
// GGUF via ggml's gguf API; restores long names and exact shapes written by
// convert_to_gguf (KV arrays ggdiff.tensor_names / ggdiff.tensor_shapes).
Result<CheckpointHeader> read_gguf_header(const MappedFile& file);
// Our own strict GGUF header parser. read_gguf_header validates every file with it before
// handing it to ggml, and uses its result for files ggml rejects only because of tensor
// names of 64+ bytes (stable-diffusion.cpp conversions).
Result<CheckpointHeader> read_gguf_header_direct(const MappedFile& file);
// Picks the reader from the file's magic bytes.
Result<CheckpointHeader> read_checkpoint_header(const MappedFile& file);

// "[a, b, c]" for messages.
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace ggdiff
