#include "io/gguf_writer.h"

#include <ggml.h>

#include <cstring>
#include <set>
#include <vector>

#include "core/checked_math.h"
#include "core/log.h"
#include "core/output_file.h"
#include "core/safe_text.h"
#include "io/name_util.h"
#include "io/weight_type.h"

namespace ggdiff {

namespace {

constexpr uint32_t kGgufVersion = 3;
constexpr uint64_t kAlignment = 32;  // GGUF's default; no general.alignment is written
enum : uint32_t { kTypeU32 = 4, kTypeString = 8, kTypeArray = 9 };

// The GGUF header as bytes (little-endian hosts only, as is ggml). Written here rather than
// through ggml's gguf API, which checks every new tensor name against all earlier ones
// (quadratic in the tensor count) and aborts instead of returning errors.
class HeaderWriter {
  public:
    void u32(uint32_t v) { raw(&v, 4); }
    void u64(uint64_t v) { raw(&v, 8); }
    void i64(int64_t v) { raw(&v, 8); }
    void str(const std::string& s) {
        u64(s.size());
        raw(s.data(), s.size());
    }
    void kv_u32(const std::string& key, uint32_t v) {
        str(key);
        u32(kTypeU32);
        u32(v);
        ++n_kv_;
    }
    void kv_str(const std::string& key, const std::string& v) {
        str(key);
        u32(kTypeString);
        str(v);
        ++n_kv_;
    }
    void kv_str_array(const std::string& key, const std::vector<std::string>& v) {
        str(key);
        u32(kTypeArray);
        u32(kTypeString);
        u64(v.size());
        for (const std::string& s : v) str(s);
        ++n_kv_;
    }
    // "GGUF", the version and room for the tensor and KV counts (filled in at the end).
    void raw_magic() {
        raw("GGUF", 4);
        u32(kGgufVersion);
        u64(0);
        u64(0);
    }
    uint64_t n_kv() const { return n_kv_; }
    std::vector<uint8_t>& bytes() { return bytes_; }

  private:
    void raw(const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        bytes_.insert(bytes_.end(), b, b + n);
    }
    std::vector<uint8_t> bytes_;
    uint64_t n_kv_ = 0;
};

uint64_t padded(uint64_t n) {
    return (n + kAlignment - 1) / kAlignment * kAlignment;
}

std::string shape_csv(const std::vector<int64_t>& shape) {
    std::string s;
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    return s;
}

// ggml order, folded into at most GGML_MAX_DIMS dims (outer dims multiplied together); the
// exact shape goes to the ggdiff.tensor_shapes table.
std::vector<int64_t> folded_ne(const TensorInfo& t) {
    // GGUF stores ggml_n_dims(), which drops a zero outer dim: store empty tensors as [0].
    if (t.numel() == 0) return {0};
    std::vector<int64_t> ne = t.ne();
    while (ne.size() > GGML_MAX_DIMS) {
        ne[ne.size() - 2] *= ne.back();
        ne.pop_back();
    }
    return ne;
}

}  // namespace

Status convert_to_gguf(const TensorIndex& index, const std::string& out_path, int requested_type,
                       const ConvertProgress& progress, const std::string& family) {
    // The output is checked (and its temporary file made) before any tensor is converted.
    auto out = AtomicFile::create(out_path);
    if (!out.ok()) return out.status().with_context("cannot create " + quote_name(out_path));

    // EMA copies of the UNet in training checkpoints are never used for inference.
    std::vector<const TensorInfo*> tensors;
    for (const TensorInfo& t : index.tensors()) {
        if (!starts_with(t.name, "model_ema.")) tensors.push_back(&t);
    }
    if (tensors.size() != index.size()) {
        GGDIFF_LOG_INFO("convert: skipping %zu model_ema.* tensors", index.size() - tensors.size());
    }
    if (tensors.empty()) return Status::Error("nothing to convert: no tensors indexed");

    // Tensor infos: ggml-compatible short names, folded shapes, types and data offsets.
    std::set<std::string> short_names;
    for (const TensorInfo* t : tensors) {
        if (t->name.size() < GGML_MAX_NAME) short_names.insert(t->name);
    }
    HeaderWriter infos;
    std::vector<int> types;
    std::vector<uint64_t> sizes;
    std::vector<std::string> names, shapes;
    uint64_t data_bytes = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo& t = *tensors[i];
        const int type = choose_weight_type(t, requested_type);
        const uint64_t n = weight_nbytes(t, type);
        if (n == 0 && t.numel() != 0) {
            return Status::Error("tensor " + quote_name(t.name) + " cannot be stored as " +
                                 ggml_type_name(static_cast<ggml_type>(type)));
        }
        std::string short_name = t.name;
        if (short_name.size() >= GGML_MAX_NAME) {
            short_name = "ggdiff.t" + std::to_string(i);
            while (short_names.count(short_name)) short_name += "_";
            short_names.insert(short_name);
        }
        std::vector<int64_t> ne = folded_ne(t);
        while (ne.size() > 1 && ne.back() == 1) ne.pop_back();  // as ggml_n_dims()
        infos.str(short_name);
        infos.u32(static_cast<uint32_t>(ne.size()));
        for (int64_t d : ne) infos.i64(d);
        infos.u32(static_cast<uint32_t>(type));
        infos.u64(data_bytes);
        if (!checked_add(data_bytes, padded(n), &data_bytes)) {
            return Status::Error("the converted model would be too large");
        }
        types.push_back(type);
        sizes.push_back(n);
        names.push_back(t.name);
        shapes.push_back(shape_csv(t.shape));
    }

    HeaderWriter header;
    header.raw_magic();
    for (const auto& [key, value] : index.metadata()) {
        if (starts_with(key, "ggdiff.") || key == "general.alignment") continue;
        header.kv_str(key, value);
    }
    header.kv_u32("ggdiff.format_version", 1);
    header.kv_str("ggdiff.family", family);
    header.kv_str_array("ggdiff.tensor_names", names);
    header.kv_str_array("ggdiff.tensor_shapes", shapes);
    std::vector<uint8_t>& head = header.bytes();
    const uint64_t counts[2] = {tensors.size(), header.n_kv()};
    std::memcpy(head.data() + 8, counts, sizeof counts);
    head.insert(head.end(), infos.bytes().begin(), infos.bytes().end());
    head.resize(padded(head.size()), 0);
    GGDIFF_TRY((*out)->write(head.data(), head.size()));

    const std::vector<uint8_t> zeros(kAlignment, 0);
    std::vector<uint8_t> buf;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo& t = *tensors[i];
        const uint64_t n = sizes[i];
        buf.resize(n);
        GGDIFF_TRY(
            index.read(t, types[i], buf.data()).with_context("converting " + quote_name(out_path)));
        index.release(t);  // keeps RSS at about one tensor, not the whole model
        GGDIFF_TRY((*out)->write(buf.data(), n));
        GGDIFF_TRY((*out)->write(zeros.data(), padded(n) - n));
        if (progress) progress(i + 1, tensors.size(), t.name);
    }
    GGDIFF_TRY((*out)->commit());
    GGDIFF_LOG_INFO("wrote %s: %zu tensors, %.1f MiB", escape_text(out_path).c_str(),
                    tensors.size(), data_bytes / double(1 << 20));
    return Status::Ok();
}

}  // namespace ggdiff
