// The LTX-2 audio-video DiT as a family's denoiser. The sampler sees one packed latent per item
// (families/ltx/latents.h: the video [w, h, C * T] then the audio's values as extra channels,
// zero tail); run() unpacks it, builds the RoPE tables (video cells at the request's fps, audio
// steps, the connectors' positions), runs the DiT at the item's timestep (sigma, as FLUX-style
// flow denoisers take it) on its text context ([video + audio width, L, 1]), and packs the
// video and audio velocities back in the same layout (zero tail). Items run one at a time.
// Image-to-video: DenoiseBatch::frame_keep holds one mask value per latent frame (1 sampled,
// 1 - strength for a frame given by -i); the video tokens of frame f then run at timestep
// mask[f] * sigma, as the reference's per-token timesteps do (the audio keeps sigma).
// --end-img past frame 0: its latent frame is appended after the video's (LtxLatentLayout::
// keyframes), held the same way, and placed in time at the output's last frame.
// The embeddings connectors depend on the text only: the first evaluation of a text in a phase
// runs them and keeps what they made; the later ones start from it.
#pragma once

#include <memory>
#include <vector>

#include "families/ltx/dit.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

// The packed latent's layout for a request.
struct LtxLatentLayout {
    int64_t frames = 1;       // latent frames, the keyframes included
    int64_t audio_steps = 0;  // 0: video only
    float fps = 24.0f;
    models::LtxKeyframes keyframes;  // appended latent frames (--end-img), dropped in decoding
};

// A text context after the DiT's embeddings connectors.
struct LtxConnectedText {
    HostTensor text;          // the conditioning's context it was made from
    HostTensor video, audio;  // audio: empty when made without the audio stream
};

class LtxDenoiser : public Denoiser {
  public:
    static Result<std::unique_ptr<LtxDenoiser>> create(const FamilyContext& ctx,
                                                       const ModuleDevices& where,
                                                       const models::LtxDitConfig& cfg);
    // Over a runner made elsewhere (tests); prepare() declares the DiT's weights on it.
    LtxDenoiser(std::unique_ptr<ModuleRunner> runner, const models::LtxDitConfig& cfg)
        : cfg_(cfg), runner_(std::move(runner)) {}
    Status prepare();

    // A request's layout; it also forgets the texts connected before (their weights may have
    // been patched since by another request's LoRA).
    void set_layout(const LtxLatentLayout& layout) {
        layout_ = layout;
        connected_.clear();
    }
    Result<HostTensor> run(const DenoiseBatch& batch) override;
    void end_phase() override {
        connected_.clear();
        runner_->end_phase();
    }
    ModuleRunner& runner() { return *runner_; }
    // How many texts' connector outputs are kept (tests).
    size_t connected_texts() const { return connected_.size(); }
    const models::LtxDitConfig& config() const { return cfg_; }

    // The DiT graph for one item (declares the weights; tests): outputs the video velocity,
    // the audio one (with `audio`), then, when the connectors ran on `context`, the contexts
    // they made (video, and audio with `audio`). `connected`: those contexts from an earlier
    // evaluation of `context`, so that the connectors do not run.
    static std::vector<ggml_tensor*> build(GraphBuilder& gb, const models::LtxDitConfig& cfg,
                                           const HostTensor& video, const HostTensor* audio,
                                           float sigma, const HostTensor& context, float fps,
                                           const std::vector<float>* frame_mask = nullptr,
                                           const models::LtxKeyframes& keyframes = {},
                                           const LtxConnectedText* connected = nullptr);

  private:
    LtxDenoiser() = default;
    models::LtxDitConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
    LtxLatentLayout layout_;
    // The texts whose connectors ran in this phase (cond and uncond: a few at most).
    std::vector<LtxConnectedText> connected_;
    const LtxConnectedText* find_connected(const HostTensor& text, bool audio) const;
};

}  // namespace ggdiff
