// The LTX-2 audio VAE decoder and vocoder on a tiny random-weight model in the real layout
// (decoder width 4 x {1, 2, 4}, two residual blocks per level; vocoder of 64 channels halved
// through the six upsamplers, three AMP blocks each): detection, shapes (4 T - 3 mel frames,
// 160 samples per frame, two channels), and the waveform against the reference engine's own
// decode of the same weights and latent (tests/families/ltx_vae_ref/audio_*.f32, made as
// ltx_vae_ref/README.md says).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "../io/io_test_util.h"
#include "../vae/vae_test_support.h"
#include "families/ltx/audio_vae.h"
#include "io/tensor_index.h"
#include "ltx_vae_support.h"

namespace ggdiff {
namespace {

using ltx::LtxAudioVaeConfig;

// The vocoder under `v`: conv_pre to `c` channels, one upsampler per kernel in `ups_k`, each
// followed by three AMP blocks (kernels 3, 7, 11), act_post, conv_post.
void vocoder_shapes(vae_test::Shapes& s, const std::string& v, int64_t in, int64_t c,
                    const std::vector<int>& ups_k) {
    auto act = [&](const std::string& p, int64_t ch) {
        s.push_back({p + "act.alpha", {ch}});
        s.push_back({p + "act.beta", {ch}});
        s.push_back({p + "upsample.filter", {1, 1, 12}});
        s.push_back({p + "downsample.lowpass.filter", {1, 1, 12}});
    };
    s.push_back({v + "conv_pre.weight", {c, in, 7}});
    s.push_back({v + "conv_pre.bias", {c}});
    const int res_k[3] = {3, 7, 11};
    for (size_t i = 0; i < ups_k.size(); ++i) {
        s.push_back({v + "ups." + std::to_string(i) + ".weight", {c, c / 2, ups_k[i]}});
        s.push_back({v + "ups." + std::to_string(i) + ".bias", {c / 2}});
        c /= 2;
        for (int j = 0; j < 3; ++j) {
            const std::string r = v + "resblocks." + std::to_string(i * 3 + j) + ".";
            for (int m = 0; m < 3; ++m) {
                const std::string n = std::to_string(m);
                for (const char* conv : {"convs1.", "convs2."}) {
                    s.push_back({r + conv + n + ".weight", {c, c, res_k[j]}});
                    s.push_back({r + conv + n + ".bias", {c}});
                }
                act(r + "acts1." + n + ".", c);
                act(r + "acts2." + n + ".", c);
            }
        }
    }
    act(v + "act_post.", c);
    s.push_back({v + "conv_post.weight", {2, c, 7}});
}

// `bwe`: with LTX-2.3's bandwidth extension at the widths the reference fixes (a 512-wide
// vocoder with upsamplers 12, 11, 4, 4, 4; a 512-point STFT, 64 mel bands).
vae_test::Shapes audio_shapes(bool bwe = false) {
    vae_test::Shapes s;
    const std::string d = "audio_vae.decoder.";
    auto conv2 = [&](const std::string& p, int64_t in, int64_t out, int64_t k) {
        s.push_back({p + "conv.weight", {out, in, k, k}});
        s.push_back({p + "conv.bias", {out}});
    };
    auto res = [&](const std::string& p, int64_t in, int64_t out) {
        conv2(p + "conv1.", in, out, 3);
        conv2(p + "conv2.", out, out, 3);
        if (in != out) conv2(p + "nin_shortcut.", in, out, 1);
    };
    s.push_back({"audio_vae.per_channel_statistics.mean-of-means", {128}});
    s.push_back({"audio_vae.per_channel_statistics.std-of-means", {128}});
    conv2(d + "conv_in.", 8, 16, 3);
    res(d + "mid.block_1.", 16, 16);
    res(d + "mid.block_2.", 16, 16);
    int64_t ch = 16;
    for (int level = 2; level >= 0; --level) {
        const int64_t out = 4 << level;
        for (int b = 0; b < 2; ++b) {
            res(d + "up." + std::to_string(level) + ".block." + std::to_string(b) + ".", ch, out);
            ch = out;
        }
        if (level) conv2(d + "up." + std::to_string(level) + ".upsample.conv.", ch, ch, 3);
    }
    conv2(d + "conv_out.", ch, 2, 3);
    vocoder_shapes(s, "vocoder.vocoder.", 128, 64, {11, 4, 4, 4, 4, 4});
    if (bwe) {
        vocoder_shapes(s, "vocoder.bwe_generator.", 128, 512, {12, 11, 4, 4, 4});
        s.push_back({"vocoder.mel_stft.mel_basis", {64, 257}});
        s.push_back({"vocoder.mel_stft.stft_fn.forward_basis", {514, 1, 512}});
        s.push_back({"vocoder.mel_stft.stft_fn.inverse_basis", {514, 1, 512}});
    }
    return s;
}

struct TinyAudio {
    std::map<std::string, vae_test::HostWeight> weights;
    LtxAudioVaeConfig cfg;
    std::string file;
    std::vector<testing::FakeTensor> fake;  // the file's tensors
    std::string error;
};

const TinyAudio& tiny_audio(bool bwe = false) {
    static TinyAudio models[2];
    static bool made[2] = {false, false};
    TinyAudio& m = models[bwe ? 1 : 0];
    if (made[bwe ? 1 : 0]) return m;
    made[bwe ? 1 : 0] = true;
    m.weights = vae_test::random_weights(audio_shapes(bwe), 81);
    vae_test::Rng rng(9);
    for (float& v : m.weights.at("audio_vae.per_channel_statistics.std-of-means").data) {
        v = 0.5f + static_cast<float>(rng.uniform());
    }
    // Values F16 can hold, stored as F16.
    // Activations of a real model's size: each random upsampler would grow them about 4x, and
    // Snake's sin(alpha x) of large x turns the reference's F16 rounding into noise.
    for (int i = 0; i < 6; ++i) {
        for (float& v : m.weights.at("vocoder.vocoder.ups." + std::to_string(i) + ".weight").data)
            v *= 0.25f;
    }
    for (float& v : m.weights.at("vocoder.vocoder.conv_post.weight").data) v *= 0.1f;
    if (bwe) {
        for (int i = 0; i < 5; ++i) {
            for (float& v :
                 m.weights.at("vocoder.bwe_generator.ups." + std::to_string(i) + ".weight").data)
                v *= 0.25f;
        }
        for (float& v : m.weights.at("vocoder.bwe_generator.conv_post.weight").data) v *= 0.1f;
        // Its input is a log-mel of magnitude ~6: scaled down to the activations of the
        // 16 kHz vocoder, where the reference's F16 rounding stays small.
        for (float& v : m.weights.at("vocoder.bwe_generator.conv_pre.weight").data) v *= 0.1f;
        // A Hann-windowed DFT (real parts, then imaginary) and a non-negative mel bank.
        constexpr double kPi = 3.14159265358979323846;
        for (const char* name : {"forward_basis", "inverse_basis"}) {
            std::vector<float>& fb =
                m.weights.at(std::string("vocoder.mel_stft.stft_fn.") + name).data;
            for (int k = 0; k < 514; ++k) {
                for (int n = 0; n < 512; ++n) {
                    const double w = 0.5 - 0.5 * std::cos(2 * kPi * n / 512);
                    const double a = 2 * kPi * (k % 257) * n / 512;
                    fb[static_cast<size_t>(k * 512 + n)] =
                        static_cast<float>(k < 257 ? w * std::cos(a) : -w * std::sin(a));
                }
            }
        }
        for (float& v : m.weights.at("vocoder.mel_stft.mel_basis").data) v = 0.02f * std::fabs(v);
    }
    // The resampling filters in BF16 as in real checkpoints (the reference turns BF16 filters
    // into the F16 its depthwise convolutions need; F32 or F16 ones it refuses).
    for (auto& [name, w] : m.weights) {
        const bool filter = name.find(".filter") != std::string::npos;
        for (float& v : w.data) {
            if (filter) v = ggml_bf16_to_fp32(ggml_fp32_to_bf16(v));
            v = ggml_fp16_to_fp32(ggml_fp32_to_fp16(v));
        }
    }
    std::vector<testing::FakeTensor> fake;
    for (const auto& [name, w] : m.weights) {
        if (name.find(".filter") == std::string::npos) {
            // The vocoder in F32 (the reference then convolves it in F32 as we do; its
            // F16 im2col of F16 kernels adds a few percent of noise through six stages).
            const bool f32 = name.rfind("vocoder.", 0) == 0;
            fake.push_back({name, f32 ? "F32" : "F16", w.shape,
                            f32 ? testing::to_bytes(w.data) : testing::f16_bytes(w.data)});
            continue;
        }
        std::vector<ggml_bf16_t> b(w.data.size());
        for (size_t i = 0; i < b.size(); ++i) b[i] = ggml_fp32_to_bf16(w.data[i]);
        fake.push_back({name, "BF16", w.shape, testing::to_bytes(b)});
    }
    m.fake = fake;
    // A folder per process: ctest runs these tests side by side, and test_dir empties it.
    m.file = testing::test_dir((bwe ? "ltx_audio_vae_bwe_" : "ltx_audio_vae_") +
                               std::to_string(getpid())) +
             "/audio_vae.safetensors";
    testing::write_safetensors(m.file, fake);
    TensorIndex index;
    Status st = index.add(m.file);
    std::string prefix;
    if (!st.ok()) {
        m.error = st.message();
    } else if (!ltx::find_ltx_audio_vae(index, &prefix)) {
        m.error = "no LTX audio VAE found";
    } else {
        auto cfg = ltx::detect_ltx_audio_vae(index, prefix);
        if (cfg.ok()) {
            m.cfg = *cfg;
        } else {
            m.error = cfg.status().message();
        }
    }
    std::filesystem::remove(m.file);  // the weights stay in m.fake (the index maps the file)
    return m;
}

// detect_ltx_audio_vae on m's file without the tensors whose names start with `drop`.
Result<LtxAudioVaeConfig> detect_without(const TinyAudio& m, const std::string& drop,
                                         const std::string& dir) {
    std::vector<testing::FakeTensor> fake;
    for (const auto& t : m.fake) {
        if (t.name.rfind(drop, 0) != 0) fake.push_back(t);
    }
    const std::string path =
        testing::test_dir(dir + "_" + std::to_string(getpid())) + "/a.safetensors";
    testing::write_safetensors(path, fake);
    TensorIndex index;
    const Status st = index.add(path);
    std::filesystem::remove(path);
    if (!st.ok()) return st;
    return ltx::detect_ltx_audio_vae(index, "");
}

// A decoded waveform: finite, within [-1, 1], not silent.
void expect_waveform(const HostTensor& wave) {
    float peak = 0;
    for (float v : wave.data) {
        ASSERT_TRUE(std::isfinite(v));
        ASSERT_LE(std::fabs(v), 1.0f);
        peak = std::max(peak, std::fabs(v));
    }
    EXPECT_GT(peak, 1e-3f);  // a real signal
}

// `got` against tests/families/ltx_vae_ref/<name>.f32 (skipped when the file is missing).
void expect_reference(const std::vector<float>& got, const std::string& name, double rel) {
    const std::string file =
        std::string(GGDIFF_SOURCE_DIR) + "/tests/families/ltx_vae_ref/" + name + ".f32";
    if (!std::filesystem::exists(file)) GTEST_SKIP() << "no reference output " << file;
    const std::string bytes = testing::read_bytes(file);
    ASSERT_EQ(bytes.size(), got.size() * sizeof(float));
    std::vector<float> ref(got.size());
    std::memcpy(ref.data(), bytes.data(), bytes.size());
    EXPECT_LT(vae_test::compare(got, ref).rel(), rel);
}

TEST(LtxAudioVae, ConfigComesFromTheWeights) {
    const TinyAudio& m = tiny_audio();
    ASSERT_EQ(m.error, "");
    const LtxAudioVaeConfig& c = m.cfg;
    EXPECT_EQ(c.prefix, "");
    EXPECT_EQ(c.latent_channels, 8);
    EXPECT_EQ(c.latent_bins, 16);
    EXPECT_EQ(c.mel_bins, 64);
    EXPECT_EQ(c.audio_channels, 2);
    EXPECT_EQ(c.base_channels, 4);
    EXPECT_EQ(c.multipliers, (std::vector<int64_t>{1, 2, 4}));
    EXPECT_EQ(c.res_blocks, 1);
    EXPECT_EQ(c.vocoder_channels, 64);
    EXPECT_EQ(c.upsample_kernels, (std::vector<int>{11, 4, 4, 4, 4, 4}));
    EXPECT_EQ(c.resblock_kernels, (std::vector<int>{3, 7, 11}));
    EXPECT_FALSE(c.has_bwe);
    EXPECT_EQ(c.mel_frames(3), 9);
}

TEST(LtxAudioVae, MissingVocoderIsNamed) {
    const TinyAudio& m = tiny_audio();
    ASSERT_EQ(m.error, "");
    auto cfg = detect_without(m, "vocoder.vocoder.ups.5.", "ltx_audio_broken");
    ASSERT_FALSE(cfg.ok());
    EXPECT_NE(cfg.status().message().find("vocoder.vocoder.ups"), std::string::npos)
        << cfg.status().message();
}

TEST(LtxAudioVae, WrongLatentShapeIsRefused) {
    const TinyAudio& m = tiny_audio();
    ASSERT_EQ(m.error, "");
    auto r =
        ltx::ltx_decode_audio(m.cfg, HostTensor({16, 3, 4, 1}), ltx_test::cpu_runner(&m.weights));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("8 channels"), std::string::npos) << r.status().message();
}

// Known answers of the reference engine (LTXV::LTXAudioVAERunner::decode). With
// LTX_VAE_REF_DUMP=DIR the test writes the harness's inputs: audio_<T>.latent.f32 (the
// latent as the reference takes it, ggml [16, T, 8, 1], the same bytes as ours) and
// audio.safetensors (the weights).
class LtxAudioVaeReference : public ::testing::TestWithParam<int> {};

TEST_P(LtxAudioVaeReference, MatchesTheReferenceEngine) {
    const TinyAudio& m = tiny_audio();
    ASSERT_EQ(m.error, "");
    const int T = GetParam();
    const HostTensor z = vae_test::random_tensor({16, T, 8, 1}, 500 + T);
    const std::string name = "audio_" + std::to_string(T);
    if (const char* dump = std::getenv("LTX_VAE_REF_DUMP")) {
        testing::write_bytes(std::string(dump) + "/" + name + ".latent.f32",
                             testing::to_bytes(z.data));
        testing::write_safetensors(std::string(dump) + "/audio.safetensors", m.fake);
    }
    auto got = ltx::ltx_decode_audio(m.cfg, z, ltx_test::cpu_runner(&m.weights));
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->ne, (std::vector<int64_t>{(4 * T - 3) * 160, 2, 1, 1}));
    expect_waveform(*got);
    // The reference rounds activations to F16 in its convolutions (the decoder's, and the
    // vocoder's 2x down-sampling): seen 7.8e-3 (T = 1) and 2.6e-2 (T = 3) of the peak.
    expect_reference(got->data, name, 5e-2);
}

INSTANTIATE_TEST_SUITE_P(Frames, LtxAudioVaeReference, ::testing::Values(1, 3));

TEST(LtxAudioVae, BandwidthExtensionComesFromTheWeights) {
    const TinyAudio& m = tiny_audio(true);
    ASSERT_EQ(m.error, "");
    const LtxAudioVaeConfig& c = m.cfg;
    EXPECT_TRUE(c.has_bwe);
    EXPECT_EQ(c.vocoder_rate, 16000);
    EXPECT_EQ(c.sample_rate, 48000);
    EXPECT_EQ(c.bwe_fft, 512);
    EXPECT_EQ(c.bwe_mel_bins, 64);
    EXPECT_EQ(c.bwe_channels, 512);
    EXPECT_EQ(c.bwe_kernels, (std::vector<int>{12, 11, 4, 4, 4}));
    EXPECT_EQ(c.bwe_resblock_kernels, (std::vector<int>{3, 7, 11}));
    // The x3 sinc: 43 symmetric taps summing to about 1 per phase.
    const std::vector<float> f = ltx::ltx_bwe_resample_filter(3);
    ASSERT_EQ(f.size(), 43u);
    for (size_t i = 0; i < f.size(); ++i) EXPECT_FLOAT_EQ(f[i], f[f.size() - 1 - i]);
    double phase0 = 0;
    for (size_t i = 0; i < f.size(); i += 3) phase0 += f[i];
    EXPECT_NEAR(phase0 * 3, 1.0, 0.02);

    // Without its mel bank the extension cannot run: the error names the tensor.
    auto cfg = detect_without(m, "vocoder.mel_stft.mel_basis", "ltx_audio_bwe_broken");
    ASSERT_FALSE(cfg.ok());
    EXPECT_NE(cfg.status().message().find("vocoder.mel_stft.mel_basis"), std::string::npos)
        << cfg.status().message();
}

// The extension's log-mel against a direct evaluation in double precision: each channel's own
// STFT (432 zeros in front, 80-sample hop), magnitudes, mel bank, log.
TEST(LtxAudioVae, BandwidthExtensionMelIsEachChannelsSpectrum) {
    const TinyAudio& m = tiny_audio(true);
    ASSERT_EQ(m.error, "");
    const int64_t t = 240, frames = t / 80;
    const HostTensor wave = vae_test::random_tensor({t, 2, 1, 1}, 77);
    auto got = ltx_test::cpu_runner(&m.weights)(
        [&](nn::Ctx& c, const std::function<ggml_tensor*(const HostTensor&)>& input) {
            ggml_tensor* w = ggml_reshape_3d(c.ctx, input(wave), t, 2, 1);
            return std::vector<ggml_tensor*>{ltx::build_ltx_bwe_mel(c, m.cfg, w)};
        });
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ((*got)[0].ne, (std::vector<int64_t>{64, frames, 2, 1}));
    const std::vector<float>& fb = m.weights.at("vocoder.mel_stft.stft_fn.forward_basis").data;
    const std::vector<float>& mb = m.weights.at("vocoder.mel_stft.mel_basis").data;
    std::vector<float> want;
    for (int64_t ch = 0; ch < 2; ++ch) {
        for (int64_t f = 0; f < frames; ++f) {
            std::vector<double> mag(257);
            for (int k = 0; k < 257; ++k) {
                double re = 0, im = 0;
                for (int n = 0; n < 512; ++n) {
                    const int64_t i = f * 80 + n - 432;  // 432 zeros in front
                    if (i < 0) continue;
                    const double x = wave.data[static_cast<size_t>(ch * t + i)];
                    re += x * fb[static_cast<size_t>(k * 512 + n)];
                    im += x * fb[static_cast<size_t>((k + 257) * 512 + n)];
                }
                mag[static_cast<size_t>(k)] = std::sqrt(re * re + im * im);
            }
            for (int b = 0; b < 64; ++b) {
                double v = 0;
                for (int k = 0; k < 257; ++k)
                    v += mag[static_cast<size_t>(k)] * mb[static_cast<size_t>(b * 257 + k)];
                want.push_back(static_cast<float>(std::log(std::max(v, 1e-5))));
            }
        }
    }
    const vae_test::Diff d = vae_test::compare((*got)[0].data, want);
    EXPECT_LT(d.rel(), 1e-3);
}

// The whole decode with the bandwidth extension against the reference engine's code with each
// channel's own log-mel (audio_bwe_<T>.f32: [480 (4 T - 3), 2] at 48 kHz; the reference's own
// decode mixes the channels' spectra, see ltx_vae_ref/README.md). LTX_VAE_REF_DUMP=DIR writes
// the inputs (audio_bwe.safetensors, audio_bwe_<T>.latent.f32) and ours (.ours.f32).
class LtxAudioVaeBweReference : public ::testing::TestWithParam<int> {};

TEST_P(LtxAudioVaeBweReference, MatchesTheReferenceEngine) {
    const TinyAudio& m = tiny_audio(true);
    ASSERT_EQ(m.error, "");
    const int T = GetParam();
    const HostTensor z = vae_test::random_tensor({16, T, 8, 1}, 700 + T);
    const std::string name = "audio_bwe_" + std::to_string(T);
    if (const char* dump = std::getenv("LTX_VAE_REF_DUMP")) {
        testing::write_bytes(std::string(dump) + "/" + name + ".latent.f32",
                             testing::to_bytes(z.data));
        testing::write_safetensors(std::string(dump) + "/audio_bwe.safetensors", m.fake);
    }
    auto got = ltx::ltx_decode_audio(m.cfg, z, ltx_test::cpu_runner(&m.weights));
    ASSERT_TRUE(got.ok()) << got.status().message();
    if (const char* dump = std::getenv("LTX_VAE_REF_DUMP")) {
        testing::write_bytes(std::string(dump) + "/" + name + ".ours.f32",
                             testing::to_bytes(got->data));
    }
    EXPECT_EQ(got->ne, (std::vector<int64_t>{3 * (4 * T - 3) * 160, 2, 1, 1}));
    expect_waveform(*got);
    // Three times the samples of the same decode without the extension.
    auto low = ltx::ltx_decode_audio(tiny_audio(false).cfg, z,
                                     ltx_test::cpu_runner(&tiny_audio(false).weights));
    ASSERT_TRUE(low.ok()) << low.status().message();
    EXPECT_EQ(low->dim(0) * 3, got->dim(0));
    expect_reference(got->data, name, 5e-2);  // seen 6.3e-3 (T = 1), 2.9e-2 (T = 3)
}

INSTANTIATE_TEST_SUITE_P(Frames, LtxAudioVaeBweReference, ::testing::Values(1, 3));

std::vector<float> read_floats(const std::string& file) {
    const std::string bytes = testing::read_bytes(file);
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
    return v;
}

// The two halves alone: the decoder's log-mel (audio_mel_3.f32, [64, 9, 2]) and the vocoder
// before its final clamp on that mel (audio_voc_3.f32, [1440, 2]).
TEST(LtxAudioVae, MelAndVocoderMatchTheReferenceEngine) {
    const TinyAudio& m = tiny_audio();
    ASSERT_EQ(m.error, "");
    const std::string dir = std::string(GGDIFF_SOURCE_DIR) + "/tests/families/ltx_vae_ref/";
    if (!std::filesystem::exists(dir + "audio_mel_3.f32")) GTEST_SKIP() << "no reference mel";
    const HostTensor z = vae_test::random_tensor({16, 3, 8, 1}, 503);
    auto run = ltx_test::cpu_runner(&m.weights);
    auto mel = run([&](nn::Ctx& c, const std::function<ggml_tensor*(const HostTensor&)>& input) {
        return std::vector<ggml_tensor*>{ltx::build_ltx_audio_mel(c, m.cfg, input(z))};
    });
    ASSERT_TRUE(mel.ok()) << mel.status().message();
    EXPECT_EQ((*mel)[0].ne, (std::vector<int64_t>{64, 9, 2, 1}));
    const vae_test::Diff dm =
        vae_test::compare((*mel)[0].data, read_floats(dir + "audio_mel_3.f32"));
    EXPECT_LT(dm.rel(), 1e-2);  // seen 3.9e-3
    HostTensor ref_mel({64, 9, 2, 1});
    ref_mel.data = read_floats(dir + "audio_mel_3.f32");
    auto wave = run([&](nn::Ctx& c, const std::function<ggml_tensor*(const HostTensor&)>& input) {
        return std::vector<ggml_tensor*>{ltx::build_ltx_vocoder(c, m.cfg, input(ref_mel), false)};
    });
    ASSERT_TRUE(wave.ok()) << wave.status().message();
    const vae_test::Diff dv =
        vae_test::compare((*wave)[0].data, read_floats(dir + "audio_voc_3.f32"));
    EXPECT_LT(dv.rel(), 5e-2);  // seen 1.6e-2: F16 activations in its down-sampling
}

}  // namespace
}  // namespace ggdiff
