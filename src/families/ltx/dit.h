// The LTX-2 audio-video DiT (LTXAV), as stable-diffusion.cpp (38a51f81, ltxv.hpp) runs it.
// Two token streams share every block: video (latent [W, H, F, 128] -> W*H*F tokens, frame
// outermost, column fastest) and audio (latent [16 bins, time, 8 channels] -> one token of 128
// features (channel * 16 + bin) per time step). Each block:
//   video: x += gate * attn1(mod(rms(x))) (3-D RoPE), x += attn2(rms(x), text) (with
//          cross-attention AdaLN: modulated query and text, gated);
//   audio: the same with audio_attn1 / audio_attn2 (1-D RoPE on audio time);
//   audio_to_video_attn (video queries, audio keys) and video_to_audio_attn, both on the
//   RMS-normed streams of before them, modulated by scale_shift_table_a2v_ca_* plus the
//   av_ca_* AdaLNs, RoPE on time in seconds, gated; then each stream's gated FF (GELU-tanh 4x).
// Attention: to_q/k/v with biases, RMSNorm over all heads (eps 1e-5, weight as stored), RoPE on
// the halves of each head with per-head angles, optional gates 2 * sigmoid(to_gate_logits(x))
// per head. Modulation rows are scale_shift_table rows plus the AdaLN outputs (6 rows: shift,
// scale, gate for attention and FF; 9 with cross-attention AdaLN). The output: LayerNorm without
// affine, shift / scale from scale_shift_table plus the embedded timestep, proj_out.
// The text context [4096 + 2048, L] (models/te + families/ltx/text.h) is split into video and
// audio parts; fewer than 1024 tokens go through the embeddings connectors (learnable registers
// fill the sequence up to 1024, 1-D RoPE on position / 4096, self-attention + FF blocks, a final
// RMSNorm); 1024 or more skip them (the reference treats them as already processed).
// Sizes come from the weights (see docs/ltx2.md); the AdaLN timestep is sigma * 1000, except
// the av_ca_* AdaLNs, which get sigma itself (as the reference passes it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "io/tensor_index.h"
#include "nn/weights.h"

namespace ggdiff::models {

struct LtxConnectorConfig {
    bool present = false;
    int64_t hidden = 0, heads = 0, head_dim = 0, layers = 0, registers = 0;
    bool gated = false;
};

struct LtxDitConfig {
    std::string prefix = "model.diffusion_model.";
    int64_t in_channels = 128, out_channels = 128, hidden = 4096, heads = 32, head_dim = 128;
    int64_t context = 4096;  // attn2's key input: the video text width
    int64_t audio_in = 128, audio_out = 128, audio_hidden = 2048, audio_heads = 32,
            audio_head_dim = 64;
    int64_t audio_context = 2048;
    int64_t layers = 48;
    bool gated = false;        // to_gate_logits on every attention
    bool cross_adaln = false;  // prompt_scale_shift_table: 9 modulation rows
    LtxConnectorConfig video_connector, audio_connector;
    int64_t audio_channels = 8, audio_bins = 16;
    int coeff() const { return cross_adaln ? 9 : 6; }
};

Result<LtxDitConfig> detect_ltx_dit(const TensorIndex& index,
                                    const std::string& prefix = "model.diffusion_model.");

// RoPE tables: cos and sin [head_dim / 2, heads, tokens, 1] (pair i of head h turns by angle
// [i, h, token]), built as the reference builds its [[cos, -sin], [sin, cos]] matrices.
struct LtxRope {
    HostTensor cos, sin;
};

// Latent frames appended after the video's as keyframes (--end-img's last frame), as the
// reference's build_ltxv_video_positions places them: keyframe k spans pixel frames
// pixel + 8k .. pixel + 8k + 1 (one pixel frame long), whatever its place in the latent.
struct LtxKeyframes {
    int64_t count = 0;  // the last `count` of the latent's frames
    int64_t pixel = 0;  // the pixel frame the first one shows (the output's last frame)
};

// The centre of each video latent cell in (seconds / 20, pixels / 2048, pixels / 2048): frame t
// spans pixel frames max(0, 8t - 7) .. max(0, 8t + 1) at `fps` (keyframes: as above), cells are
// 32 pixels. [3, tokens] (axis fastest), tokens frame-major then row then column.
std::vector<float> ltx_video_coords(int64_t w, int64_t h, int64_t frames, float fps,
                                    const LtxKeyframes& keyframes = {});
// The audio latent step t's centre in seconds: latent steps are 4 mel frames of 160 samples at
// 16 kHz, causal (start max(0, 4t - 3) mel frames).
std::vector<float> ltx_audio_seconds(int64_t steps);

// Angles for `dim` features over `heads` heads from coordinates already divided by their
// maximum (axes per token, axis fastest): frequencies theta^(i / (n - 1)) * pi / 2 for
// n = dim / (2 axes), each times (2 coord - 1), axes interleaved, zero angles first where
// dim / 2 is not a multiple of the axes; the half-dim angles of a token cut into heads.
LtxRope ltx_rope(const std::vector<float>& coords, int axes, int64_t dim, int64_t heads,
                 bool double_precision = false);

// The video tokens' tables (self-attention: 3 axes over hidden; cross-attention with audio:
// time only over the audio heads), the audio ones, and a connector's (positions 0..n-1 over
// 4096, double precision).
LtxRope ltx_video_rope(const LtxDitConfig& cfg, int64_t w, int64_t h, int64_t frames, float fps,
                       const LtxKeyframes& keyframes = {});
LtxRope ltx_video_time_rope(const LtxDitConfig& cfg, int64_t w, int64_t h, int64_t frames,
                            float fps, const LtxKeyframes& keyframes = {});
LtxRope ltx_audio_rope(const LtxDitConfig& cfg, int64_t steps, bool cross);
LtxRope ltx_connector_rope(const LtxConnectorConfig& cc, int64_t tokens);
// The length a connector fills a context of `tokens` to (0: it does not run).
int64_t ltx_connector_length(const LtxConnectorConfig& cc, int64_t tokens);

// The graph inputs of one DiT evaluation.
struct LtxDitInputs {
    ggml_tensor* video = nullptr;  // [W, H, F, C * N]
    ggml_tensor* audio = nullptr;  // [16, steps, 8, N] or null (video only)
    ggml_tensor* sigma = nullptr;  // [N]
    // [W*H*F]: the video tokens' own timesteps (image-to-video: a given frame's tokens at
    // mask * sigma), for one sample (N = 1); null: sigma. The audio stream, the text AdaLN and
    // the audio-video AdaLNs keep `sigma`, as the reference does.
    ggml_tensor* video_sigma = nullptr;
    ggml_tensor* context = nullptr;    // [video + audio width, L, N]
    ggml_tensor* video_cos = nullptr;  // ltx_video_rope
    ggml_tensor* video_sin = nullptr;
    ggml_tensor* audio_cos = nullptr;  // ltx_audio_rope(cross = false)
    ggml_tensor* audio_sin = nullptr;
    ggml_tensor* vtime_cos = nullptr;  // ltx_video_time_rope
    ggml_tensor* vtime_sin = nullptr;
    ggml_tensor* atime_cos = nullptr;  // ltx_audio_rope(cross = true)
    ggml_tensor* atime_sin = nullptr;
    ggml_tensor* vconn_cos = nullptr;  // ltx_connector_rope (when the connector runs)
    ggml_tensor* vconn_sin = nullptr;
    ggml_tensor* aconn_cos = nullptr;
    ggml_tensor* aconn_sin = nullptr;
    // The text contexts as an earlier evaluation's connectors left them (LtxDitOutputs'
    // video_context / audio_context for the same `context`): the connectors then do not run
    // and `context` is not read. The audio one is needed only with `audio`.
    ggml_tensor* video_context = nullptr;  // [video width, L', N]
    ggml_tensor* audio_context = nullptr;  // [audio width, L', N]
};

struct LtxDitOutputs {
    ggml_tensor* video = nullptr;  // [W, H, F, C_out * N]
    ggml_tensor* audio = nullptr;  // [16, steps, 8, N] or null
    // When this graph ran the embeddings connectors: the contexts they made (the audio one
    // only with audio), to be fed to later evaluations of the same text; null otherwise.
    ggml_tensor* video_context = nullptr;
    ggml_tensor* audio_context = nullptr;
};

LtxDitOutputs build_ltx_dit(nn::Ctx& c, const LtxDitConfig& cfg, const LtxDitInputs& in);

// The timestep modulations every block shares, from sigma [N]: [rows * dim, 1, N] each
// (audio ones null without audio; prompt ones null without cross-attention AdaLN), and the
// embedded timesteps the output layers modulate with. With `video_sigma` ([T], one sample) the
// video ones are per token: [rows * dim, T, 1] and [dim, T, 1].
struct LtxTimeMods {
    ggml_tensor *video = nullptr, *audio = nullptr, *video_prompt = nullptr,
                *audio_prompt = nullptr, *av_video = nullptr, *av_audio = nullptr,
                *a2v_gate = nullptr, *v2a_gate = nullptr, *video_embedded = nullptr,
                *audio_embedded = nullptr;
};
LtxTimeMods build_ltx_time_mods(nn::Ctx& c, const LtxDitConfig& cfg, ggml_tensor* sigma, bool audio,
                                ggml_tensor* video_sigma = nullptr);

// One block alone: vx [hidden, T, N], ax [audio hidden, Ta, N] or null, the text contexts
// already through the connectors.
struct LtxBlockInputs {
    ggml_tensor *vx = nullptr, *ax = nullptr, *v_context = nullptr, *a_context = nullptr;
    const LtxTimeMods* t = nullptr;
    ggml_tensor *video_cos = nullptr, *video_sin = nullptr, *audio_cos = nullptr,
                *audio_sin = nullptr, *vtime_cos = nullptr, *vtime_sin = nullptr,
                *atime_cos = nullptr, *atime_sin = nullptr;
};
std::pair<ggml_tensor*, ggml_tensor*> build_ltx_block(nn::Ctx& c, const LtxDitConfig& cfg,
                                                      int block, const LtxBlockInputs& in);

}  // namespace ggdiff::models
