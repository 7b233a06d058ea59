// PuLID-FLUX (v0.9.0 / v0.9.1 weights): identity cross-attention modules between the FLUX.1
// DiT's blocks, as stable-diffusion.cpp runs them. Module k ("pulid_ca.<k>.", the original
// PerceiverAttentionCA) follows every 2nd double block (0, 2, 4, ...) and then every 4th single
// block (0, 4, 8, ...): 10 + 10 = 20 at FLUX.1's 19 + 38 blocks. Each lets the image tokens
// attend to the identity tokens of a person (a precomputed embedding of 32 tokens of 2048, the
// .pulidembd GGUF that stable-diffusion.cpp's script/pulid_extract_id.py writes):
//   img += weight * to_out(attention(to_q(LN2(img)), to_kv(LN1(id)) split in k, v))
// with 16 heads of 128, LayerNorms with affine weight and bias (eps 1e-5) and linears without
// bias. In a single block only the image tokens (those after the text) are queried and changed.
// The id-embedding extractor itself (InsightFace, EVA-CLIP, IDFormer) is not part of this.
#pragma once

#include <cstdint>
#include <string>

#include "core/host_tensor.h"
#include "core/status.h"
#include "families/flux/dit.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct PulidConfig {
    std::string prefix;  // the modules' names: "<prefix><k>.to_q.weight", ...
    int modules = 0;
    int64_t hidden = 3072;  // the DiT's width (to_q's input, to_out's output)
    int64_t id_dim = 2048;  // identity token width (norm1, to_kv's input)
    int64_t inner = 2048;   // heads * head width
    int heads = 16;
    int double_interval = 2;  // a module after double blocks 0, 2, 4, ...
    int single_interval = 4;  // then after single blocks 0, 4, 8, ...

    // How many modules a DiT of `depth` double and `single` single blocks has.
    int modules_for(int depth, int single) const {
        return (depth + double_interval - 1) / double_interval +
               (single + single_interval - 1) / single_interval;
    }
};

// Reads the modules' widths under `file_prefix` (the --pulid-weights file's role prefix) and
// checks them against the DiT: as many modules as its blocks need, to_q taking its width. v1.1
// files (id_adapter_attn_layers.*) are refused as not supported yet, as the reference does.
Result<PulidConfig> detect_pulid(const TensorIndex& index, const std::string& file_prefix,
                                 const FluxConfig& flux);

// The identity one denoiser call injects: tokens [id_dim, T, 1] (shared by the batch) and the
// scale of what the modules add.
struct FluxIdentity {
    const PulidConfig* cfg = nullptr;
    ggml_tensor* tokens = nullptr;
    float weight = 1.0f;
};

// img [hidden, T, N] plus weight times module `k`'s cross-attention to the identity.
ggml_tensor* pulid_inject(nn::Ctx& c, const FluxIdentity& id, int k, ggml_tensor* img);

// The identity embedding of a .pulidembd file (GGUF; any file ggdiff reads works): tensor
// "pulid_id" of torch shape (tokens, cfg.id_dim), F16, BF16, F32 or quantized, as
// [id_dim, tokens, 1] floats. Errors name the file and what is wrong with it.
Result<HostTensor> load_pulid_embedding(const std::string& path, const PulidConfig& cfg);

}  // namespace ggdiff::models
