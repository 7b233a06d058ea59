// SD3 LoRAs through the LoRA manager: a diffusers/PEFT LoRA (to_q / to_k / to_v each on a
// third of a fused attn.qkv, norm_out and the pre-only context norm in (scale, shift) order)
// patches a model in original names exactly as the equivalent kohya LoRA on the fused
// weights does, merged (f16, only the rows addressed for quantized weights) or at run time;
// a fused-form LoRA patches a diffusers-loaded model's split q/k/v; unknown modules are
// reported.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "../io/io_test_util.h"
#include "core/log.h"
#include "devices/devices.h"
#include "families/sd3/names.h"
#include "nn/layers.h"
#include "pipeline/lora_manager.h"
#include "runtime/module_runner.h"

namespace ggdiff {
namespace {

using testing::f16_tensor;
using testing::f32_tensor;
using testing::FakeTensor;
using testing::make_dirs;
using testing::pattern;
using testing::test_dir;
using testing::to_bytes;
using testing::write_safetensors;

constexpr int64_t kIn = 32;    // hidden (a Q8_0 block)
constexpr int64_t kHead = 16;  // rows of each of q, k, v (a quantizable fused weight)
constexpr int64_t kRank = 2;   // rank of every LoRA pair
const std::string kDit = "model.diffusion_model.";

// The weights of a tiny MMDiT in original names: a fused qkv, the pre-only context
// modulation (2 chunks), the final modulation and an MLP linear; or, in the diffusers-loaded
// form, split q/k/v and the (scale, shift) norms under their own names.
std::vector<std::pair<std::string, int64_t>> weights(bool split) {
    if (split) {
        return {{"joint_blocks.0.x_block.attn.q", kHead},
                {"joint_blocks.0.x_block.attn.k", kHead},
                {"joint_blocks.0.x_block.attn.v", kHead},
                {"joint_blocks.0.context_block.adaLN_scale_shift", 2 * kIn},
                {"final_layer.adaLN_scale_shift", 2 * kIn},
                {"joint_blocks.0.x_block.mlp.fc1", kIn}};
    }
    return {{"joint_blocks.0.x_block.attn.qkv", 3 * kHead},
            {"joint_blocks.0.context_block.adaLN_modulation.1", 2 * kIn},
            {"final_layer.adaLN_modulation.1", 2 * kIn},
            {"joint_blocks.0.x_block.mlp.fc1", kIn}};
}

// A low-rank pair (down [rank, in], up [out, rank]) by seed.
struct Pair {
    std::vector<float> down, up;
    int64_t out = 0;
};
Pair pair(int64_t out, uint32_t seed) {
    return {pattern(kRank * kIn, seed), pattern(out * kRank, seed + 100), out};
}

std::vector<float> rows_of(const std::vector<float>& m, int64_t cols, int64_t first, int64_t n) {
    return std::vector<float>(m.begin() + first * cols, m.begin() + (first + n) * cols);
}

// The halves of a modulation's up factor swapped ((scale, shift) <-> (shift, scale)).
std::vector<float> swap_halves(const std::vector<float>& up, int64_t rows) {
    std::vector<float> s = rows_of(up, kRank, rows / 2, rows / 2);
    const std::vector<float> first = rows_of(up, kRank, 0, rows / 2);
    s.insert(s.end(), first.begin(), first.end());
    return s;
}

std::vector<FakeTensor> peft(const std::string& module, const Pair& p) {
    return {{module + ".lora_A.weight", "F32", {kRank, kIn}, to_bytes(p.down)},
            {module + ".lora_B.weight", "F32", {p.out, kRank}, to_bytes(p.up)}};
}

std::vector<FakeTensor> kohya(const std::string& module, const std::vector<float>& down,
                              const std::vector<float>& up, int64_t out) {
    const int64_t rank = static_cast<int64_t>(down.size()) / kIn;
    return {{module + ".lora_down.weight", "F32", {rank, kIn}, to_bytes(down)},
            {module + ".lora_up.weight", "F32", {out, rank}, to_bytes(up)},
            {module + ".alpha", "F32", {}, to_bytes(std::vector<float>{float(rank)})}};
}

void add(std::vector<FakeTensor>& to, const std::vector<FakeTensor>& more) {
    to.insert(to.end(), more.begin(), more.end());
}

class Sd3Lora : public ::testing::Test {
  protected:
    void SetUp() override {
        load_backends();
        // One folder per test: ctest -j runs the tests of this fixture side by side.
        dir_ = test_dir(std::string("sd3_lora_") +
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
        make_dirs(dir_ + "/loras");
        const Pair q = pair(kHead, 1), k = pair(kHead, 2), v = pair(kHead, 3);
        const Pair ctx = pair(2 * kIn, 4), fin = pair(2 * kIn, 5), fc1 = pair(kIn, 6);

        // diffusers / PEFT, under "transformer." (the norms' outputs are (scale, shift)).
        std::vector<FakeTensor> d;
        add(d, peft("transformer.transformer_blocks.0.attn.to_q", q));
        add(d, peft("transformer.transformer_blocks.0.attn.to_k", k));
        add(d, peft("transformer.transformer_blocks.0.attn.to_v", v));
        add(d, peft("transformer.transformer_blocks.0.norm1_context.linear", ctx));
        add(d, peft("transformer.norm_out.linear", fin));
        add(d, peft("transformer.transformer_blocks.0.ff.net.0.proj", fc1));
        add(d, peft("transformer.transformer_blocks.0.attn.to_bogus", q));
        write_safetensors(dir_ + "/loras/diffusers.safetensors", d);

        // The same as kohya on the original modules: the three pairs stacked into one of
        // rank 3 * kRank (down rows stacked, up block-diagonal), halves swapped back.
        std::vector<float> down = q.down, up(3 * kHead * 3 * kRank, 0.0f);
        down.insert(down.end(), k.down.begin(), k.down.end());
        down.insert(down.end(), v.down.begin(), v.down.end());
        for (int j = 0; j < 3; ++j) {
            const Pair& p = j == 0 ? q : j == 1 ? k : v;
            for (int64_t r = 0; r < kHead; ++r)
                for (int64_t c = 0; c < kRank; ++c)
                    up[(j * kHead + r) * 3 * kRank + j * kRank + c] = p.up[r * kRank + c];
        }
        std::vector<FakeTensor> o;
        add(o, kohya("lora_unet_joint_blocks_0_x_block_attn_qkv", down, up, 3 * kHead));
        add(o, kohya("lora_unet_joint_blocks_0_context_block_adaLN_modulation_1", ctx.down,
                     swap_halves(ctx.up, 2 * kIn), 2 * kIn));
        add(o, kohya("lora_unet_final_layer_adaLN_modulation_1", fin.down,
                     swap_halves(fin.up, 2 * kIn), 2 * kIn));
        add(o, kohya("lora_unet_joint_blocks_0_x_block_mlp_fc1", fc1.down, fc1.up, kIn));
        write_safetensors(dir_ + "/loras/kohya.safetensors", o);

        // Only to_k: a third of the fused weight.
        write_safetensors(dir_ + "/loras/only_k.safetensors",
                          peft("transformer_blocks.0.attn.to_k", k));
    }

    // Writes the model (original or split names) and prepares a runner for it.
    void open(bool split, int weight_type) {
        std::vector<FakeTensor> w;
        uint32_t seed = 50;
        for (const auto& [name, rows] : weights(split))
            w.push_back(f16_tensor(kDit + name + ".weight", {rows, kIn}, ++seed));
        const std::string path = dir_ + (split ? "/split.safetensors" : "/fused.safetensors");
        write_safetensors(path, w);
        index_ = std::make_unique<TensorIndex>();
        ASSERT_TRUE(index_->add(path).ok());
        runner_ = std::make_unique<ModuleRunner>(*index_, weight_type, ModuleDevices{}, 1, "MMDiT");
        split_ = split;
        x_ = HostTensor({kIn, 3});
        x_.data = pattern(kIn * 3, 77);
        Status st = runner_->prepare(build());
        ASSERT_TRUE(st.ok()) << st.message();
        family_ = std::make_unique<Family>();
        family_->name = "SD3";
        family_->lora_targets.push_back(sd3_lora_target(*runner_));
    }

    BuildFn build() {
        return [this](GraphBuilder& gb) {
            ggml_tensor* in = gb.input(x_);
            std::vector<ggml_tensor*> out;
            for (const auto& [name, rows] : weights(split_))
                out.push_back(nn::linear(gb.nn(), in, kDit + name, kIn, rows, false));
            return out;
        };
    }

    // The weights' bytes by name.
    std::map<std::string, std::string> snapshot() {
        std::map<std::string, std::string> s;
        for (const auto& [name, rows] : weights(split_)) {
            const ggml_tensor* t = runner_->weights().tensor(kDit + name + ".weight");
            s[name] = std::string(static_cast<const char*>(t->data), ggml_nbytes(t));
        }
        return s;
    }

    std::vector<HostTensor> run() {
        auto r = runner_->run(build());
        EXPECT_TRUE(r.ok()) << r.status().message();
        return r.ok() ? *r : std::vector<HostTensor>{};
    }

    Status apply(LoraManager& m, const std::string& name) {
        return m.apply(*family_, name.empty() ? std::vector<LoraRequest>{}
                                              : std::vector<LoraRequest>{{name, 1.0f, 1.0f}});
    }

    std::string dir_;
    std::unique_ptr<TensorIndex> index_;
    std::unique_ptr<ModuleRunner> runner_;
    std::unique_ptr<Family> family_;
    HostTensor x_;
    bool split_ = false;
};

void expect_near(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b, float tol) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].data.size(), b[i].data.size());
        for (size_t j = 0; j < a[i].data.size(); ++j)
            ASSERT_NEAR(a[i].data[j], b[i].data[j], tol) << "output " << i << " at " << j;
    }
}

TEST_F(Sd3Lora, DiffusersLoraOnFusedWeightsEqualsTheKohyaOne) {
    open(false, -1);
    const auto before = snapshot();
    std::vector<std::string> warnings;
    set_log_sink([&](LogLevel l, const std::string& m) {
        if (l == LogLevel::Warn) warnings.push_back(m);
    });
    LoraManager m(dir_ + "/loras", LoraApplyMode::Immediately, 1);
    Status st = apply(m, "diffusers");
    set_log_sink(nullptr);
    ASSERT_TRUE(st.ok()) << st.message();
    const auto diffusers = snapshot();
    ASSERT_TRUE(apply(m, "kohya").ok());
    const auto kohya = snapshot();
    for (const auto& [name, rows] : weights(false)) {
        EXPECT_NE(diffusers.at(name), before.at(name)) << name;
        EXPECT_EQ(diffusers.at(name), kohya.at(name)) << name;
    }
    // The one module that matches nothing is reported by its tensor name.
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("1 of its modules match no weight"), std::string::npos)
        << warnings[0];
    EXPECT_NE(warnings[0].find("transformer.transformer_blocks.0.attn.to_bogus.lora_"),
              std::string::npos)
        << warnings[0];
    ASSERT_TRUE(apply(m, "").ok());
    EXPECT_EQ(snapshot(), before);
}

TEST_F(Sd3Lora, RunTimeUpdatesOfPartsEqualTheMergedOnes) {
    open(false, GGML_TYPE_F32);
    const auto plain = run();
    LoraManager merged(dir_ + "/loras", LoraApplyMode::Immediately, 1);
    ASSERT_TRUE(apply(merged, "diffusers").ok());
    const auto want = run();
    ASSERT_TRUE(apply(merged, "").ok());
    expect_near(run(), plain, 0.0f);

    for (const char* lora : {"diffusers", "kohya"}) {
        LoraManager runtime(dir_ + "/loras", LoraApplyMode::AtRuntime, 1);
        ASSERT_TRUE(apply(runtime, lora).ok());
        expect_near(run(), want, 1e-4f);
        ASSERT_TRUE(apply(runtime, "").ok());
    }
    // The LoRA does move every output.
    for (size_t i = 0; i < plain.size(); ++i) {
        double diff = 0.0;
        for (size_t j = 0; j < plain[i].data.size(); ++j)
            diff += std::abs(plain[i].data[j] - want[i].data[j]);
        EXPECT_GT(diff, 1e-2) << "output " << i;
    }
}

TEST_F(Sd3Lora, QuantizedFusedWeightPatchedOnlyInTheAddressedRows) {
    open(false, GGML_TYPE_Q8_0);
    const std::string qkv = "joint_blocks.0.x_block.attn.qkv";
    ASSERT_EQ(runner_->weights().tensor(kDit + qkv + ".weight")->type, GGML_TYPE_Q8_0);
    const auto before = snapshot().at(qkv);
    LoraManager m(dir_ + "/loras", LoraApplyMode::Immediately, 1);
    ASSERT_TRUE(apply(m, "only_k").ok());
    const auto after = snapshot().at(qkv);
    const size_t row = ggml_row_size(GGML_TYPE_Q8_0, kIn);
    EXPECT_EQ(after.substr(0, kHead * row), before.substr(0, kHead * row));
    EXPECT_NE(after.substr(kHead * row, kHead * row), before.substr(kHead * row, kHead * row));
    EXPECT_EQ(after.substr(2 * kHead * row), before.substr(2 * kHead * row));
    ASSERT_TRUE(apply(m, "").ok());
    EXPECT_EQ(snapshot().at(qkv), before);
}

// A diffusers-loaded model (split q/k/v, (scale, shift) norms): the diffusers LoRA patches
// whole weights, the kohya one (fused, (shift, scale)) the same weights by parts.
TEST_F(Sd3Lora, FusedLoraOnSplitWeightsEqualsTheDiffusersOne) {
    open(true, GGML_TYPE_F32);
    LoraManager m(dir_ + "/loras", LoraApplyMode::Immediately, 1);
    ASSERT_TRUE(apply(m, "diffusers").ok());
    const auto diffusers = run();
    ASSERT_TRUE(apply(m, "kohya").ok());
    expect_near(run(), diffusers, 1e-5f);
}

}  // namespace
}  // namespace ggdiff
