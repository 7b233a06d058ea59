// FLUX.2 LoRAs through the LoRA manager: a diffusers/PEFT LoRA (to_q / to_k / to_v each on a
// third of a fused img_attn.qkv, norm_out in (scale, shift) order, the single blocks' fused
// to_qkv_mlp_proj, ff.linear_in) patches a model in BFL names exactly as the equivalent
// kohya LoRA does, and a kohya LoRA patches a diffusers-loaded model (split q/k/v,
// adaLN_scale_shift) as the diffusers one does.
#include <gtest/gtest.h>

#include <cmath>

#include "../io/io_test_util.h"
#include "devices/devices.h"
#include "families/flux2/names.h"
#include "nn/layers.h"
#include "pipeline/lora_manager.h"
#include "runtime/module_runner.h"

namespace ggdiff {
namespace {

using testing::FakeTensor;
using testing::pattern;
using testing::to_bytes;

constexpr int64_t kIn = 32;    // hidden width of the toy weights
constexpr int64_t kHead = 16;  // rows of each of q, k, v
constexpr int64_t kRank = 2;
const std::string kDit = "model.diffusion_model.";

// The weights of a toy FLUX.2 DiT in BFL names, or as a diffusers file loads them.
std::vector<std::pair<std::string, int64_t>> weights(bool split) {
    std::vector<std::pair<std::string, int64_t>> w = {
        {"single_blocks.0.linear1", 3 * kHead + 2 * kIn},
        {"double_blocks.0.img_mlp.0", 2 * kIn},
    };
    if (split) {
        for (const char* p : {"q", "k", "v"})
            w.push_back({std::string("double_blocks.0.img_attn.") + p, kHead});
        w.push_back({"final_layer.adaLN_scale_shift", 2 * kIn});
    } else {
        w.push_back({"double_blocks.0.img_attn.qkv", 3 * kHead});
        w.push_back({"final_layer.adaLN_modulation.1", 2 * kIn});
    }
    return w;
}

struct Pair {
    std::vector<float> down, up;
    int64_t out = 0;
};
Pair pair(int64_t out, uint32_t seed) {
    return {pattern(kRank * kIn, seed), pattern(out * kRank, seed + 100), out};
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

// (scale, shift) rows of an up factor <-> (shift, scale).
std::vector<float> swap_halves(const std::vector<float>& up, int64_t rows) {
    const int64_t h = rows / 2 * kRank;
    std::vector<float> s(up.begin() + h, up.end());
    s.insert(s.end(), up.begin(), up.begin() + h);
    return s;
}

class Flux2Lora : public ::testing::Test {
  protected:
    void SetUp() override {
        load_backends();
        dir_ = testing::test_dir(std::string("flux2_lora_") +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        testing::make_dirs(dir_ + "/loras");
        const Pair q = pair(kHead, 1), k = pair(kHead, 2), v = pair(kHead, 3);
        const Pair fin = pair(2 * kIn, 4), l1 = pair(3 * kHead + 2 * kIn, 5), m0 = pair(2 * kIn, 6);

        std::vector<FakeTensor> d;
        add(d, peft("transformer.transformer_blocks.0.attn.to_q", q));
        add(d, peft("transformer.transformer_blocks.0.attn.to_k", k));
        add(d, peft("transformer.transformer_blocks.0.attn.to_v", v));
        add(d, peft("transformer.norm_out.linear", fin));
        add(d, peft("transformer.single_transformer_blocks.0.attn.to_qkv_mlp_proj", l1));
        add(d, peft("transformer.transformer_blocks.0.ff.linear_in", m0));
        testing::write_safetensors(dir_ + "/loras/diffusers.safetensors", d);

        // The same on the BFL modules: q, k, v stacked into one pair of rank 3 * kRank (down
        // rows stacked, up block-diagonal), the final modulation's halves swapped back.
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
        add(o, kohya("lora_unet_double_blocks_0_img_attn_qkv", down, up, 3 * kHead));
        add(o, kohya("lora_unet_final_layer_adaLN_modulation_1", fin.down,
                     swap_halves(fin.up, 2 * kIn), 2 * kIn));
        add(o, kohya("lora_unet_single_blocks_0_linear1", l1.down, l1.up, l1.out));
        add(o, kohya("lora_unet_double_blocks_0_img_mlp_0", m0.down, m0.up, m0.out));
        testing::write_safetensors(dir_ + "/loras/kohya.safetensors", o);
    }

    void open(bool split) {
        std::vector<FakeTensor> w;
        uint32_t seed = 50;
        for (const auto& [name, rows] : weights(split))
            w.push_back(testing::f32_tensor(kDit + name + ".weight", {rows, kIn}, ++seed));
        const std::string path = dir_ + (split ? "/split.safetensors" : "/fused.safetensors");
        testing::write_safetensors(path, w);
        index_ = std::make_unique<TensorIndex>();
        ASSERT_TRUE(index_->add(path).ok());
        runner_ = std::make_unique<ModuleRunner>(*index_, GGML_TYPE_F32, ModuleDevices{}, 1, "DiT");
        split_ = split;
        x_ = HostTensor({kIn, 3});
        x_.data = pattern(kIn * 3, 77);
        Status st = runner_->prepare(build());
        ASSERT_TRUE(st.ok()) << st.message();
        family_ = std::make_unique<Family>();
        family_->name = "FLUX.2";
        family_->lora_targets.push_back(flux2_lora_target(*runner_));
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

    // Every output, concatenated.
    std::vector<float> run() {
        auto r = runner_->run(build());
        EXPECT_TRUE(r.ok()) << r.status().message();
        std::vector<float> out;
        if (!r.ok()) return out;
        for (const HostTensor& t : *r) out.insert(out.end(), t.data.begin(), t.data.end());
        return out;
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

void expect_near(const std::vector<float>& a, const std::vector<float>& b, float tol) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t j = 0; j < a.size(); ++j) ASSERT_NEAR(a[j], b[j], tol) << "at " << j;
}

double moved(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0.0;
    for (size_t j = 0; j < a.size() && j < b.size(); ++j)
        d = std::max(d, double(std::fabs(a[j] - b[j])));
    return d;
}

TEST_F(Flux2Lora, DiffusersAndKohyaFormsPatchBothLayoutsAlike) {
    for (bool split : {false, true}) {
        open(split);
        const auto plain = run();
        LoraManager m(dir_ + "/loras", LoraApplyMode::Immediately, 1);
        ASSERT_TRUE(apply(m, "diffusers").ok());
        const auto diffusers = run();
        ASSERT_TRUE(apply(m, "kohya").ok());
        const auto kohya_out = run();
        EXPECT_GT(moved(plain, diffusers), 1e-2) << split;
        expect_near(kohya_out, diffusers, 1e-5f);
        ASSERT_TRUE(apply(m, "").ok());
        expect_near(run(), plain, 0.0f);
        // At run time: the same numbers.
        LoraManager rt(dir_ + "/loras", LoraApplyMode::AtRuntime, 1);
        ASSERT_TRUE(apply(rt, "diffusers").ok());
        expect_near(run(), diffusers, 1e-4f);
        ASSERT_TRUE(apply(rt, "").ok());
    }
}

}  // namespace
}  // namespace ggdiff
