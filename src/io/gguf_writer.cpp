#include "io/gguf_writer.h"

#include <ggml.h>
#include <gguf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "core/log.h"
#include "io/model_info.h"
#include "io/name_util.h"
#include "io/weight_type.h"

namespace ggdiff {

namespace {

struct GgufFree {
    void operator()(gguf_context* c) const { gguf_free(c); }
};
struct GgmlFree {
    void operator()(ggml_context* c) const { ggml_free(c); }
};

// Output file that is removed unless committed.
class TempFile {
  public:
    explicit TempFile(std::string final_path)
        : final_(std::move(final_path)),
          tmp_(final_ + ".tmp." + std::to_string(static_cast<long>(getpid()))) {}
    ~TempFile() {
        if (f_) std::fclose(f_);
        if (!committed_) std::remove(tmp_.c_str());
    }
    Status open() {
        f_ = std::fopen(tmp_.c_str(), "wb");
        if (!f_) return Status::Error("cannot create " + tmp_ + ": " + std::strerror(errno));
        return Status::Ok();
    }
    FILE* get() const { return f_; }
    Status write(const void* data, size_t n) {
        if (n && std::fwrite(data, 1, n, f_) != n) {
            return Status::Error("write to " + tmp_ + " failed: " + std::strerror(errno));
        }
        return Status::Ok();
    }
    Status commit() {
        if (std::fflush(f_) != 0 || fsync(fileno(f_)) != 0) {
            return Status::Error("flush of " + tmp_ + " failed: " + std::strerror(errno));
        }
        const int rc = std::fclose(f_);
        f_ = nullptr;
        if (rc != 0) return Status::Error("close of " + tmp_ + " failed: " + std::strerror(errno));
        if (std::rename(tmp_.c_str(), final_.c_str()) != 0) {
            return Status::Error("cannot rename " + tmp_ + " to " + final_ + ": " +
                                 std::strerror(errno));
        }
        committed_ = true;
        return Status::Ok();
    }

  private:
    std::string final_;
    std::string tmp_;
    FILE* f_ = nullptr;
    bool committed_ = false;
};

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
                       const ConvertProgress& progress) {
    // EMA copies of the UNet in training checkpoints are never used for inference.
    std::vector<TensorInfo> tensors;
    for (const TensorInfo& t : index.tensors()) {
        if (!starts_with(t.name, "model_ema.")) tensors.push_back(t);
    }
    if (tensors.size() != index.size()) {
        GGDIFF_LOG_INFO("convert: skipping %zu model_ema.* tensors", index.size() - tensors.size());
    }
    if (tensors.empty()) return Status::Error("nothing to convert: no tensors indexed");

    ggml_init_params params{};
    params.mem_size = (tensors.size() + 1) * ggml_tensor_overhead();
    params.no_alloc = true;
    std::unique_ptr<ggml_context, GgmlFree> ctx(ggml_init(params));
    std::unique_ptr<gguf_context, GgufFree> gguf(gguf_init_empty());
    if (!ctx || !gguf) return Status::Error("out of memory creating the GGUF context");

    for (const auto& [key, value] : index.metadata()) {
        if (starts_with(key, "ggdiff.") || key == "general.alignment") continue;
        gguf_set_val_str(gguf.get(), key.c_str(), value.c_str());
    }
    gguf_set_val_u32(gguf.get(), "ggdiff.format_version", 1);
    gguf_set_val_str(gguf.get(), "ggdiff.family", detect_family(index).c_str());

    std::set<std::string> short_names;
    for (const TensorInfo& t : tensors) {
        if (t.name.size() < GGML_MAX_NAME) short_names.insert(t.name);
    }
    std::vector<std::string> shapes;
    std::vector<const char*> name_ptrs, shape_ptrs;
    std::vector<int> types;
    shapes.reserve(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo& t = tensors[i];
        const int type = choose_weight_type(t, requested_type);
        if (weight_nbytes(t, type) == 0 && t.numel() != 0) {
            return Status::Error("tensor '" + t.name + "' cannot be stored as " +
                                 ggml_type_name(static_cast<ggml_type>(type)));
        }
        types.push_back(type);
        std::string short_name = t.name;
        if (short_name.size() >= GGML_MAX_NAME) {
            short_name = "ggdiff.t" + std::to_string(i);
            while (short_names.count(short_name)) short_name += "_";
            short_names.insert(short_name);
        }
        const std::vector<int64_t> ne = folded_ne(t);
        ggml_tensor* gt = ggml_new_tensor(ctx.get(), static_cast<ggml_type>(type),
                                          static_cast<int>(ne.size()), ne.data());
        ggml_set_name(gt, short_name.c_str());
        gguf_add_tensor(gguf.get(), gt);
        shapes.push_back(shape_csv(t.shape));
        name_ptrs.push_back(t.name.c_str());
    }
    for (const std::string& s : shapes) shape_ptrs.push_back(s.c_str());
    gguf_set_arr_str(gguf.get(), "ggdiff.tensor_names", name_ptrs.data(), name_ptrs.size());
    gguf_set_arr_str(gguf.get(), "ggdiff.tensor_shapes", shape_ptrs.data(), shape_ptrs.size());

    TempFile out(out_path);
    GGDIFF_TRY(out.open());
    if (!gguf_write_to_file_ptr(gguf.get(), out.get(), /*only_meta=*/true)) {
        return Status::Error("writing the GGUF header of " + out_path + " failed");
    }
    const size_t alignment = gguf_get_alignment(gguf.get());
    const std::vector<uint8_t> zeros(alignment, 0);
    std::vector<uint8_t> buf;
    uint64_t pos = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo& t = tensors[i];
        const uint64_t n = weight_nbytes(t, types[i]);
        if (pos != gguf_get_tensor_offset(gguf.get(), static_cast<int64_t>(i))) {
            return Status::Error("internal error: GGUF data offset mismatch at '" + t.name + "'");
        }
        buf.resize(n);
        GGDIFF_TRY(index.read(t, types[i], buf.data()).with_context("converting " + out_path));
        index.release(t);  // keeps RSS at about one tensor, not the whole model
        GGDIFF_TRY(out.write(buf.data(), n));
        const size_t pad = (alignment - n % alignment) % alignment;
        GGDIFF_TRY(out.write(zeros.data(), pad));
        pos += n + pad;
        if (progress) progress(i + 1, tensors.size(), t.name);
    }
    GGDIFF_TRY(out.commit());
    GGDIFF_LOG_INFO("wrote %s: %zu tensors, %.1f MiB", out_path.c_str(), tensors.size(),
                    pos / double(1 << 20));
    return Status::Ok();
}

}  // namespace ggdiff
