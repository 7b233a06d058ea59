// safetensors: u64 little-endian header length N, N bytes of JSON, then the data
// section. Each JSON entry gives dtype, shape and [begin, end) relative to the data.
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "core/log.h"
#include "core/safe_text.h"
#include "io/checkpoint_file.h"

namespace ggdiff {

namespace {

bool json_to_u64(const nlohmann::json& j, uint64_t* out) {
    if (j.is_number_unsigned()) {
        *out = j.get<uint64_t>();
        return true;
    }
    if (j.is_number_integer() && j.get<int64_t>() >= 0) {
        *out = static_cast<uint64_t>(j.get<int64_t>());
        return true;
    }
    return false;
}

Status parse_entry(const std::string& name, const nlohmann::json& e, uint64_t data_start,
                   uint64_t data_size, StoredTensor* t) {
    auto fail = [&](const std::string& what) {
        return Status::Error("tensor " + quote_name(name) + ": " + what);
    };
    if (!e.is_object()) return fail("entry is not a JSON object");
    auto dt = e.find("dtype");
    auto sh = e.find("shape");
    auto off = e.find("data_offsets");
    if (dt == e.end() || !dt->is_string()) return fail("missing or non-string 'dtype'");
    if (sh == e.end() || !sh->is_array()) return fail("missing or non-array 'shape'");
    if (off == e.end() || !off->is_array() || off->size() != 2)
        return fail("'data_offsets' must be an array of two integers");

    t->name = name;
    const std::string dtype = dt->get<std::string>();
    if (!parse_dtype(dtype, &t->dtype)) return fail("unknown dtype " + quote_name(dtype));
    t->ggml_type = dtype_to_ggml(t->dtype);

    if (sh->size() > kMaxTensorRank) {
        return fail(string_format("%zu dimensions (limit %zu)", sh->size(), kMaxTensorRank));
    }
    uint64_t numel = 1;
    for (const auto& d : *sh) {
        uint64_t v = 0;
        if (!json_to_u64(d, &v) || v > (1ull << 48))
            return fail("shape entries must be non-negative integers");
        if (__builtin_mul_overflow(numel, v, &numel)) return fail("shape overflows");
        t->shape.push_back(static_cast<int64_t>(v));
    }
    uint64_t begin = 0, end = 0;
    if (!json_to_u64((*off)[0], &begin) || !json_to_u64((*off)[1], &end))
        return fail("'data_offsets' must be non-negative integers");
    if (begin > end) return fail("data_offsets begin > end");
    if (end > data_size) {
        return fail(string_format(
            "data_offsets [%llu, %llu) run past the data section (%llu bytes)",
            (unsigned long long)begin, (unsigned long long)end, (unsigned long long)data_size));
    }
    uint64_t expected = 0;
    if (__builtin_mul_overflow(numel, dtype_size(t->dtype), &expected))
        return fail("byte size overflows");
    if (end - begin != expected) {
        return fail(string_format("shape %s of %s needs %llu bytes but data_offsets span %llu",
                                  shape_string(t->shape).c_str(), escape_text(dtype, 32).c_str(),
                                  (unsigned long long)expected, (unsigned long long)(end - begin)));
    }
    t->offset = data_start + begin;
    t->nbytes = expected;
    return Status::Ok();
}

// Builds the header's JSON through nlohmann's SAX interface: nesting deeper than
// kMaxHeaderJsonDepth stops the parse (nothing deep is ever built, dumped or walked
// recursively), the top-level keys are kept in file order (json objects are sorted maps) and a
// key given twice is an error. (nlohmann's callback parser is quadratic in the key count.)
class HeaderSax : public nlohmann::json_sax<nlohmann::json> {
  public:
    nlohmann::json root;
    std::vector<std::string> keys;  // top level, file order
    std::string error;

    bool null() override { return add(nullptr); }
    bool boolean(bool v) override { return add(v); }
    bool number_integer(number_integer_t v) override { return add(v); }
    bool number_unsigned(number_unsigned_t v) override { return add(v); }
    bool number_float(number_float_t v, const string_t&) override { return add(v); }
    bool string(string_t& v) override { return add(std::move(v)); }
    bool binary(binary_t&) override { return fail("binary values are not JSON"); }
    bool start_object(std::size_t) override { return open(nlohmann::json::object()); }
    bool end_object() override { return close(); }
    bool start_array(std::size_t) override { return open(nlohmann::json::array()); }
    bool end_array() override { return close(); }
    bool key(string_t& k) override {
        if (stack_.size() == 1) {
            if (!seen_.insert(k).second) {
                return fail("safetensors header names " + quote_name(k) + " twice");
            }
            keys.push_back(k);
        }
        key_ = std::move(k);
        return true;
    }
    bool parse_error(std::size_t position, const std::string&,
                     const nlohmann::detail::exception&) override {
        if (error.empty()) {
            error = string_format("safetensors header is not valid JSON (at byte %zu)", position);
        }
        return false;
    }

  private:
    bool fail(const std::string& why) {
        if (error.empty()) error = why;
        return false;
    }
    // Places `v` in the innermost open container; returns where it went.
    nlohmann::json* place(nlohmann::json&& v) {
        if (stack_.empty()) {
            root = std::move(v);
            return &root;
        }
        nlohmann::json* top = stack_.back();
        if (top->is_array()) {
            top->push_back(std::move(v));
            return &top->back();
        }
        nlohmann::json& slot = (*top)[key_];
        slot = std::move(v);
        return &slot;
    }
    bool add(nlohmann::json&& v) {
        place(std::move(v));
        return true;
    }
    bool open(nlohmann::json&& container) {
        if (stack_.size() >= static_cast<size_t>(kMaxHeaderJsonDepth)) {
            return fail(string_format("safetensors header nests JSON deeper than %d levels",
                                      kMaxHeaderJsonDepth));
        }
        stack_.push_back(place(std::move(container)));
        return true;
    }
    bool close() {
        stack_.pop_back();
        return true;
    }

    std::vector<nlohmann::json*> stack_;  // open containers, outermost first
    std::string key_;
    std::unordered_set<std::string> seen_;
};

}  // namespace

std::string shape_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

Result<CheckpointHeader> read_safetensors_header(const uint8_t* data, uint64_t size) {
    if (size < 8) {
        return Status::Error(string_format(
            "truncated safetensors file: %llu bytes, less than the 8-byte header length",
            (unsigned long long)size));
    }
    uint64_t n = 0;
    std::memcpy(&n, data, 8);  // little-endian hosts only (as is ggml)
    if (n > kMaxSafetensorsHeader) {
        return Status::Error(string_format(
            "safetensors header length %llu exceeds the %llu MiB limit: corrupt, or %s",
            (unsigned long long)n, (unsigned long long)(kMaxSafetensorsHeader >> 20),
            describe_unknown_checkpoint_bytes(data, size).c_str()));
    }
    if (n > size - 8) {
        return Status::Error(string_format(
            "safetensors header length %llu runs past the end of the file (%llu bytes): "
            "truncated or not a safetensors file",
            (unsigned long long)n, (unsigned long long)size));
    }
    const char* text = reinterpret_cast<const char*>(data + 8);
    HeaderSax sax;
    if (!nlohmann::json::sax_parse(text, text + n, &sax) || !sax.error.empty()) {
        return Status::Error(sax.error.empty() ? "safetensors header is not valid JSON"
                                               : sax.error);
    }
    const nlohmann::json& header = sax.root;
    if (!header.is_object()) return Status::Error("safetensors header is not a JSON object");

    CheckpointHeader out;
    out.format = "safetensors";
    const uint64_t data_start = 8 + n;
    const uint64_t data_size = size - data_start;
    out.tensors.reserve(header.size());
    for (const std::string& key : sax.keys) {
        const auto it = header.find(key);
        if (it == header.end()) continue;
        if (key == "__metadata__") {
            if (!it->is_object()) return Status::Error("__metadata__ is not a JSON object");
            for (auto m = it->begin(); m != it->end(); ++m) {
                out.metadata[m.key()] =
                    m->is_string()
                        ? m->get<std::string>()
                        : m->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            }
            continue;
        }
        GGDIFF_TRY(check_name(key, "tensor name", kMaxTensorNameBytes));
        StoredTensor t;
        GGDIFF_TRY(parse_entry(key, *it, data_start, data_size, &t));
        out.tensors.push_back(std::move(t));
    }

    // Byte ranges must not overlap (empty tensors may share an offset).
    std::vector<const StoredTensor*> order;
    order.reserve(out.tensors.size());
    for (const StoredTensor& t : out.tensors) {
        if (t.nbytes) order.push_back(&t);
    }
    std::sort(order.begin(), order.end(),
              [](const StoredTensor* a, const StoredTensor* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < order.size(); ++i) {
        if (order[i]->offset < order[i - 1]->offset + order[i - 1]->nbytes) {
            return Status::Error("tensors " + quote_name(order[i - 1]->name) + " and " +
                                 quote_name(order[i]->name) + " have overlapping data_offsets");
        }
    }
    GGDIFF_TRY(check_checkpoint_header(out));
    return out;
}

}  // namespace ggdiff
