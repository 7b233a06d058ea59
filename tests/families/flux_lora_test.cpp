// FLUX.1 (and Kontext) LoRAs: the keys a DiT weight answers to in the kohya / ComfyUI / BFL
// and diffusers / PEFT namings, and, through the LoRA manager, a diffusers LoRA (to_q / to_k
// / to_v on thirds of a fused img_attn.qkv, a single block's to_q / to_k / to_v / proj_mlp
// on their rows of linear1, norm_out in (scale, shift) order, ff_context) patching a model
// in original names exactly as the equivalent kohya LoRA does, and a kohya LoRA patching a
// diffusers-loaded model (split q/k/v, mlp_in, adaLN_scale_shift) as the diffusers one does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../io/io_test_util.h"
#include "devices/devices.h"
#include "families/flux/names.h"
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

// The rows `weight` of `shape` takes from LoRA key `key` (none: not a row key of it).
std::vector<LoraRows> rows_of(const std::string& weight, const std::vector<int64_t>& shape,
                              const std::string& key) {
    for (const LoraRowKey& r : flux_lora_row_keys(weight, shape)) {
        if (r.key == normalize_lora_key(key)) return r.rows;
    }
    return {};
}

TEST(FluxLoraKeys, WholeWeightKeysOfBothForms) {
    const auto proj = flux_lora_keys("double_blocks.3.txt_attn.proj.weight");
    for (const std::string k :
         {"lora_unet_double_blocks_3_txt_attn_proj",
          "diffusion_model.double_blocks.3.txt_attn.proj", "double_blocks.3.txt_attn.proj",
          "lora.model.diffusion_model.double_blocks.3.txt_attn.proj",
          "transformer.transformer_blocks.3.attn.to_add_out",
          "lora_transformer_transformer_blocks_3_attn_to_add_out",
          "base_model.model.transformer_blocks.3.attn.to_add_out"}) {
        EXPECT_TRUE(has_key(proj, normalize_lora_key(k))) << k;
    }
    const std::pair<const char*, const char*> same[] = {
        {"double_blocks.0.img_mod.lin.weight", "transformer.transformer_blocks.0.norm1.linear"},
        {"double_blocks.0.txt_mod.lin.weight",
         "transformer.transformer_blocks.0.norm1_context.linear"},
        {"double_blocks.0.img_attn.proj.weight", "transformer.transformer_blocks.0.attn.to_out.0"},
        {"double_blocks.0.img_mlp.0.weight", "transformer.transformer_blocks.0.ff.net.0.proj"},
        {"double_blocks.0.txt_mlp.2.weight", "transformer.transformer_blocks.0.ff_context.net.2"},
        {"double_blocks.0.img_attn.k.weight", "transformer.transformer_blocks.0.attn.to_k"},
        {"single_blocks.5.modulation.lin.weight",
         "transformer.single_transformer_blocks.5.norm.linear"},
        {"single_blocks.5.linear2.weight", "transformer.single_transformer_blocks.5.proj_out"},
        {"single_blocks.5.mlp_in.weight", "transformer.single_transformer_blocks.5.proj_mlp"},
        {"single_blocks.5.v.weight", "transformer.single_transformer_blocks.5.attn.to_v"},
        {"img_in.weight", "transformer.x_embedder"},
        {"txt_in.weight", "transformer.context_embedder"},
        {"time_in.in_layer.weight", "transformer.time_text_embed.timestep_embedder.linear_1"},
        {"guidance_in.out_layer.weight", "transformer.time_text_embed.guidance_embedder.linear_2"},
        {"vector_in.in_layer.weight", "transformer.time_text_embed.text_embedder.linear_1"},
        {"final_layer.linear.weight", "transformer.proj_out"},
        {"final_layer.adaLN_scale_shift.weight", "transformer.norm_out.linear"},
    };
    for (const auto& [weight, key] : same)
        EXPECT_TRUE(has_key(flux_lora_keys(weight), normalize_lora_key(key))) << weight;
    EXPECT_TRUE(has_key(flux_lora_keys("single_blocks.5.linear1.weight"),
                        normalize_lora_key("lora_unet_single_blocks_5_linear1")));
    // Fused weights and the original final modulation answer to no diffusers key as a whole.
    for (const char* w : {"double_blocks.0.img_attn.qkv.weight", "single_blocks.0.linear1.weight",
                          "final_layer.adaLN_modulation.1.weight"})
        for (const std::string& k : flux_lora_keys(w))
            EXPECT_EQ(k.find("transformer"), std::string::npos) << w << ": " << k;
    EXPECT_TRUE(flux_lora_keys("double_blocks.0.img_attn.norm.key_norm.scale").empty());
}

TEST(FluxLoraKeys, RowKeysCutFusedAndSwappedWeights) {
    using Rows = std::vector<LoraRows>;
    EXPECT_EQ(rows_of("double_blocks.1.txt_attn.qkv.weight", {48, 16},
                      "transformer_blocks.1.attn.add_v_proj"),
              (Rows{{0, 32, 16}}));
    // linear1 [3 * 16 + 64, 16]: q, k, v of 16 rows each, then the MLP input.
    EXPECT_EQ(rows_of("single_blocks.2.linear1.weight", {112, 16},
                      "transformer.single_transformer_blocks.2.attn.to_k"),
              (Rows{{0, 16, 16}}));
    EXPECT_EQ(rows_of("single_blocks.2.linear1.weight", {112, 16},
                      "transformer.single_transformer_blocks.2.proj_mlp"),
              (Rows{{0, 48, 64}}));
    // The split parts of a diffusers-loaded model take their rows of a linear1 LoRA.
    EXPECT_EQ(rows_of("single_blocks.2.v.weight", {16, 16}, "lora_unet_single_blocks_2_linear1"),
              (Rows{{32, 0, 16}}));
    EXPECT_EQ(rows_of("single_blocks.2.mlp_in.weight", {64, 16},
                      "diffusion_model.single_blocks.2.linear1"),
              (Rows{{48, 0, 64}}));
    EXPECT_EQ(rows_of("double_blocks.0.img_attn.q.weight", {16, 16},
                      "lora_unet_double_blocks_0_img_attn_qkv"),
              (Rows{{0, 0, 16}}));
    // The final modulation: halves swapped both ways.
    EXPECT_EQ(
        rows_of("final_layer.adaLN_modulation.1.weight", {32, 16}, "transformer.norm_out.linear"),
        (Rows{{0, 16, 16}, {16, 0, 16}}));
    EXPECT_EQ(rows_of("final_layer.adaLN_scale_shift.weight", {32, 16},
                      "lora_unet_final_layer_adaLN_modulation_1"),
              (Rows{{0, 16, 16}, {16, 0, 16}}));
    EXPECT_TRUE(flux_lora_row_keys("double_blocks.0.img_mlp.0.weight", {64, 16}).empty());
}

// ---------------------------------------------------------------- through the LoRA manager

constexpr int64_t kIn = 32;   // hidden width of the toy weights (and rows of q, k, v)
constexpr int64_t kMlp = 64;  // rows of a single block's MLP input
constexpr int64_t kRank = 2;
const std::string kDit = "model.diffusion_model.";

// The weights of a toy FLUX.1 DiT in original names, or as a diffusers file loads them.
std::vector<std::pair<std::string, int64_t>> weights(bool split) {
    std::vector<std::pair<std::string, int64_t>> w = {{"double_blocks.0.txt_mlp.0", 2 * kIn}};
    if (split) {
        for (const char* p : {"q", "k", "v"}) {
            w.push_back({std::string("double_blocks.0.img_attn.") + p, kIn});
            w.push_back({std::string("single_blocks.0.") + p, kIn});
        }
        w.push_back({"single_blocks.0.mlp_in", kMlp});
        w.push_back({"final_layer.adaLN_scale_shift", 2 * kIn});
    } else {
        w.push_back({"double_blocks.0.img_attn.qkv", 3 * kIn});
        w.push_back({"single_blocks.0.linear1", 3 * kIn + kMlp});
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

// Pairs on row ranges of one weight as one pair: down rows stacked, up block-diagonal.
Pair stack(const std::vector<Pair>& parts) {
    Pair s;
    for (const Pair& p : parts) {
        s.down.insert(s.down.end(), p.down.begin(), p.down.end());
        s.out += p.out;
    }
    const int64_t rank = kRank * static_cast<int64_t>(parts.size());
    s.up.assign(s.out * rank, 0.0f);
    int64_t row = 0;
    for (size_t j = 0; j < parts.size(); ++j) {
        for (int64_t r = 0; r < parts[j].out; ++r, ++row)
            for (int64_t c = 0; c < kRank; ++c)
                s.up[row * rank + j * kRank + c] = parts[j].up[r * kRank + c];
    }
    return s;
}

std::vector<FakeTensor> peft(const std::string& module, const Pair& p) {
    return {{module + ".lora_A.weight", "F32", {kRank, kIn}, to_bytes(p.down)},
            {module + ".lora_B.weight", "F32", {p.out, kRank}, to_bytes(p.up)}};
}

std::vector<FakeTensor> kohya(const std::string& module, const Pair& p) {
    const int64_t rank = static_cast<int64_t>(p.down.size()) / kIn;
    return {{module + ".lora_down.weight", "F32", {rank, kIn}, to_bytes(p.down)},
            {module + ".lora_up.weight", "F32", {p.out, rank}, to_bytes(p.up)},
            {module + ".alpha", "F32", {}, to_bytes(std::vector<float>{float(rank)})}};
}

void add(std::vector<FakeTensor>& to, const std::vector<FakeTensor>& more) {
    to.insert(to.end(), more.begin(), more.end());
}

// (scale, shift) rows of an up factor <-> (shift, scale).
Pair swap_halves(Pair p) {
    const int64_t h = p.out / 2 * kRank;
    std::vector<float> s(p.up.begin() + h, p.up.end());
    s.insert(s.end(), p.up.begin(), p.up.begin() + h);
    p.up = s;
    return p;
}

class FluxLora : public ::testing::Test {
  protected:
    void SetUp() override {
        load_backends();
        dir_ = testing::test_dir(std::string("flux_lora_") +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        testing::make_dirs(dir_ + "/loras");
        const Pair q = pair(kIn, 1), k = pair(kIn, 2), v = pair(kIn, 3);
        const Pair sq = pair(kIn, 4), sk = pair(kIn, 5), sv = pair(kIn, 6), mlp = pair(kMlp, 7);
        const Pair fin = pair(2 * kIn, 8), t0 = pair(2 * kIn, 9);

        const std::string b = "transformer.transformer_blocks.0.";
        const std::string s = "transformer.single_transformer_blocks.0.";
        std::vector<FakeTensor> d;
        add(d, peft(b + "attn.to_q", q));
        add(d, peft(b + "attn.to_k", k));
        add(d, peft(b + "attn.to_v", v));
        add(d, peft(b + "ff_context.net.0.proj", t0));
        add(d, peft(s + "attn.to_q", sq));
        add(d, peft(s + "attn.to_k", sk));
        add(d, peft(s + "attn.to_v", sv));
        add(d, peft(s + "proj_mlp", mlp));
        add(d, peft("transformer.norm_out.linear", fin));
        testing::write_safetensors(dir_ + "/loras/diffusers.safetensors", d);

        std::vector<FakeTensor> o;
        add(o, kohya("lora_unet_double_blocks_0_img_attn_qkv", stack({q, k, v})));
        add(o, kohya("lora_unet_double_blocks_0_txt_mlp_0", t0));
        add(o, kohya("lora_unet_single_blocks_0_linear1", stack({sq, sk, sv, mlp})));
        add(o, kohya("lora_unet_final_layer_adaLN_modulation_1", swap_halves(fin)));
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
        family_->name = "FLUX";
        family_->lora_targets.push_back(flux_lora_target(*runner_, kDit));
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

TEST_F(FluxLora, DiffusersAndKohyaFormsPatchBothLayoutsAlike) {
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
