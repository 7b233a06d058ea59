// PhotoMaker (TencentARC; v1 and v2) for SDXL: a person's identity, from a few images of them,
// stacked into the prompt's class-word tokens ("a woman img": the trigger word "img" after the
// class word "woman"), as stable-diffusion.cpp runs it (--photo-maker, --pm-id-images-dir,
// --pm-id-embed-path, --pm-style-strength).
//
// The ID encoder: the images through CLIP ViT-L/14's vision tower; v1 takes the class token's
// post-layernorm state through both projections (768 + 1280 = one 2048-wide vector per image),
// v2 takes the last hidden states into a perceiver resampler queried by the images' InsightFace
// embeddings (2 vectors per image). The fuse MLP mixes each vector with its class-word token's
// context (the class word repeated once per vector), and the result replaces those tokens.
// The prompt with the identity takes over from the plain one (without the trigger word) after
// --pm-style-strength percent of the steps.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/te/clip_vision.h"
#include "pipeline/family.h"
#include "pipeline/parts/dual_clip_conditioner.h"
#include "runtime/module_runner.h"

namespace ggdiff {

struct PhotoMakerConfig {
    int version = 1;
    std::string prefix;  // "photo_maker."
    models::ClipVisionConfig vision;
    int64_t projection = 768;  // v1: visual_projection's width (the rest is visual_projection_2's)
    int64_t embed = 2048;      // the fuse module's width: the UNet's context width
    int64_t id_width = 512;    // v2: InsightFace embedding width
    int64_t id_tokens = 2;     // v2: vectors per image
    int64_t id_hidden = 2048;  // v2: token_proj's hidden width
    int64_t perceiver_layers = 4;
    int64_t head_dim = 128;
    // v2: names that differ between the original and stable-diffusion.cpp's files.
    std::string token_proj_fc1, token_proj_fc2;
    std::vector<std::string> ff_fc1, ff_fc2;  // per perceiver layer
};

// Reads PhotoMaker's architecture from the weights under `prefix` ("photo_maker."); the error
// names the first missing or mis-shaped tensor.
Result<PhotoMakerConfig> detect_photomaker(const TensorIndex& index, const std::string& prefix);

// The reference's tensor file (id_embeds.bin): int32 n_dims, name length and ggml type (F32),
// n_dims int32 sizes (ggml order), the name, then the floats. -> [id_width, images].
Result<HostTensor> read_id_embeds(const std::string& path);

// The ID encoder on its placement (the photomaker module).
class PhotoMakerEncoder {
  public:
    static Result<std::unique_ptr<PhotoMakerEncoder>> create(const FamilyContext& ctx,
                                                             const ModuleDevices& where,
                                                             const PhotoMakerConfig& cfg);
    // `prompt` [embed, tokens, 1] with the identity fused into the tokens at `positions`
    // (images.size() of them for v1, twice that for v2, consecutive); `id_embeds`
    // [id_width, images] for v2.
    Result<HostTensor> stack(const std::vector<Image>& images, const HostTensor& prompt,
                             const std::vector<int>& positions, const HostTensor* id_embeds);
    void end_phase() { runner_->end_phase(); }

  private:
    PhotoMakerConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

// What the SDXL recipe hangs on Family::id_conditions.
class PhotoMaker {
  public:
    // `text`: the family's conditioner (outlives this).
    static Result<std::shared_ptr<PhotoMaker>> load(const FamilyContext& ctx,
                                                    DualClipConditioner& text,
                                                    int64_t context_width);
    Result<std::optional<IdConditions>> conditions(const GenerateOptions& o,
                                                   const TextRequest& request);
    const PhotoMakerConfig& config() const { return cfg_; }

  private:
    PhotoMakerConfig cfg_;
    std::unique_ptr<PhotoMakerEncoder> encoder_;
    DualClipConditioner* text_ = nullptr;
    bool warned_no_images_ = false;
};

// The prompt's tokens (no BOS/EOS) with every trigger token dropped and the class token before
// it repeated to `count` copies, as stable-diffusion.cpp does; `class_at` is the index of the
// first copy after the last trigger word (-1: no trigger word, or no token before it).
// Exposed for tests.
struct TriggerTokens {
    std::vector<int> tokens;
    std::vector<float> weights;
    bool found = false;  // the trigger word occurs
    int class_at = -1;
};
TriggerTokens expand_trigger(const std::vector<int>& tokens, const std::vector<float>& weights,
                             int trigger, int count);

}  // namespace ggdiff
