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
// The keys of a weight ("<path>.weight") whose module path is the same in the original files
// and in diffusers (Lens, LTX-2): both namings' keys, each once; none for a non-weight.
std::vector<std::string> same_path_keys(const std::string& weight);

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

// One member of a FLUX-style DiT block (FLUX.1, FLUX.2) in diffusers and original naming;
// `norm`: an RMSNorm, whose diffusers ".weight" is the original ".scale".
struct Member {
    const char* diffusers;
    const char* original;
    bool norm = false;
};
// A table of members (any array of Member converts).
class Members {
  public:
    template <size_t K>
    Members(const Member (&table)[K]) : first_(table), count_(K) {}  // NOLINT: implicit
    const Member* begin() const { return first_; }
    const Member* end() const { return first_ + count_; }

  private:
    const Member* first_;
    size_t count_;
};
// The tables of a FLUX-style DiT: diffusers transformer_blocks.N / original double_blocks.N,
// single_transformer_blocks.N / single_blocks.N, and the top level.
struct BlockNames {
    Members double_blocks, single_blocks, top;
};

// A diffusers name relative to a block (or the top) -> the original one, by `table`.
bool original_member(const std::string& rest, const Members& table, std::string* out);
// The diffusers name of original member `original` (not a norm), or null.
const char* diffusers_member(const std::string& original, const Members& table);
// A whole diffusers DiT name -> the original one.
bool diffusers_to_original(const std::string& name, const BlockNames& names, std::string* out);
// The whole-weight LoRA keys of `weight` (an original name relative to the DiT, ending in
// ".weight"): its original keys and, where the weight is one diffusers linear as it is, the
// diffusers keys (fused weights are row keys, not listed here).
std::vector<std::string> block_lora_keys(const std::string& weight, const BlockNames& names);

// The LoRA target of a DiT whose weights sit under `prefix`: `keys` and `row_keys` take the
// weight's name relative to the DiT; `row_keys` may be null (no row keys).
LoraTarget dit_lora_target(ModuleRunner& runner, const char* label, const std::string& prefix,
                           std::vector<std::string> (*keys)(const std::string& weight),
                           std::vector<LoraRowKey> (*row_keys)(const std::string& weight,
                                                               const std::vector<int64_t>& shape));

}  // namespace ggdiff::dit_lora
