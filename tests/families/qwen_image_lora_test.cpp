// Qwen Image (and Edit) LoRAs: the DiT's weights carry diffusers names, so every layout
// addresses the same path under its own wrapper: the keys of representative weights, and,
// through the LoRA manager, one LoRA saved as kohya / musubi-tuner, diffusers / PEFT,
// ComfyUI and bare (the Lightning LoRAs) patching a toy DiT alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "../io/io_test_util.h"
#include "devices/devices.h"
#include "families/qwen_image/names.h"
#include "io/lora_names.h"
#include "nn/layers.h"
#include "pipeline/lora_manager.h"
#include "runtime/module_runner.h"

namespace ggdiff {
namespace {

using testing::FakeTensor;
using testing::pattern;
using testing::to_bytes;

bool has_key(const std::vector<std::string>& keys, const std::string& k) {
    return std::find(keys.begin(), keys.end(), k) != keys.end();
}

TEST(QwenImageLoraKeys, EveryLayoutNamesTheDiffusersPath) {
    const auto q = qwen_image_lora_keys("transformer_blocks.12.attn.to_q.weight");
    for (const std::string k :
         {"lora_unet_transformer_blocks_12_attn_to_q",
          "diffusion_model.transformer_blocks.12.attn.to_q",
          "transformer.transformer_blocks.12.attn.to_q",
          "base_model.model.transformer_blocks.12.attn.to_q", "transformer_blocks.12.attn.to_q",
          "lycoris_transformer_blocks_12_attn_to_q",
          "lora.model.diffusion_model.transformer_blocks.12.attn.to_q"}) {
        EXPECT_TRUE(has_key(q, normalize_lora_key(k))) << k;
    }
    // Each key once.
    for (const std::string& k : q) EXPECT_EQ(std::count(q.begin(), q.end(), k), 1) << k;
    for (const char* path :
         {"transformer_blocks.0.attn.add_k_proj", "transformer_blocks.0.attn.to_out.0",
          "transformer_blocks.0.attn.to_add_out", "transformer_blocks.0.img_mlp.net.0.proj",
          "transformer_blocks.0.txt_mlp.net.2", "transformer_blocks.0.img_mod.1",
          "transformer_blocks.0.txt_mod.1", "img_in", "txt_in", "proj_out", "norm_out.linear",
          "time_text_embed.timestep_embedder.linear_1"}) {
        const auto keys = qwen_image_lora_keys(std::string(path) + ".weight");
        EXPECT_TRUE(has_key(keys, normalize_lora_key(std::string("transformer.") + path))) << path;
        EXPECT_TRUE(has_key(keys, normalize_lora_key(std::string("diffusion_model.") + path)))
            << path;
    }
    EXPECT_TRUE(qwen_image_lora_keys("transformer_blocks.0.attn.norm_q.bias").empty());
    // The block's own layer is not another's.
    EXPECT_FALSE(has_key(qwen_image_lora_keys("transformer_blocks.1.attn.to_q.weight"),
                         normalize_lora_key("transformer_blocks.12.attn.to_q")));
}

constexpr int64_t kIn = 32;
constexpr int64_t kRank = 2;
const std::string kDit = "model.diffusion_model.";

const std::pair<const char*, int64_t> kWeights[] = {
    {"transformer_blocks.0.attn.to_q", kIn},
    {"transformer_blocks.0.attn.add_v_proj", kIn},
    {"transformer_blocks.0.img_mlp.net.0.proj", 4 * kIn},
    {"transformer_blocks.0.img_mod.1", 6 * kIn},
    {"txt_in", kIn},
};

// One LoRA file in one layout: `wrap` names a module path, `a_b` picks lora_A / lora_B over
// lora_down / lora_up (with alpha = rank).
void write_lora(const std::string& path, const std::function<std::string(std::string)>& wrap,
                bool a_b) {
    std::vector<FakeTensor> t;
    uint32_t seed = 1;
    for (const auto& [name, rows] : kWeights) {
        const std::string m = wrap(name);
        const auto down = to_bytes(pattern(kRank * kIn, seed++));
        const auto up = to_bytes(pattern(rows * kRank, seed++));
        if (a_b) {
            t.push_back({m + ".lora_A.weight", "F32", {kRank, kIn}, down});
            t.push_back({m + ".lora_B.weight", "F32", {rows, kRank}, up});
        } else {
            t.push_back({m + ".lora_down.weight", "F32", {kRank, kIn}, down});
            t.push_back({m + ".lora_up.weight", "F32", {rows, kRank}, up});
            t.push_back({m + ".alpha", "F32", {}, to_bytes(std::vector<float>{float(kRank)})});
        }
    }
    testing::write_safetensors(path, t);
}

std::string underscores(std::string s) {
    std::replace(s.begin(), s.end(), '.', '_');
    return s;
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, float tol) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t j = 0; j < a.size(); ++j) ASSERT_NEAR(a[j], b[j], tol) << "at " << j;
}

TEST(QwenImageLora, EveryLayoutPatchesTheDiTAlike) {
    load_backends();
    const std::string dir = testing::test_dir("qwen_image_lora");
    testing::make_dirs(dir + "/loras");
    write_lora(
        dir + "/loras/kohya.safetensors",
        [](std::string p) { return "lora_unet_" + underscores(p); }, false);
    write_lora(
        dir + "/loras/peft.safetensors", [](std::string p) { return "transformer." + p; }, true);
    write_lora(
        dir + "/loras/comfy.safetensors", [](std::string p) { return "diffusion_model." + p; },
        false);
    write_lora(
        dir + "/loras/lightning.safetensors", [](std::string p) { return p; }, false);

    std::vector<FakeTensor> w;
    uint32_t seed = 50;
    for (const auto& [name, rows] : kWeights)
        w.push_back(testing::f32_tensor(kDit + name + ".weight", {rows, kIn}, ++seed));
    testing::write_safetensors(dir + "/dit.safetensors", w);
    TensorIndex index;
    ASSERT_TRUE(index.add(dir + "/dit.safetensors").ok());
    ModuleRunner runner(index, GGML_TYPE_F32, ModuleDevices{}, 1, "DiT");
    HostTensor x({kIn, 3});
    x.data = pattern(kIn * 3, 77);
    const BuildFn build = [&](GraphBuilder& gb) {
        ggml_tensor* in = gb.input(x);
        std::vector<ggml_tensor*> out;
        for (const auto& [name, rows] : kWeights)
            out.push_back(nn::linear(gb.nn(), in, kDit + name, kIn, rows, false));
        return out;
    };
    Status st = runner.prepare(build);
    ASSERT_TRUE(st.ok()) << st.message();
    Family family;
    family.name = "Qwen Image";
    family.lora_targets.push_back(qwen_image_lora_target(runner, kDit));
    auto run = [&]() {
        auto r = runner.run(build);
        EXPECT_TRUE(r.ok()) << r.status().message();
        std::vector<float> out;
        if (!r.ok()) return out;
        for (const HostTensor& t : *r) out.insert(out.end(), t.data.begin(), t.data.end());
        return out;
    };
    const auto plain = run();
    for (LoraApplyMode mode : {LoraApplyMode::Immediately, LoraApplyMode::AtRuntime}) {
        LoraManager m(dir + "/loras", mode, 1);
        std::vector<float> first;
        for (const char* name : {"kohya", "peft", "comfy", "lightning"}) {
            ASSERT_TRUE(m.apply(family, {{name, 1.0f, 1.0f}}).ok()) << name;
            const auto out = run();
            if (first.empty()) {
                first = out;
                // Every weight moved.
                size_t at = 0;
                for (const auto& [wname, rows] : kWeights) {
                    double d = 0.0;
                    for (int64_t j = 0; j < rows * 3; ++j, ++at)
                        d = std::max(d, double(std::fabs(out[at] - plain[at])));
                    EXPECT_GT(d, 1e-2) << wname;
                }
            } else {
                expect_near(out, first, 1e-4f);
            }
        }
        ASSERT_TRUE(m.apply(family, {}).ok());
        expect_near(run(), plain, 0.0f);
    }
}

}  // namespace
}  // namespace ggdiff
