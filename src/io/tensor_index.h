// TensorIndex: every tensor of a model, from one or more checkpoint files, under
// canonical (LDM-layout) names. Data stays in the mmap'd files until read().
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/dtype.h"
#include "io/model_layout.h"

namespace ggdiff {

class MappedFile;

struct TensorInfo {
    std::string name;          // canonical name (prefix + normalized layout)
    std::string source_name;   // name as stored in the file
    DType dtype = DType::F32;  // storage type in the file
    // The ggml_type of the stored bytes, or -1 when ggml has none (F8_*, U8, BOOL).
    // Always set for GGUF tensors; dtype is DType::GGML for quantized ones.
    int ggml_type = -1;
    std::vector<int64_t> shape;  // torch order: outermost first
    size_t file = 0;             // index into TensorIndex::files()
    uint64_t offset = 0;         // absolute byte offset of the data in the file
    uint64_t nbytes = 0;         // bytes in the file

    int64_t numel() const;
    // ggml order (innermost first), padded to at least 1 dim; may exceed 4 dims (Wan's
    // 5-D conv3d kernels), which the model code folds as it needs.
    std::vector<int64_t> ne() const;
};

// Which component a canonical tensor belongs to (for sizes, placement and detection):
// Diffusion for "model.diffusion_model.", TextEncoder for "cond_stage_model.",
// "conditioner." and "text_encoders.", Vae for "first_stage_model." and "taesd.", else Other.
enum class Component { Diffusion, TextEncoder, Vae, Other };
Component component_of(const std::string& canonical_name);
const char* component_name(Component c);

class TensorIndex {
  public:
    TensorIndex();
    // An index that also knows these families' own diffusion-model names (bare files, converted
    // layouts, diffusers pipelines). Model files are opened through the family registry's
    // model_index(), which passes every family's; a plain TensorIndex() knows only the layouts
    // several families share (LoRA files, tests of io itself).
    explicit TensorIndex(ModelLayouts layouts);
    ~TensorIndex();
    TensorIndex(TensorIndex&&) noexcept;
    TensorIndex& operator=(TensorIndex&&) noexcept;

    // Adds a .safetensors or .gguf file, or a diffusers folder, under a role prefix
    // ("" for -m full checkpoints, "model.diffusion_model." for --diffusion-model,
    // "first_stage_model." for --vae, ...). Names are normalized to the canonical
    // layout (see io/name_map.h). Fails with a message naming the file and the problem,
    // leaving the index unchanged. Reads only headers: tensor data stays unread in the
    // mmap until raw()/read().
    //
    // A file added under a non-empty prefix replaces every tensor already indexed under
    // that prefix (so --vae overrides the checkpoint's VAE); other duplicates are
    // replaced by the later file with a warning.
    //
    // A diffusers pipeline folder (model_index.json) added with prefix "" contributes
    // unet/ (model.diffusion_model.), vae/ (first_stage_model.) and text_encoder/
    // (cond_stage_model.transformer., or conditioner.embedders.0/1.transformer. when a
    // text_encoder_2/ exists); a transformer pipeline (FLUX, SD3) contributes transformer/
    // (model.diffusion_model.), vae/, text_encoder/ (text_encoders.clip_l.) and
    // text_encoder_2/ (text_encoders.t5xxl., or clip_g. when text_encoder_3/ holds the T5);
    // with a role prefix only the matching subfolder is used.
    // A component folder (diffusion_pytorch_model.safetensors or model.safetensors,
    // optionally .fp16 or sharded with an .index.json) is added like a single file.
    Status add(const std::string& path, const std::string& prefix = "");

    const TensorInfo* find(const std::string& name) const;
    bool has(const std::string& name) const { return find(name) != nullptr; }
    // Whether any tensor's name starts with `prefix` (a part is present: "text_encoders.t5xxl.").
    bool has_prefix(const std::string& prefix) const;
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    size_t size() const { return tensors_.size(); }
    const std::vector<std::string>& files() const { return paths_; }
    // String metadata (safetensors __metadata__, GGUF string KVs).
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    // Raw stored bytes (mmap'd), valid while the index lives.
    const uint8_t* raw(const TensorInfo& t) const;
    // Lets the OS drop the tensor's file pages from this process (after uploading it
    // somewhere else); later reads fetch them from the file again.
    void release(const TensorInfo& t) const;

    // Reads a tensor converted to `type` (a ggml_type value: F32, F16, BF16 or a
    // quantized type whose block size divides ne[0]) into dst, which must hold
    // ggml_row_size(type, ne[0]) * rows bytes.
    Status read(const TensorInfo& t, int type, void* dst) const;
    // Convenience: the tensor as floats.
    Status read_f32(const TensorInfo& t, std::vector<float>& out) const;

  private:
    std::vector<TensorInfo> tensors_;
    std::map<std::string, size_t> by_name_;
    std::vector<std::string> paths_;
    std::vector<std::unique_ptr<MappedFile>> maps_;
    std::map<std::string, std::string> metadata_;
    ModelLayouts layouts_;
    friend class TensorIndexBuilder;
};

// Canonical prefixes for the CLI's file roles (case-insensitive, '-' == '_'):
//   model            ""                       full checkpoint, LDM names
//   diffusion-model  "model.diffusion_model."
//   vae              "first_stage_model."
//   taesd            "taesd."
//   clip_l           "text_encoders.clip_l."  HF CLIP layout: text_model.*
//   clip_g           "text_encoders.clip_g."  HF CLIP layout, + text_projection.weight
//   t5xxl            "text_encoders.t5xxl."   HF T5 encoder: encoder.*, shared.weight
//   llm              "text_encoders.llm."     HF causal LM: model.*
//   clip_vision      "clip_vision."
//   control-net      "control_model."
//   upscale-model    "upscaler."
// Any other role R gives "R.".
std::string prefix_for_role(const std::string& role);

}  // namespace ggdiff
