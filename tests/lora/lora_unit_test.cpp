// LoRA pieces without a model run: prompt tags, tensor names and the keys model weights
// answer to, the A1111 hash, update math (LoRA, LoHa, LoKr) and in-place patching.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "../io/io_test_util.h"
#include "core/sha256.h"
#include "devices/devices.h"
#include "io/lora_file.h"
#include "io/lora_names.h"
#include "io/name_map.h"
#include "io/name_util.h"
#include "pipeline/lora_tags.h"
#include "runtime/lora_delta.h"
#include "runtime/weight_patch.h"

namespace ggdiff {
namespace {

using testing::f32_tensor;
using testing::FakeTensor;
using testing::pattern;
using testing::to_bytes;
using testing::write_safetensors;

// ---------------------------------------------------------------------------- tags

TEST(LoraTags, RemovedSummedAndOrdered) {
    std::vector<LoraRequest> loras;
    auto text =
        extract_lora_tags("a cat<lora:b:0.5>, <lora:a:1> sitting<lora:b:0.25><lora:c>", &loras);
    ASSERT_TRUE(text.ok()) << text.status().message();
    EXPECT_EQ(*text, "a cat,  sitting");
    ASSERT_EQ(loras.size(), 3u);
    EXPECT_EQ(loras[0].name, "b");
    EXPECT_FLOAT_EQ(loras[0].unet, 0.75f);
    EXPECT_FLOAT_EQ(loras[0].te, 0.75f);
    EXPECT_EQ(loras[1].name, "a");
    EXPECT_EQ(loras[2].name, "c");
    EXPECT_FLOAT_EQ(loras[2].unet, 1.0f);
}

TEST(LoraTags, SeparateTextEncoderWeightAndOtherTagsKept) {
    std::vector<LoraRequest> loras;
    auto text = extract_lora_tags("x <lyco:d:0.2:0.8> <hypernet:h:1> y", &loras);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, "x  <hypernet:h:1> y");
    ASSERT_EQ(loras.size(), 1u);
    EXPECT_FLOAT_EQ(loras[0].te, 0.2f);
    EXPECT_FLOAT_EQ(loras[0].unet, 0.8f);
}

TEST(LoraTags, HighNoiseTagsAreTheirOwnRequests) {
    std::vector<LoraRequest> loras;
    auto text =
        extract_lora_tags("x<lora:|high_noise|a:0.5><lora:a:1><lora:|high_noise|a>", &loras);
    ASSERT_TRUE(text.ok()) << text.status().message();
    EXPECT_EQ(*text, "x");
    ASSERT_EQ(loras.size(), 2u);
    EXPECT_EQ(loras[0].name, "a");
    EXPECT_TRUE(loras[0].high_noise);
    EXPECT_FLOAT_EQ(loras[0].unet, 1.5f);
    EXPECT_EQ(loras[1].name, "a");
    EXPECT_FALSE(loras[1].high_noise);
    EXPECT_FALSE(extract_lora_tags("<lora:|high_noise|:1>", &loras).ok());
}

TEST(LoraTags, BadWeightIsAnErrorNamingTheTag) {
    std::vector<LoraRequest> loras;
    auto text = extract_lora_tags("x <lora:kohya:strong>", &loras);
    ASSERT_FALSE(text.ok());
    EXPECT_NE(text.status().message().find("lora:kohya:strong"), std::string::npos);
    EXPECT_FALSE(extract_lora_tags("<lora::1>", &loras).ok());
}

// ---------------------------------------------------------------------------- names

TEST(LoraNames, SuffixesAndNormalization) {
    auto k =
        parse_lora_tensor_name("lora_unet_down_blocks_0_attentions_0_proj_in.lora_down.weight");
    ASSERT_TRUE(k);
    EXPECT_EQ(k->module, "unet_down_blocks_0_attentions_0_proj_in");
    EXPECT_EQ(k->part, LoraPart::Down);
    auto p = parse_lora_tensor_name("unet.down_blocks.0.attentions.0.proj_in.lora_B.weight");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->module, k->module);
    EXPECT_EQ(p->part, LoraPart::Up);
    auto old = parse_lora_tensor_name(
        "unet.down_blocks.0.attentions.0.transformer_blocks.0.attn1.processor.to_q_lora.up.weight");
    ASSERT_TRUE(old);
    EXPECT_EQ(old->module, "unet_down_blocks_0_attentions_0_transformer_blocks_0_attn1_to_q");
    EXPECT_EQ(old->part, LoraPart::Up);
    EXPECT_EQ(parse_lora_tensor_name("lora_te_text_model_encoder_layers_0_mlp_fc1.alpha")->part,
              LoraPart::Alpha);
    EXPECT_EQ(parse_lora_tensor_name("x.hada_w1_a")->part, LoraPart::HadaW1A);
    EXPECT_EQ(parse_lora_tensor_name("x.lokr_w1")->part, LoraPart::LokrW1);
    EXPECT_EQ(parse_lora_tensor_name("x.lokr_w1_b")->part, LoraPart::LokrW1B);
    auto sdcpp = parse_lora_tensor_name("lora.model.diffusion_model.out.2.weight.lora_up");
    ASSERT_TRUE(sdcpp);
    EXPECT_EQ(sdcpp->module, lora_canonical_key("model.diffusion_model.out.2.weight"));
    EXPECT_FALSE(parse_lora_tensor_name("model.diffusion_model.out.2.weight"));
}

// Canonical names of a fixture tensor list under `prefix` (relative), as the index maps them.
std::vector<std::string> fixture_names(const std::string& list, const std::string& prefix) {
    std::ifstream in(std::string(GGDIFF_SHARED_DIR) + "/fixtures/" + list);
    std::vector<std::string> raw;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        raw.push_back(line.substr(0, line.find(' ')));
    }
    std::vector<std::string> out;
    for (const NameMapping& m : map_tensor_names(raw, "")) {
        if (starts_with(m.name, prefix)) out.push_back(m.name.substr(prefix.size()));
    }
    return out;
}

std::vector<std::string> lora_modules(const std::string& list) {
    std::set<std::string> modules;
    for (const std::string& n : fixture_names(list, "")) {
        auto p = parse_lora_tensor_name(n);
        EXPECT_TRUE(p) << n;
        if (p) modules.insert(p->module);
    }
    return {modules.begin(), modules.end()};
}

// Keys of every 2-D+ weight of the SD1 fixture, as the SD recipe gives them.
std::set<std::string> sd1_keys() {
    const std::vector<std::string> unet =
        fixture_names("sd1_mc32.tensors", "model.diffusion_model.");
    const UnetDiffusersPaths paths(unet);
    std::set<std::string> keys;
    for (const std::string& w : unet) {
        if (!ends_with(w, ".weight")) continue;
        for (const std::string& k : lora_unet_keys(w, paths)) keys.insert(k);
    }
    const std::string te = "cond_stage_model.transformer.";
    for (const std::string& w : fixture_names("sd1_mc32.tensors", te)) {
        for (const std::string& k : lora_clip_keys(w, {"te", "text_encoder"})) keys.insert(k);
    }
    return keys;
}

TEST(LoraNames, EveryModuleOfTheSd1FixtureLorasHasAWeight) {
    const std::set<std::string> keys = sd1_keys();
    for (const char* list : {"lora_kohya_sd1.tensors", "lora_peft_sd1.tensors",
                             "lora_locon_sd1.tensors", "lora_te_sd1.tensors"}) {
        const std::vector<std::string> modules = lora_modules(list);
        EXPECT_GT(modules.size(), 10u) << list;
        for (const std::string& m : modules) EXPECT_TRUE(keys.count(m)) << list << ": " << m;
    }
    EXPECT_FALSE(keys.count("unet_down_blocks_9_attentions_0_proj_in"));
}

// LDM -> diffusers -> LDM is the identity on the whole UNet (SD1 and SDXL layouts).
TEST(LoraNames, UnetDiffusersPathsInvertTheDiffusersMap) {
    for (const char* list : {"sd1_mc32.tensors", "sdxl_mc32.tensors"}) {
        const std::vector<std::string> ldm = fixture_names(list, "model.diffusion_model.");
        ASSERT_GT(ldm.size(), 100u) << list;
        const UnetDiffusersPaths paths(ldm);
        std::vector<std::string> diffusers;
        for (const std::string& n : ldm) {
            std::string d;
            ASSERT_TRUE(paths.map(n, &d)) << list << ": " << n;
            diffusers.push_back(d);
        }
        const DiffusersUnetMap back(diffusers);
        for (size_t i = 0; i < ldm.size(); ++i) {
            std::string l;
            ASSERT_TRUE(back.map(diffusers[i], &l)) << diffusers[i];
            EXPECT_EQ(l, ldm[i]) << list << ": via " << diffusers[i];
        }
    }
}

TEST(LoraNames, SdxlKohyaNamesUseTheLdmPath) {
    const std::vector<std::string> ldm =
        fixture_names("sdxl_mc32.tensors", "model.diffusion_model.");
    const UnetDiffusersPaths paths(ldm);
    const auto keys =
        lora_unet_keys("input_blocks.4.1.transformer_blocks.0.attn1.to_q.weight", paths);
    const auto k = parse_lora_tensor_name(
        "lora_unet_input_blocks_4_1_transformer_blocks_0_attn1_to_q.lora_down.weight");
    const auto d = parse_lora_tensor_name(
        "unet.down_blocks.1.attentions.0.transformer_blocks.0.attn1.to_q.lora_A.weight");
    EXPECT_NE(std::find(keys.begin(), keys.end(), k->module), keys.end());
    EXPECT_NE(std::find(keys.begin(), keys.end(), d->module), keys.end());
    const auto te2 = lora_clip_keys("text_model.encoder.layers.3.self_attn.q_proj.weight",
                                    {"te2", "text_encoder_2"});
    EXPECT_EQ(te2[0], "te2_text_model_encoder_layers_3_self_attn_q_proj");
    EXPECT_EQ(te2[1], "text_encoder_2_text_model_encoder_layers_3_self_attn_q_proj");
}

// ---------------------------------------------------------------------------- hash

TEST(Sha256, KnownVectors) {
    Sha256 a;
    a.update("abc", 3);
    EXPECT_EQ(a.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    Sha256 e;
    EXPECT_EQ(e.hex_digest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    Sha256 m;
    const std::string s = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    for (char c : s) m.update(&c, 1);  // byte by byte across block boundaries
    EXPECT_EQ(m.hex_digest(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

// ---------------------------------------------------------------------------- math

// Row-major a[m, r] @ b[r, n].
std::vector<float> matmul(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                          int64_t r, int64_t n) {
    std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t k = 0; k < r; ++k)
            for (int64_t j = 0; j < n; ++j) c[i * n + j] += a[i * r + k] * b[k * n + j];
    return c;
}

FakeTensor scalar(const std::string& name, float v) {
    return {name, "F32", {}, to_bytes(std::vector<float>{v})};
}

struct LoraFixture {
    std::unique_ptr<LoraFile> file;
    const LoraModule* module(const std::string& key) const {
        auto it = file->modules().find(key);
        return it == file->modules().end() ? nullptr : &it->second;
    }
};

LoraFixture write_lora(const std::string& name, const std::vector<FakeTensor>& tensors) {
    const std::string dir = testing::test_dir(name);
    const std::string path = dir + "/" + name + ".safetensors";
    write_safetensors(path, tensors);
    auto f = LoraFile::open(path);
    EXPECT_TRUE(f.ok()) << f.status().message();
    return {f.ok() ? std::move(*f) : nullptr};
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << "at " << i;
}

TEST(LoraMath, LowRankWithAlphaAndMultiplier) {
    // Conv weight [6, 5, 3, 3]: LoCon down [2, 5, 3, 3], up [6, 2, 1, 1], alpha 1 -> 0.5.
    auto fx =
        write_lora("locon_alpha", {f32_tensor("lora_unet_c.lora_down.weight", {2, 5, 3, 3}, 3),
                                   f32_tensor("lora_unet_c.lora_up.weight", {6, 2, 1, 1}, 4),
                                   scalar("lora_unet_c.alpha", 1.0f)});
    const LoraModule* m = fx.module("unet_c");
    ASSERT_NE(m, nullptr);
    auto u = read_lora_update(*fx.file, *m, {6, 5, 3, 3}, 0.8f, "w");
    ASSERT_TRUE(u.ok()) << u.status().message();
    EXPECT_TRUE(u->low_rank());
    EXPECT_EQ(u->rank, 2);
    EXPECT_FLOAT_EQ(u->scale, 0.4f);
    auto d = dense_delta(*u, 1);
    ASSERT_TRUE(d.ok());
    std::vector<float> want = matmul(pattern(12, 4), pattern(90, 3), 6, 2, 45);
    for (float& v : want) v *= 0.4f;
    expect_near(*d, want);
}

TEST(LoraMath, LoHaIsTheProductOfTwoLowRankPairs) {
    auto fx = write_lora("loha", {f32_tensor("lora_unet_l.hada_w1_a", {4, 2}, 1),
                                  f32_tensor("lora_unet_l.hada_w1_b", {2, 3}, 2),
                                  f32_tensor("lora_unet_l.hada_w2_a", {4, 2}, 3),
                                  f32_tensor("lora_unet_l.hada_w2_b", {2, 3}, 4),
                                  scalar("lora_unet_l.alpha", 1.0f)});
    auto u = read_lora_update(*fx.file, *fx.module("unet_l"), {4, 3}, 2.0f, "w");
    ASSERT_TRUE(u.ok()) << u.status().message();
    const auto p1 = matmul(pattern(8, 1), pattern(6, 2), 4, 2, 3);
    const auto p2 = matmul(pattern(8, 3), pattern(6, 4), 4, 2, 3);
    std::vector<float> want(12);
    for (size_t i = 0; i < want.size(); ++i) want[i] = p1[i] * p2[i] * (1.0f / 2.0f) * 2.0f;
    expect_near(u->dense, want);
}

TEST(LoraMath, LoKrIsAKroneckerProduct) {
    // w1 [2, 3] whole, w2 = a [3, 2] @ b [2, 4] (rank 2, alpha 4 -> scale 2): weight [6, 12].
    auto fx = write_lora("lokr", {f32_tensor("lora_unet_k.lokr_w1", {2, 3}, 5),
                                  f32_tensor("lora_unet_k.lokr_w2_a", {3, 2}, 6),
                                  f32_tensor("lora_unet_k.lokr_w2_b", {2, 4}, 7),
                                  scalar("lora_unet_k.alpha", 4.0f)});
    auto u = read_lora_update(*fx.file, *fx.module("unet_k"), {6, 12}, 1.0f, "w");
    ASSERT_TRUE(u.ok()) << u.status().message();
    const auto w1 = pattern(6, 5);
    const auto w2 = matmul(pattern(6, 6), pattern(8, 7), 3, 2, 4);
    std::vector<float> want(72);
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 3; ++k)
                for (int l = 0; l < 4; ++l)
                    want[(i * 3 + k) * 12 + j * 4 + l] = 2.0f * w1[i * 3 + j] * w2[k * 4 + l];
    expect_near(u->dense, want);
}

TEST(LoraMath, ShapeMismatchNamesTheTensorAndTheWeight) {
    auto fx = write_lora("bad_shape", {f32_tensor("lora_unet_x.lora_down.weight", {4, 7}, 1),
                                       f32_tensor("lora_unet_x.lora_up.weight", {8, 4}, 2)});
    auto u = read_lora_update(*fx.file, *fx.module("unet_x"), {8, 16}, 1.0f,
                              "model.diffusion_model.x.weight");
    ASSERT_FALSE(u.ok());
    EXPECT_NE(u.status().message().find("lora_unet_x.lora_down.weight"), std::string::npos)
        << u.status().message();
    EXPECT_NE(u.status().message().find("model.diffusion_model.x.weight"), std::string::npos);
}

// ---------------------------------------------------------------------------- patching

TEST(WeightPatch, F16WeightPatchedInPlaceAndRestoredExactly) {
    load_backends();
    const std::string dir = testing::test_dir("patch_f16");
    const std::string path = dir + "/w.safetensors";
    write_safetensors(path, {testing::f16_tensor("w.weight", {8, 16}, 9)});
    TensorIndex index;
    ASSERT_TRUE(index.add(path).ok());
    WeightStore store(index, GGML_TYPE_F16);
    ggml_tensor* t = store.get("w.weight", {16, 8});
    ASSERT_TRUE(store.status().ok()) << store.status().message();
    ASSERT_EQ(t->type, GGML_TYPE_F16);
    const ggml_backend_buffer_type_t cpu =
        ggml_backend_dev_buffer_type(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU));
    ASSERT_TRUE(store.load(cpu).ok());
    // Stored f16 read as f16: used in place from the read-only mapping until patched.
    EXPECT_TRUE(store.in_mapped_file("w.weight"));
    std::vector<ggml_fp16_t> before(128);
    std::memcpy(before.data(), t->data, 256);

    WeightPatcher patcher(store);
    ASSERT_TRUE(patcher.add("w.weight", std::vector<float>(128, 0.25f)).ok());
    EXPECT_FALSE(store.in_mapped_file("w.weight"));
    std::vector<float> now(128), orig(128);
    ggml_fp16_to_fp32_row(static_cast<const ggml_fp16_t*>(t->data), now.data(), 128);
    ggml_fp16_to_fp32_row(before.data(), orig.data(), 128);
    for (int i = 0; i < 128; ++i) EXPECT_NEAR(now[i], orig[i] + 0.25f, 2e-3) << i;

    ASSERT_TRUE(patcher.restore().ok());
    EXPECT_EQ(std::memcmp(before.data(), t->data, 256), 0);
    EXPECT_TRUE(patcher.touched().empty());
}

}  // namespace
}  // namespace ggdiff
