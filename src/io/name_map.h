// Tensor-name normalization: stored names (diffusers/HF, open_clip, LDM, with or
// without wrapper prefixes) -> canonical LDM-layout names under a role prefix.
//
// Canonical layout:
//   UNet (SD1/SD2/SDXL)   model.diffusion_model.{input_blocks,middle_block,output_blocks,...}
//   VAE                   first_stage_model.{encoder,decoder}.{down,mid,up}...  Attention
//                         weights keep their stored shape: [C,C,1,1] (LDM) or [C,C] (diffusers).
//                         The Wan VAE: its original names (conv1, decoder.upsamples.N, ...);
//                         diffusers AutoencoderKLWan files (Wan 2.1 layout) are renamed.
//   CLIP text encoders    HF CLIPTextModel layout "<te>.transformer.text_model.*" for the
//                         checkpoint's own encoders (<te> = cond_stage_model or
//                         conditioner.embedders.N), "<role prefix>text_model.*" for separate
//                         files. open_clip models (SD2, SDXL's bigG) are renamed to the same
//                         HF names; a fused attn.in_proj_{weight,bias} becomes q/k/v_proj
//                         slices. open_clip's text_projection is kept as "text_projection"
//                         (open_clip orientation [width, proj], applied as x @ P), unlike HF's
//                         "text_projection.weight" ([proj, width], x @ W^T).
//   ControlNet            control_model.{time_embed,input_blocks,middle_block,input_hint_block,
//                         zero_convs,middle_block_out}: original layout, with or without its own
//                         "control_model." prefix; diffusers ControlNetModel files are renamed.
//   A family's own DiT    model.diffusion_model.<its original names>; other forms (diffusers)
//                         are renamed by the family's ModelLayout (io/model_layout.h), which
//                         lives in its folder (src/families/<family>/names.cpp)
//   Text encoders of DiT  text_encoders.<clip_l|clip_g|t5xxl>.<HF names>: a full checkpoint's
//   checkpoints           "text_encoders.X.transformer." wrapper is dropped; its "vae." VAE
//                         becomes first_stage_model.
//   Language models       HF causal-LM layout "<role prefix>model.*"; llama.cpp GGUF names
//                         (token_embd, blk.N.*) are renamed to it.
//   ESRGAN upscalers      upscaler.<BasicSR / Real-ESRGAN RRDBNet names> (conv_first, body.N.rdbK.
//                         convJ, conv_body, conv_up1/2, conv_hr, conv_last); the original
//                         ESRGAN names (model.0, model.1.sub.N.RDBk.convj.0, ...) are renamed.
//   CLIP vision towers    HF CLIPVisionModel layout "clip_vision.vision_model.*" (and
//                         "clip_vision.visual_projection.weight"), as ComfyUI's clip_vision
//                         files hold it; open_clip "visual.*" names (with or without a
//                         "model." wrapper) are renamed to it, fused in_proj split, and the
//                         "pre_layernorm" spelling becomes HF's "pre_layrnorm".
//   Anything else         kept as stored, under the role prefix.
#pragma once

#include <string>
#include <vector>

#include "io/model_layout.h"

namespace ggdiff {

// One canonical tensor made from a stored one: all of it, or slice `part` of `parts`
// equal slices along the outermost (torch dim 0) dimension.
struct NameMapping {
    size_t source = 0;  // index into the stored names
    std::string name;   // canonical name
    int part = 0;
    int parts = 1;
};

// Maps the names of one file added under `prefix` (see prefix_for_role). Names that a
// role file carries for other components (a full checkpoint given as --vae) are dropped.
// `notes`, if given, receives what was done ("diffusers UNet layout renamed to LDM",
// "ignored 12 tensors outside 'first_stage_model.'", ...). `layouts`: the families' own
// diffusion-model names (families/registry.h: model_layouts()); without them only the
// shared layouts (UNet, VAE, text encoders) are known.
std::vector<NameMapping> map_tensor_names(const std::vector<std::string>& names,
                                          const std::string& prefix,
                                          std::vector<std::string>* notes = nullptr,
                                          const ModelLayouts& layouts = {});

// Layout converters, exposed for tests. Each returns false when the name is not part of
// the layout (the caller keeps it unchanged).
class DiffusersUnetMap {
  public:
    static bool detect(const std::vector<std::string>& names);
    explicit DiffusersUnetMap(const std::vector<std::string>& names);
    bool map(const std::string& name, std::string* out) const;

  private:
    int down_resnets_ = 2;       // resnets per down level
    int up_resnets_ = 3;         // resnets per up level
    std::vector<bool> up_attn_;  // up level has attentions
};

class DiffusersVaeMap {
  public:
    static bool detect(const std::vector<std::string>& names);
    explicit DiffusersVaeMap(const std::vector<std::string>& names);
    bool map(const std::string& name, std::string* out) const;

  private:
    int up_levels_ = 4;
};

// diffusers AutoencoderKLWan in the Wan 2.1 layout (Wan 2.1, Qwen Image) -> the original Wan
// VAE names (conv1, conv2, {encoder,decoder}.conv1, .downsamples.N, .upsamples.N, .middle.K,
// .head.K; name_map_wan_vae.cpp has the table). detect: the diffusers names of any Wan VAE
// (RMS-norm gammas in a mid_block); grouped: Wan 2.2's layout (blocks in groups, as the
// original Wan 2.2 names group them).
class DiffusersWanVaeMap {
  public:
    static bool detect(const std::vector<std::string>& names);
    static bool grouped(const std::vector<std::string>& names);
    explicit DiffusersWanVaeMap(const std::vector<std::string>& names);
    bool map(const std::string& name, std::string* out) const;

  private:
    bool map_grouped(const std::string& coder, const std::string& rest, std::string* out) const;

    bool grouped_ = false;
    std::vector<int> up_resnets_;    // resnets per up block (the upsampler follows them)
    std::vector<int> down_resnets_;  // resnets per down block (Wan 2.2)
    std::vector<int> up_first_;      // Wan 2.1: original index of each up block's first block
};

// open_clip text tower name (without the "model." wrapper) -> HF CLIP name(s). A fused
// in_proj yields three names (q, k, v) in order.
// diffusers ControlNetModel -> original ControlNet names (the UNet half as the UNet).
class DiffusersControlNetMap {
  public:
    static bool detect(const std::vector<std::string>& names);
    explicit DiffusersControlNetMap(const std::vector<std::string>& names);
    bool map(const std::string& name, std::string* out) const;

  private:
    DiffusersUnetMap unet_;
};

bool openclip_to_hf(const std::string& name, std::vector<std::string>* out);
bool is_openclip_layout(const std::vector<std::string>& names);

// open_clip vision tower ("visual.conv1.weight", "visual.transformer.resblocks.N.attn.
// in_proj_weight", ...) -> HF CLIPVisionModel names ("vision_model.embeddings.patch_embedding.
// weight", "vision_model.encoder.layers.N.self_attn.q_proj.weight", ...; a fused in_proj
// yields q, k, v in order). "visual.proj" is not renamed (open_clip stores it transposed).
bool is_openclip_vision_layout(const std::vector<std::string>& names);
bool openclip_vision_to_hf(const std::string& name, std::vector<std::string>* out);

// llama.cpp GGUF names of a Qwen-family LM ("token_embd.weight", "blk.N.attn_q.weight", ...)
// -> HF names ("model.embed_tokens.weight", "model.layers.N.self_attn.q_proj.weight", ...).
bool is_llama_gguf_layout(const std::vector<std::string>& names);
bool llama_gguf_to_hf(const std::string& name, std::string* out);
// The same for a Gemma 2 / 3 GGUF (its layers have "post_ffw_norm"): "ffn_norm" is the norm
// before the MLP ("pre_feedforward_layernorm"), "post_attention_norm" and "post_ffw_norm" the
// norms after attention and the MLP. The norm weights keep llama.cpp's added 1.
bool is_llama_gemma_gguf_layout(const std::vector<std::string>& names);
bool llama_gemma_gguf_to_hf(const std::string& name, std::string* out);

// llama.cpp's mmproj GGUF names of a Qwen2.5-VL vision tower ("v.blk.N.attn_q.weight",
// "v.patch_embd.weight(.1)", "v.post_ln.weight", "mm.0.weight", ...) -> the HF names under
// "visual." ("blocks.N.attn.q_proj.weight", "patch_embed.proj.0/1.weight", "merger.ln_q...",
// "merger.mlp.0...").
// The original ESRGAN (RRDB_ESRGAN_x4.pth, many community upscalers) Sequential names ->
// BasicSR's RRDBNet names: model.0 = conv_first, model.1.sub.N.RDBk.convj.0 =
// body.N.rdbk.convj, model.1.sub.<num_block> = conv_body, and the learned layers after the
// body by their index (x1: 2 conv_hr, 4 conv_last; x2: 3 conv_up1, 5 conv_hr, 7 conv_last;
// x4: 3 conv_up1, 6 conv_up2, 8 conv_hr, 10 conv_last).
bool is_old_esrgan_layout(const std::vector<std::string>& names);
bool old_esrgan_to_basicsr(const std::string& name, std::string* out);

bool is_mmproj_layout(const std::vector<std::string>& names);
bool mmproj_to_hf(const std::string& name, std::string* out);

}  // namespace ggdiff
