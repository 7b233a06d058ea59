// What every checkpoint header must satisfy, and what a file that is no checkpoint is.
#include <cstring>
#include <unordered_set>

#include "core/log.h"
#include "core/safe_text.h"
#include "io/checkpoint_file.h"
#include "io/mapped_file.h"

namespace ggdiff {

namespace {

bool starts_with_bytes(const uint8_t* data, uint64_t size, const char* magic, size_t n) {
    return size >= n && std::memcmp(data, magic, n) == 0;
}

// The first bytes as hex, plus as text when they are printable ASCII.
std::string first_bytes(const uint8_t* data, uint64_t size) {
    std::string hex, text;
    bool printable = true;
    for (uint64_t i = 0; i < size && i < 8; ++i) {
        hex += string_format("%s%02x", i ? " " : "", data[i]);
        printable = printable && data[i] >= 0x20 && data[i] < 0x7f;
        text += static_cast<char>(data[i]);
    }
    return printable ? hex + " \"" + text + "\"" : hex;
}

// An 8-byte little-endian header length that fits the file, then the header's JSON object.
bool looks_like_safetensors(const uint8_t* data, uint64_t size) {
    if (size < 9 || data[8] != '{') return false;
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
    return n <= size - 8;
}

}  // namespace

std::string describe_non_checkpoint(const uint8_t* data, uint64_t size) {
    struct Kind {
        const char* magic;
        size_t n;
        const char* what;
    };
    static const Kind kKinds[] = {
        {"\x89PNG", 4, "this is a PNG image, not a checkpoint"},
        {"\xff\xd8\xff", 3, "this is a JPEG image, not a checkpoint"},
        {"GIF8", 4, "this is a GIF image, not a checkpoint"},
        {"\x1f\x8b", 2, "this is a gzip archive, not a checkpoint (unpack it first)"},
        {"version https://git-lfs", 23,
         "this is a Git LFS pointer, not the checkpoint itself (fetch it with git lfs pull)"},
    };
    for (const Kind& k : kKinds) {
        if (starts_with_bytes(data, size, k.magic, k.n)) return k.what;
    }
    if (size >= 12 && std::memcmp(data, "RIFF", 4) == 0 && std::memcmp(data + 8, "WEBP", 4) == 0) {
        return "this is a WebP image, not a checkpoint";
    }
    uint64_t i = 0;
    while (i < size && i < 64 &&
           (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) {
        ++i;
    }
    if (i < size && (data[i] == '{' || data[i] == '[')) {
        return "this is a JSON file, not a checkpoint (for a diffusers model, pass its folder)";
    }
    if (i < size && data[i] == '<') {
        return "this is an HTML or XML document, not a checkpoint (a web page saved instead of "
               "the download?)";
    }
    return "";
}

std::string describe_unknown_checkpoint_bytes(const uint8_t* data, uint64_t size) {
    return "not a safetensors or GGUF file (it starts with " + first_bytes(data, size) + ")";
}

Status check_checkpoint_header(const CheckpointHeader& header) {
    std::unordered_set<std::string> names;
    names.reserve(header.tensors.size());
    for (const StoredTensor& t : header.tensors) {
        GGDIFF_TRY(check_name(t.name, "tensor name", kMaxTensorNameBytes));
        if (!names.insert(t.name).second) {
            return Status::Error("tensor name " + quote_name(t.name) + " appears twice");
        }
        if (t.shape.size() > kMaxTensorRank) {
            return Status::Error(string_format("tensor %s has %zu dimensions (limit %zu)",
                                               quote_name(t.name).c_str(), t.shape.size(),
                                               kMaxTensorRank));
        }
        for (int64_t d : t.shape) {
            if (d < 0)
                return Status::Error("tensor " + quote_name(t.name) + " has a negative dimension");
        }
    }
    for (const auto& [key, value] : header.metadata) {
        GGDIFF_TRY(check_name(key, "metadata key", kMaxMetadataKeyBytes));
    }
    for (const auto& [key, values] : header.tables) {
        GGDIFF_TRY(check_name(key, "metadata key", kMaxMetadataKeyBytes));
    }
    return Status::Ok();
}

bool looks_like_pytorch(const uint8_t* data, uint64_t size) {
    if (starts_with_bytes(data, size, "PK\x03\x04", 4)) return true;
    // Python pickle protocol 2-5: a legacy PyTorch file. A safetensors header length can start
    // with the same two bytes (0x0580 = 1408 does), so a file whose length is followed by the
    // header's '{' is left to the safetensors reader.
    return size >= 2 && data[0] == 0x80 && data[1] >= 2 && data[1] <= 5 &&
           !looks_like_safetensors(data, size);
}

Result<CheckpointHeader> read_checkpoint_header(const uint8_t* data, uint64_t size) {
    if (size >= 4 && std::memcmp(data, "GGUF", 4) == 0) return read_gguf_header(data, size);
    if (looks_like_pytorch(data, size)) return read_pytorch_header(data, size);
    const std::string other = describe_non_checkpoint(data, size);
    if (!other.empty()) return Status::Error(other);
    return read_safetensors_header(data, size);
}

Result<CheckpointHeader> read_checkpoint_header(const MappedFile& file) {
    return read_checkpoint_header(file.data(), file.size());
}

Result<CheckpointHeader> read_safetensors_header(const MappedFile& file) {
    return read_safetensors_header(file.data(), file.size());
}

Result<CheckpointHeader> read_gguf_header(const MappedFile& file) {
    return read_gguf_header(file.data(), file.size());
}

Result<CheckpointHeader> read_gguf_header_direct(const MappedFile& file) {
    return read_gguf_header_direct(file.data(), file.size());
}

}  // namespace ggdiff
