#include "io/dtype.h"

#include <ggml.h>

namespace ggdiff {

namespace {

struct DTypeEntry {
    DType type;
    const char* name;
    size_t size;
};

constexpr DTypeEntry kDTypes[] = {
    {DType::F64, "F64", 8},   {DType::F32, "F32", 4},         {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::F8_E4M3, "F8_E4M3", 1}, {DType::F8_E5M2, "F8_E5M2", 1},
    {DType::I64, "I64", 8},   {DType::I32, "I32", 4},         {DType::I16, "I16", 2},
    {DType::I8, "I8", 1},     {DType::U8, "U8", 1},           {DType::BOOL, "BOOL", 1},
    {DType::GGML, "GGML", 0},
};

}  // namespace

const char* dtype_name(DType t) {
    for (const DTypeEntry& e : kDTypes) {
        if (e.type == t) return e.name;
    }
    return "?";
}

bool parse_dtype(const std::string& s, DType* out) {
    for (const DTypeEntry& e : kDTypes) {
        if (e.type != DType::GGML && s == e.name) {
            *out = e.type;
            return true;
        }
    }
    return false;
}

size_t dtype_size(DType t) {
    for (const DTypeEntry& e : kDTypes) {
        if (e.type == t) return e.size;
    }
    return 0;
}

int dtype_to_ggml(DType t) {
    switch (t) {
        case DType::F64:
            return GGML_TYPE_F64;
        case DType::F32:
            return GGML_TYPE_F32;
        case DType::F16:
            return GGML_TYPE_F16;
        case DType::BF16:
            return GGML_TYPE_BF16;
        case DType::I64:
            return GGML_TYPE_I64;
        case DType::I32:
            return GGML_TYPE_I32;
        case DType::I16:
            return GGML_TYPE_I16;
        case DType::I8:
            return GGML_TYPE_I8;
        default:
            return -1;
    }
}

DType dtype_from_ggml(int ggml_type) {
    switch (ggml_type) {
        case GGML_TYPE_F64:
            return DType::F64;
        case GGML_TYPE_F32:
            return DType::F32;
        case GGML_TYPE_F16:
            return DType::F16;
        case GGML_TYPE_BF16:
            return DType::BF16;
        case GGML_TYPE_I64:
            return DType::I64;
        case GGML_TYPE_I32:
            return DType::I32;
        case GGML_TYPE_I16:
            return DType::I16;
        case GGML_TYPE_I8:
            return DType::I8;
        default:
            return DType::GGML;
    }
}

bool dtype_is_float(DType t) {
    switch (t) {
        case DType::F64:
        case DType::F32:
        case DType::F16:
        case DType::BF16:
        case DType::F8_E4M3:
        case DType::F8_E5M2:
            return true;
        default:
            return false;
    }
}

}  // namespace ggdiff
