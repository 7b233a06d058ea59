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
    std::string format;  // "safetensors", "gguf", "pytorch" or "pytorch (legacy)"
    std::vector<StoredTensor> tensors;
    std::map<std::string, std::string> metadata;
    std::map<std::string, std::vector<std::string>> tables;  // GGUF "ggdiff.*" string arrays
};

// Limits on what a checkpoint header may hold; files past them are refused with a message.
constexpr uint64_t kMaxSafetensorsHeader = 100ull << 20;  // JSON header bytes
constexpr int kMaxHeaderJsonDepth = 32;                   // nesting of JSON arrays/objects
constexpr size_t kMaxTensorNameBytes = 1024;
constexpr size_t kMaxMetadataKeyBytes = 1024;
constexpr size_t kMaxTensorRank = 8;  // dimensions per tensor

// The readers take the whole file's bytes (a mapped file, or a buffer in tests and fuzzing)
// and never read outside them. Every size they compute from the file is overflow-checked, and
// every header they return has passed check_checkpoint_header().
Result<CheckpointHeader> read_safetensors_header(const uint8_t* data, uint64_t size);
// GGUF (versions 2 and 3) with our own bounds-checked parser; restores the long names and
// exact shapes that convert_to_gguf stores (KV arrays ggdiff.tensor_names / ggdiff.tensor_shapes).
Result<CheckpointHeader> read_gguf_header(const uint8_t* data, uint64_t size);
// The GGUF header exactly as stored, without the ggdiff tables applied.
Result<CheckpointHeader> read_gguf_header_direct(const uint8_t* data, uint64_t size);
// The metadata arrays of a GGUF file whose keys begin with `prefix` (e.g. "tokenizer.ggml."
// for the vocabulary a llama.cpp GGUF carries): string arrays as stored, integer arrays widened
// to int64, float arrays as float (SentencePiece scores); `values` holds the file's scalar and
// string keys. The whole header is checked as read_gguf_header_direct checks it.
struct GgufArrays {
    std::map<std::string, std::string> values;
    std::map<std::string, std::vector<std::string>> strings;
    std::map<std::string, std::vector<int64_t>> ints;
    std::map<std::string, std::vector<float>> floats;
};
Result<GgufArrays> read_gguf_arrays(const uint8_t* data, uint64_t size, const std::string& prefix);
// PyTorch files (torch.save: .ckpt, .pt, .pth, .bin), zip or legacy, read as data without
// running their pickle (io/pickle_machine.h says what is interpreted and what is refused);
// tensors point at their stored bytes in the file. See docs/pytorch_files.md.
Result<CheckpointHeader> read_pytorch_header(const uint8_t* data, uint64_t size);
// True for what read_pytorch_header reads: a zip archive or a protocol 2-5 pickle.
bool looks_like_pytorch(const uint8_t* data, uint64_t size);
// Picks the reader from the magic bytes (zip archives and pickles go to the PyTorch reader);
// other kinds of files (images, JSON, HTML, Git LFS pointers) get a message saying what they
// are.
Result<CheckpointHeader> read_checkpoint_header(const uint8_t* data, uint64_t size);

Result<CheckpointHeader> read_safetensors_header(const MappedFile& file);
Result<CheckpointHeader> read_gguf_header(const MappedFile& file);
Result<CheckpointHeader> read_gguf_header_direct(const MappedFile& file);
Result<CheckpointHeader> read_checkpoint_header(const MappedFile& file);

// The rules every header follows before anything else sees it: tensor names and metadata keys
// are non-empty, valid UTF-8 without control characters and at most kMaxTensorNameBytes /
// kMaxMetadataKeyBytes long; tensor names are unique; shapes have at most kMaxTensorRank
// non-negative dimensions. Errors name the tensor or key (escaped).
Status check_checkpoint_header(const CheckpointHeader& header);

// "this is a PNG image, not a checkpoint ..." for files that are recognizably something other
// than a checkpoint; empty when the bytes are not recognized.
std::string describe_non_checkpoint(const uint8_t* data, uint64_t size);
// "not a safetensors or GGUF file (it starts with 68 65 6c 6c ... "hell...")".
std::string describe_unknown_checkpoint_bytes(const uint8_t* data, uint64_t size);

// "[a, b, c]" for messages.
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace ggdiff
