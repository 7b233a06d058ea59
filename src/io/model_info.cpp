#include "io/model_info.h"

#include <ggml.h>

#include "core/log.h"
#include "core/safe_text.h"
#include "io/name_util.h"

namespace ggdiff {

namespace {

constexpr const char* kUnet = "model.diffusion_model.";

// Width of the UNet's cross-attention context (attn2.to_k takes [dim, context]).
int unet_context_dim(const TensorIndex& index) {
    for (const TensorInfo& t : index.tensors()) {
        if (starts_with(t.name, kUnet) && ends_with(t.name, ".attn2.to_k.weight") &&
            t.shape.size() == 2) {
            return static_cast<int>(t.shape[1]);
        }
    }
    return 0;
}

std::string type_label(const TensorInfo& t) {
    if (t.dtype == DType::GGML && t.ggml_type >= 0 && t.ggml_type < GGML_TYPE_COUNT) {
        return ggml_type_name(static_cast<ggml_type>(t.ggml_type));
    }
    return dtype_name(t.dtype);
}

std::string human_bytes(uint64_t b) {
    if (b >= (1ull << 30)) return string_format("%.2f GiB", b / double(1ull << 30));
    if (b >= (1ull << 20)) return string_format("%.1f MiB", b / double(1ull << 20));
    if (b >= (1ull << 10)) return string_format("%.1f KiB", b / double(1ull << 10));
    return string_format("%llu B", (unsigned long long)b);
}

}  // namespace

ModelInfo summarize(const TensorIndex& index) {
    ModelInfo info;
    info.tensor_count = index.size();
    info.files = index.files();
    info.context_dim = unet_context_dim(index);
    const std::string uncond = prefix_for_role("uncond-diffusion-model");
    for (const TensorInfo& t : index.tensors()) {
        if (t.name.rfind(uncond, 0) == 0) info.uncond_diffusion_bytes += t.nbytes;
        ++info.dtype_histogram[type_label(t)];
        info.component_bytes[static_cast<size_t>(component_of(t.name))] += t.nbytes;
        info.total_bytes += t.nbytes;
    }
    return info;
}

std::string format_model_info(const ModelInfo& info) {
    std::string s;
    for (const std::string& f : info.files) s += "file:        " + escape_text(f) + "\n";
    std::string note = info.family_note;
    if (info.context_dim) {
        note += string_format("%scontext width %d", note.empty() ? "" : ", ", info.context_dim);
    }
    s += "family:      " + info.family + (note.empty() ? "" : " (" + note + ")") + "\n";
    for (size_t i = 0; i < info.looked_for.size(); ++i) {
        s += (i == 0 ? "looked for:  " : "             ") + info.looked_for[i] + "\n";
    }
    s += string_format("tensors:     %zu\n", info.tensor_count);
    s += "types:      ";
    for (const auto& [name, count] : info.dtype_histogram) {
        s += string_format(" %s=%zu", name.c_str(), count);
    }
    s += "\n";
    s += "bytes:       " + human_bytes(info.total_bytes) + " total\n";
    for (Component c :
         {Component::Diffusion, Component::TextEncoder, Component::Vae, Component::Other}) {
        const uint64_t b = info.component_bytes[static_cast<size_t>(c)];
        if (b == 0 && c == Component::Other) continue;
        s += string_format("  %-14s %s\n", component_name(c), human_bytes(b).c_str());
        if (c == Component::Diffusion && info.uncond_diffusion_bytes) {
            s += string_format("    %-12s %s\n", "uncond DiT",
                               human_bytes(info.uncond_diffusion_bytes).c_str());
        }
    }
    return s;
}

}  // namespace ggdiff
