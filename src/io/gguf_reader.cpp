// GGUF headers: our own strict parser (gguf_direct_reader.cpp), then the exact names and
// shapes that convert_to_gguf keeps in the ggdiff.* string tables.
//
// ggml's own reader is not used: it aborts on some malformed files, checks names and KV keys
// for duplicates in quadratic time, and caps tensor names at 63 bytes, which other tools
// (stable-diffusion.cpp's convert) exceed.
#include <cstring>

#include "core/checked_math.h"
#include "core/log.h"
#include "io/checkpoint_file.h"

namespace ggdiff {

namespace {

// "a,b,c" (decimal, at most kMaxTensorRank entries); "" is a scalar.
bool parse_shape(const std::string& s, std::vector<int64_t>* shape) {
    shape->clear();
    if (s.empty()) return true;  // scalar
    size_t pos = 0;
    while (pos <= s.size()) {
        size_t comma = s.find(',', pos);
        if (comma == std::string::npos) comma = s.size();
        const size_t len = comma - pos;
        if (len == 0 || len > 15 || shape->size() >= kMaxTensorRank) return false;
        int64_t v = 0;
        for (size_t i = pos; i < comma; ++i) {
            if (s[i] < '0' || s[i] > '9') return false;
            v = v * 10 + (s[i] - '0');  // at most 15 digits: no overflow
        }
        shape->push_back(v);
        pos = comma + 1;
    }
    return true;
}

// Restores the canonical names and exact shapes that convert_to_gguf stores in tables. A
// shape is taken only when it has as many elements as the stored one.
void apply_ggdiff_tables(CheckpointHeader* h) {
    const size_t n = h->tensors.size();
    auto names = h->tables.find("ggdiff.tensor_names");
    if (names != h->tables.end() && names->second.size() == n) {
        // The names must pass the same checks as stored ones (and stay unique).
        CheckpointHeader renamed = *h;
        for (size_t i = 0; i < n; ++i) renamed.tensors[i].name = names->second[i];
        if (check_checkpoint_header(renamed).ok()) {
            *h = std::move(renamed);
        } else {
            GGDIFF_LOG_WARN("ignoring the file's ggdiff.tensor_names table: invalid names");
        }
    }
    auto shapes = h->tables.find("ggdiff.tensor_shapes");
    if (shapes == h->tables.end() || shapes->second.size() != n) return;
    for (size_t i = 0; i < n; ++i) {
        std::vector<int64_t> shape;
        if (!parse_shape(shapes->second[i], &shape)) continue;
        int64_t want = 0, have = 0;
        if (!checked_numel(shape, &want) || !checked_numel(h->tensors[i].shape, &have)) continue;
        if (want == have) h->tensors[i].shape = std::move(shape);
    }
}

}  // namespace

Result<CheckpointHeader> read_gguf_header(const uint8_t* data, uint64_t size) {
    if (size < 24) {
        return Status::Error(
            string_format("truncated GGUF file: only %llu bytes", (unsigned long long)size));
    }
    auto header = read_gguf_header_direct(data, size);
    if (!header.ok()) return header.status();
    apply_ggdiff_tables(&*header);
    return header;
}

}  // namespace ggdiff
