// LoRA key helpers the DiT families share (SD3's MMDiT, FLUX.2): the keys one module answers
// to in the original naming (kohya "lora_unet_", ComfyUI "diffusion_model.", bare,
// stable-diffusion.cpp's converted files) and in diffusers naming (PEFT "transformer.",
// OneTrainer, SimpleTuner "lycoris_"), the row slices of a fused q/k/v weight that split-form
// LoRAs patch (and the reverse), and the (shift, scale) <-> (scale, shift) swap of a final
// modulation stored both ways. Keys are in normalize_lora_key's form (dots as underscores).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/lora_names.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff::dit_lora {

// Keys of `path` (a module path relative to the DiT) in the original and diffusers namings.
void original_keys(const std::string& path, std::vector<std::string>* keys);
void diffusers_keys(const std::string& path, std::vector<std::string>* keys);

void add_row_keys(const std::vector<std::string>& keys, const std::vector<LoraRows>& rows,
                  std::vector<LoraRowKey>* out);
// The (shift, scale) <-> (scale, shift) halves of a modulation with `rows` rows.
std::vector<LoraRows> swapped_halves(int64_t rows);

// A final modulation stored (shift, scale) as `shift_scale` in the original files and
// (scale, shift) as `scale_shift` where a diffusers file was loaded (diffusers names it
// `diffusers_name`): the swapped row keys of the other form for `path`. False: `path` is
// neither.
bool swapped_modulation_row_keys(const std::string& path, int64_t rows, const char* shift_scale,
                                 const char* scale_shift, const char* diffusers_name,
                                 std::vector<LoraRowKey>* out);

// A fused q/k/v linear of one block: its original name ("img_attn.qkv") and the original
// names of its split form ("img_attn.q", ...).
struct FusedQkv {
    const char* original;
    const char* split[3];
};
// For `rest` (a member path inside original block `block`, diffusers block `dblock`) of a
// weight with `rows` output rows: the fused weight takes a third from each of diffusers' split
// q, k, v (named by `diffusers_member` from the original split name); a split weight takes its
// third of a fused-form LoRA's output. False: `rest` is none of `fused`.
bool fused_qkv_row_keys(const std::string& rest, int64_t rows, const std::string& block,
                        const std::string& dblock, const std::vector<FusedQkv>& fused,
                        const std::function<const char*(const char*)>& diffusers_member,
                        std::vector<LoraRowKey>* out);

// The LoRA target of a DiT whose weights sit under `prefix`: `keys` and `row_keys` take the
// weight's name relative to the DiT.
LoraTarget dit_lora_target(ModuleRunner& runner, const char* label, const std::string& prefix,
                           std::vector<std::string> (*keys)(const std::string& weight),
                           std::vector<LoraRowKey> (*row_keys)(const std::string& weight,
                                                               const std::vector<int64_t>& shape));

}  // namespace ggdiff::dit_lora
