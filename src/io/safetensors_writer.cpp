#include "io/safetensors_writer.h"

#include <ggml.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "core/checked_math.h"
#include "core/log.h"
#include "core/output_file.h"
#include "core/safe_text.h"
#include "io/name_util.h"
#include "io/weight_type.h"

namespace ggdiff {

namespace {

// safetensors' spelling of a plain ggml type; nullptr for quantized types.
const char* safetensors_dtype(int type) {
    switch (type) {
        case GGML_TYPE_F32:
            return "F32";
        case GGML_TYPE_F16:
            return "F16";
        case GGML_TYPE_BF16:
            return "BF16";
        case GGML_TYPE_F64:
            return "F64";
        case GGML_TYPE_I64:
            return "I64";
        case GGML_TYPE_I32:
            return "I32";
        case GGML_TYPE_I16:
            return "I16";
        case GGML_TYPE_I8:
            return "I8";
        default:
            return nullptr;
    }
}

}  // namespace

Status convert_to_safetensors(const TensorIndex& index, const std::string& out_path,
                              int requested_type, const ConvertProgress& progress,
                              const std::string& family) {
    if (requested_type >= 0 && !safetensors_dtype(requested_type)) {
        return Status::Error(std::string("--type ") + weight_type_name(requested_type) +
                             ": safetensors files hold no quantized types; write a .gguf file");
    }
    auto out = AtomicFile::create(out_path);
    if (!out.ok()) return out.status().with_context("cannot create " + quote_name(out_path));

    std::vector<const TensorInfo*> tensors;
    for (const TensorInfo& t : index.tensors()) {
        if (!starts_with(t.name, "model_ema.")) tensors.push_back(&t);
    }
    if (tensors.empty()) return Status::Error("nothing to convert: no tensors indexed");

    // nlohmann's objects are sorted maps, which is fine: offsets say where each tensor is.
    nlohmann::json header = nlohmann::json::object();
    nlohmann::json meta = nlohmann::json::object();
    for (const auto& [key, value] : index.metadata()) {
        if (!starts_with(key, "ggdiff.")) meta[key] = value;
    }
    meta["ggdiff.family"] = family;
    header["__metadata__"] = meta;
    std::vector<int> types;
    std::vector<uint64_t> sizes;
    uint64_t data_bytes = 0;
    for (const TensorInfo* t : tensors) {
        const int type = choose_weight_type(*t, requested_type);
        const char* dtype = safetensors_dtype(type);
        const uint64_t n = weight_nbytes(*t, type);
        if (!dtype || (n == 0 && t->numel() != 0)) {
            return Status::Error("tensor " + quote_name(t->name) + " cannot be stored as " +
                                 weight_type_name(type) + " in a safetensors file");
        }
        const uint64_t begin = data_bytes;
        if (!checked_add(data_bytes, n, &data_bytes)) {
            return Status::Error("the converted model would be too large");
        }
        header[t->name] = {
            {"dtype", dtype}, {"shape", t->shape}, {"data_offsets", {begin, data_bytes}}};
        types.push_back(type);
        sizes.push_back(n);
    }
    std::string text = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    text.resize((text.size() + 7) / 8 * 8, ' ');  // data 8-byte aligned, as others write it
    const uint64_t n = text.size();
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>((n >> (8 * i)) & 0xff);
    GGDIFF_TRY((*out)->write(len, 8));
    GGDIFF_TRY((*out)->write(text.data(), text.size()));

    std::vector<uint8_t> buf;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo& t = *tensors[i];
        buf.resize(sizes[i]);
        GGDIFF_TRY(
            index.read(t, types[i], buf.data()).with_context("converting " + quote_name(out_path)));
        index.release(t);
        GGDIFF_TRY((*out)->write(buf.data(), sizes[i]));
        if (progress) progress(i + 1, tensors.size(), t.name);
    }
    GGDIFF_TRY((*out)->commit());
    GGDIFF_LOG_INFO("wrote %s: %zu tensors, %.1f MiB", escape_text(out_path).c_str(),
                    tensors.size(), data_bytes / double(1 << 20));
    return Status::Ok();
}

}  // namespace ggdiff
