// LoRA tensor names: which adapted weight ("module") and which part a LoRA tensor is, and
// the keys a model's weights answer to.
//
// Every naming scheme in use addresses a module by a path: kohya "lora_unet_<path with _>",
// "lora_te_...", "lora_te1_..." / "lora_te2_..." (SDXL), diffusers / PEFT
// "unet.<path>" and "text_encoder.<path>", ComfyUI "diffusion_model.<path>", where the
// path is either the diffusers module path (down_blocks.0.attentions.0...) or the original
// LDM one (input_blocks.1.1...). Both sides are compared in one normalized form: wrappers
// ("lora_", "lora.", "base_model.model.", ".processor") dropped and every '.' turned into
// '_', so "lora_unet_down_blocks_0_attentions_0_proj_in" and
// "unet.down_blocks.0.attentions.0.proj_in" are the same key. The model side lists, per
// weight, the keys it answers to (lora_unet_keys, lora_clip_keys); nothing is guessed from
// underscores. A weight also answers to its own canonical name (without ".weight"), which
// is how stable-diffusion.cpp's converted LoRA files ("lora.<tensor>.weight.lora_down")
// address it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ggdiff {

enum class LoraPart {
    Down,     // lora_down / lora_A: [rank, in, (kh, kw)]
    Up,       // lora_up / lora_B: [out, rank, (1, 1)]
    Mid,      // lora_mid: LoCon's Tucker core [rank, rank, kh, kw]
    Alpha,    // scalar: scale = alpha / rank
    Scale,    // scalar: the scale itself
    HadaW1A,  // LoHa: delta = (w1_a @ w1_b) * (w2_a @ w2_b)
    HadaW1B,
    HadaW2A,
    HadaW2B,
    HadaT1,  // LoHa Tucker cores (not supported)
    HadaT2,
    LokrW1,  // LoKr: delta = kron(w1, w2), each whole or as a @ b
    LokrW1A,
    LokrW1B,
    LokrW2,
    LokrW2A,
    LokrW2B,
    LokrT2,     // LoKr Tucker core (not supported)
    Diff,       // a full weight difference
    DiffBias,   // a full bias difference
    DoraScale,  // DoRA magnitude (not supported)
};

const char* lora_part_name(LoraPart p);

// Part of a LoRA module's output landing in part of a weight: the module's output rows
// [from, from + count) are added to the weight's rows [to, to + count) (torch dim 0).
struct LoraRows {
    int64_t from = 0, to = 0, count = 0;
    bool operator==(const LoraRows& o) const {
        return from == o.from && to == o.to && count == o.count;
    }
};

// A key that addresses rows of a weight rather than the whole of it: a fused q/k/v weight
// that LoRAs of the split form patch a third at a time, split q/k/v weights that a LoRA of
// the fused form patches together (one key, several weights), a modulation whose halves a
// LoRA stores the other way round (two blocks).
struct LoraRowKey {
    std::string key;  // normalized (normalize_lora_key)
    std::vector<LoraRows> rows;
};

struct LoraTensorName {
    std::string module;  // normalized key (see normalize_lora_key)
    LoraPart part;
};

// The module key and part of a LoRA file's tensor name; nullopt when the name ends in
// none of the known suffixes.
std::optional<LoraTensorName> parse_lora_tensor_name(const std::string& name);

// The normalized form of a module path as either side writes it.
std::string normalize_lora_key(std::string key);

// The key every weight answers to: its canonical name without ".weight", normalized.
std::string lora_canonical_key(const std::string& canonical_weight);

// The LDM UNet's module paths in diffusers naming (SD1/SD2/SDXL), worked out from the
// UNet's own canonical names (relative to "model.diffusion_model."): ResBlocks per level,
// which blocks hold attention, where upsamplers sit.
class UnetDiffusersPaths {
  public:
    explicit UnetDiffusersPaths(const std::vector<std::string>& ldm_names);
    // "input_blocks.1.1.proj_in.weight" -> "down_blocks.0.attentions.0.proj_in.weight";
    // false for names outside the layout.
    bool map(const std::string& ldm, std::string* diffusers) const;

  private:
    int res_blocks_ = 2;  // ResBlocks per down level
};

// Keys of a UNet weight (canonical name relative to "model.diffusion_model.", ending in
// ".weight"): kohya / PEFT / ComfyUI prefixes over the LDM and the diffusers path.
std::vector<std::string> lora_unet_keys(const std::string& ldm_weight,
                                        const UnetDiffusersPaths& paths);

// Keys of a CLIP text encoder weight given by its HF path ("text_model.encoder.layers.0.
// mlp.fc1.weight"), for the prefixes the model gives that encoder ("te", "text_encoder"
// for SD1/SD2; "te1", "text_encoder" and "te2", "text_encoder_2" for SDXL).
std::vector<std::string> lora_clip_keys(const std::string& hf_weight,
                                        const std::vector<std::string>& prefixes);

}  // namespace ggdiff
