#include "io/weight_type.h"

#include <ggml.h>

#include <cctype>

#include "core/safe_text.h"
#include "io/name_util.h"
#include "io/tensor_convert.h"

namespace ggdiff {

namespace {

struct WeightTypeName {
    const char* name;
    ggml_type type;
};

constexpr WeightTypeName kWeightTypes[] = {
    {"f32", GGML_TYPE_F32},   {"f16", GGML_TYPE_F16},   {"bf16", GGML_TYPE_BF16},
    {"q8_0", GGML_TYPE_Q8_0}, {"q5_0", GGML_TYPE_Q5_0}, {"q5_1", GGML_TYPE_Q5_1},
    {"q4_0", GGML_TYPE_Q4_0}, {"q4_1", GGML_TYPE_Q4_1}, {"q4_k", GGML_TYPE_Q4_K},
    {"q5_k", GGML_TYPE_Q5_K}, {"q6_k", GGML_TYPE_Q6_K}, {"q3_k", GGML_TYPE_Q3_K},
    {"q2_k", GGML_TYPE_Q2_K},
};

std::string lower(const std::string& s) {
    std::string r;
    for (char c : s) r += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
}

bool contains(const std::string& s, const char* part) {
    return s.find(part) != std::string::npos;
}

// The module a parameter belongs to: "layer_norm1" for "...layers.0.layer_norm1.weight".
std::string module_of(const std::string& name) {
    const size_t last = name.rfind('.');
    if (last == std::string::npos) return name;
    const size_t prev = name.rfind('.', last - 1);
    return name.substr(prev == std::string::npos ? 0 : prev + 1,
                       last - (prev == std::string::npos ? 0 : prev + 1));
}

bool is_norm_or_bias(const std::string& name) {
    const std::string module = module_of(name);
    return ends_with(name, ".bias") || contains(module, "norm") || starts_with(module, "ln_") ||
           ends_with(name, ".scale") || ends_with(name, ".gamma") || ends_with(name, ".beta");
}

bool is_position_embedding(const std::string& name) {
    return contains(name, "position_embedding") || contains(name, "positional_embedding") ||
           contains(name, "pos_embed") || contains(name, "relative_attention_bias");
}

bool is_token_embedding(const std::string& name) {
    return contains(name, "token_embedding") || contains(name, "embed_tokens") ||
           ends_with(name, "shared.weight") || contains(name, "word_embeddings");
}

bool is_k_quant(int type) {
    return type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q3_K || type == GGML_TYPE_Q4_K ||
           type == GGML_TYPE_Q5_K || type == GGML_TYPE_Q6_K || type == GGML_TYPE_Q8_K;
}

int keep_type(const TensorInfo& t) {
    switch (t.dtype) {
        case DType::F64:
            return GGML_TYPE_F32;
        case DType::F8_E4M3:
        case DType::F8_E5M2:
            return GGML_TYPE_F16;
        case DType::U8:
        case DType::BOOL:
            return GGML_TYPE_F32;
        default:
            return t.ggml_type >= 0 ? t.ggml_type : GGML_TYPE_F32;
    }
}

bool row_fits(const TensorInfo& t, int type) {
    const int64_t ne0 = t.shape.empty() ? 1 : t.shape.back();
    return ne0 % ggml_blck_size(static_cast<ggml_type>(type)) == 0;
}

}  // namespace

Result<int> parse_weight_type(const std::string& name) {
    const std::string n = lower(name);
    for (const WeightTypeName& w : kWeightTypes) {
        if (n == w.name) return static_cast<int>(w.type);
    }
    std::string valid;
    for (const std::string& w : weight_type_names()) valid += (valid.empty() ? "" : ", ") + w;
    return Status::Error("unknown weight type " + quote_name(name) + " (valid: " + valid + ")");
}

std::vector<std::string> weight_type_names() {
    std::vector<std::string> out;
    for (const WeightTypeName& w : kWeightTypes) out.emplace_back(ggml_type_name(w.type));
    return out;
}

const char* weight_type_name(int type) {
    return ggml_type_name(static_cast<ggml_type>(type));
}

int choose_weight_type(const TensorInfo& t, int requested) {
    const bool is_int = !dtype_is_float(t.dtype) && t.dtype != DType::GGML;
    if (requested < 0 || is_int) return keep_type(t);
    const bool one_d = t.shape.size() <= 1;
    if (one_d) return GGML_TYPE_F32;
    if (!ggml_is_quantized(static_cast<ggml_type>(requested))) return requested;

    // A quantized request.
    if (is_norm_or_bias(t.name) || is_position_embedding(t.name) || t.numel() < 1024 ||
        t.shape.size() >= 4 || component_of(t.name) == Component::Vae) {
        return GGML_TYPE_F16;
    }
    if (is_token_embedding(t.name) && is_k_quant(requested)) {
        return row_fits(t, GGML_TYPE_Q8_0) ? GGML_TYPE_Q8_0 : GGML_TYPE_F16;
    }
    return row_fits(t, requested) ? requested : GGML_TYPE_F16;
}

uint64_t weight_nbytes(const TensorInfo& t, int type) {
    uint64_t n = 0;
    return ggml_nbytes_for(type, t.shape, &n) ? n : 0;
}

}  // namespace ggdiff
