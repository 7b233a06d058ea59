// Chroma names: the diffusers ChromaTransformer2DModel renamed to the original single-file
// names (FLUX.1's blocks without modulation linears, the approximator's linear_1 / linear_2 /
// norms.N.weight as in_layer / out_layer / norms.N.scale), ahead of FLUX.1's diffusers form
// whose detection a Chroma transformer also satisfies; bare single files filed under the
// diffusion model; the ChromaPipeline folder (one T5 text_encoder/); and the LoRA keys of
// both forms, checked key by key, back through the rename (names map round trip), and
// through the LoRA manager (diffusers / PEFT, kohya, ai-toolkit and OneTrainer files patching
// a model in original names and a diffusers-loaded one alike).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "../io/io_test_util.h"
#include "devices/devices.h"
#include "families/chroma/names.h"
#include "families/flux/names.h"
#include "families/registry.h"
#include "io/lora_names.h"
#include "io/name_map.h"
#include "io/name_util.h"
#include "io/tensor_index.h"
#include "nn/layers.h"
#include "pipeline/lora_manager.h"
#include "runtime/module_runner.h"

namespace ggdiff {
namespace {

using testing::f16_tensor;
using testing::FakeTensor;
using testing::pattern;
using testing::to_bytes;

const std::string kP = "model.diffusion_model.";

// Chroma's layout first, then the registry's others (recipe order: Chroma before FLUX).
ModelLayouts chroma_first() {
    ModelLayouts l = {&kChromaLayout};
    for (const ModelLayout* x : model_layouts()) {
        if (x != &kChromaLayout) l.push_back(x);
    }
    return l;
}

std::map<std::string, std::string> mapped(const std::vector<std::string>& names,
                                          const std::string& prefix,
                                          const ModelLayouts& layouts = chroma_first()) {
    std::map<std::string, std::string> out;
    for (const NameMapping& m : map_tensor_names(names, prefix, nullptr, layouts))
        out[names[m.source]] = m.name;
    return out;
}

// diffusers ChromaTransformer2DModel -> original, one of every member kind.
const std::map<std::string, std::string> kRenamed = {
    {"x_embedder.weight", "img_in.weight"},
    {"x_embedder.bias", "img_in.bias"},
    {"context_embedder.weight", "txt_in.weight"},
    {"distilled_guidance_layer.in_proj.weight", "distilled_guidance_layer.in_proj.weight"},
    {"distilled_guidance_layer.in_proj.bias", "distilled_guidance_layer.in_proj.bias"},
    {"distilled_guidance_layer.layers.0.linear_1.weight",
     "distilled_guidance_layer.layers.0.in_layer.weight"},
    {"distilled_guidance_layer.layers.0.linear_1.bias",
     "distilled_guidance_layer.layers.0.in_layer.bias"},
    {"distilled_guidance_layer.layers.4.linear_2.weight",
     "distilled_guidance_layer.layers.4.out_layer.weight"},
    {"distilled_guidance_layer.layers.4.linear_2.bias",
     "distilled_guidance_layer.layers.4.out_layer.bias"},
    {"distilled_guidance_layer.norms.0.weight", "distilled_guidance_layer.norms.0.scale"},
    {"distilled_guidance_layer.norms.4.weight", "distilled_guidance_layer.norms.4.scale"},
    {"distilled_guidance_layer.out_proj.weight", "distilled_guidance_layer.out_proj.weight"},
    {"transformer_blocks.2.attn.to_q.weight", "double_blocks.2.img_attn.q.weight"},
    {"transformer_blocks.2.attn.to_k.bias", "double_blocks.2.img_attn.k.bias"},
    {"transformer_blocks.2.attn.to_v.weight", "double_blocks.2.img_attn.v.weight"},
    {"transformer_blocks.2.attn.add_q_proj.weight", "double_blocks.2.txt_attn.q.weight"},
    {"transformer_blocks.2.attn.add_k_proj.weight", "double_blocks.2.txt_attn.k.weight"},
    {"transformer_blocks.2.attn.add_v_proj.bias", "double_blocks.2.txt_attn.v.bias"},
    {"transformer_blocks.2.attn.norm_q.weight", "double_blocks.2.img_attn.norm.query_norm.scale"},
    {"transformer_blocks.2.attn.norm_k.weight", "double_blocks.2.img_attn.norm.key_norm.scale"},
    {"transformer_blocks.2.attn.norm_added_q.weight",
     "double_blocks.2.txt_attn.norm.query_norm.scale"},
    {"transformer_blocks.2.attn.norm_added_k.weight",
     "double_blocks.2.txt_attn.norm.key_norm.scale"},
    {"transformer_blocks.2.attn.to_out.0.weight", "double_blocks.2.img_attn.proj.weight"},
    {"transformer_blocks.2.attn.to_add_out.weight", "double_blocks.2.txt_attn.proj.weight"},
    {"transformer_blocks.2.ff.net.0.proj.weight", "double_blocks.2.img_mlp.0.weight"},
    {"transformer_blocks.2.ff.net.2.bias", "double_blocks.2.img_mlp.2.bias"},
    {"transformer_blocks.2.ff_context.net.0.proj.weight", "double_blocks.2.txt_mlp.0.weight"},
    {"transformer_blocks.2.ff_context.net.2.weight", "double_blocks.2.txt_mlp.2.weight"},
    {"single_transformer_blocks.9.attn.to_q.weight", "single_blocks.9.q.weight"},
    {"single_transformer_blocks.9.attn.to_k.weight", "single_blocks.9.k.weight"},
    {"single_transformer_blocks.9.attn.to_v.bias", "single_blocks.9.v.bias"},
    {"single_transformer_blocks.9.proj_mlp.weight", "single_blocks.9.mlp_in.weight"},
    {"single_transformer_blocks.9.proj_out.weight", "single_blocks.9.linear2.weight"},
    {"single_transformer_blocks.9.attn.norm_q.weight", "single_blocks.9.norm.query_norm.scale"},
    {"single_transformer_blocks.9.attn.norm_k.weight", "single_blocks.9.norm.key_norm.scale"},
    {"proj_out.weight", "final_layer.linear.weight"},
    {"proj_out.bias", "final_layer.linear.bias"},
};

std::vector<std::string> diffusers_names() {
    std::vector<std::string> names;
    for (const auto& [from, to] : kRenamed) names.push_back(from);
    return names;
}

// The second shard of a sharded diffusers Chroma transformer (Chroma1-HD's is two files):
// the later blocks and proj_out, no approximator nor embedders.
const std::vector<std::string> kShard2 = {
    "transformer_blocks.18.attn.to_q.weight",
    "transformer_blocks.18.attn.add_k_proj.weight",
    "transformer_blocks.18.ff.net.2.weight",
    "transformer_blocks.18.ff_context.net.0.proj.weight",
    "single_transformer_blocks.0.attn.to_q.weight",
    "single_transformer_blocks.0.attn.norm_k.weight",
    "single_transformer_blocks.0.proj_mlp.weight",
    "single_transformer_blocks.0.proj_out.weight",
    "proj_out.weight",
};

TEST(ChromaNames, DiffusersTransformerToOriginalNames) {
    const auto m = mapped(diffusers_names(), kP);
    ASSERT_EQ(m.size(), kRenamed.size());
    for (const auto& [from, to] : kRenamed) EXPECT_EQ(m.at(from), kP + to) << from;
    // Given as -m, a bare diffusers Chroma transformer is filed under the diffusion model.
    const auto bare = mapped(diffusers_names(), "");
    EXPECT_EQ(bare.at("distilled_guidance_layer.layers.0.linear_1.weight"),
              kP + "distilled_guidance_layer.layers.0.in_layer.weight");
    EXPECT_EQ(bare.at("x_embedder.weight"), kP + "img_in.weight");
    // FLUX.1's renamer alone would keep the approximator's diffusers names.
    const ModelLayouts flux_only = {&kFluxLayout};
    EXPECT_EQ(mapped(diffusers_names(), kP, flux_only)
                  .at("distilled_guidance_layer.layers.0.linear_1.weight"),
              kP + "distilled_guidance_layer.layers.0.linear_1.weight");
}

// A ComfyUI-style chroma-unlocked file: original names, bare or under model.diffusion_model.
TEST(ChromaNames, OriginalSingleFilesKeepTheirNames) {
    const std::vector<std::string> original = {
        "distilled_guidance_layer.in_proj.weight",
        "distilled_guidance_layer.layers.3.in_layer.weight",
        "distilled_guidance_layer.norms.3.scale",
        "distilled_guidance_layer.out_proj.bias",
        "img_in.weight",
        "txt_in.weight",
        "double_blocks.0.img_attn.qkv.weight",
        "double_blocks.0.txt_attn.norm.key_norm.scale",
        "single_blocks.1.linear1.weight",
        "single_blocks.1.linear2.weight",
        "final_layer.linear.weight",
    };
    std::vector<std::string> wrapped;
    for (const std::string& n : original) wrapped.push_back(kP + n);
    const auto bare = mapped(original, "");
    const auto full = mapped(wrapped, "");
    const auto role = mapped(original, kP);
    ASSERT_EQ(bare.size(), original.size());
    for (const std::string& n : original) {
        EXPECT_EQ(bare.at(n), kP + n);
        EXPECT_EQ(full.at(kP + n), kP + n);
        EXPECT_EQ(role.at(n), kP + n);
    }
    // The registry's layouts file it as the diffusion model as well (FLUX.1's bare check).
    EXPECT_EQ(mapped(original, "", model_layouts()).at("distilled_guidance_layer.norms.3.scale"),
              kP + "distilled_guidance_layer.norms.3.scale");
}

TEST(ChromaNames, DetectsTheDiffusersFormOnly) {
    EXPECT_TRUE(DiffusersChromaMap::detect(diffusers_names()));
    // A shard holding the approximator alone, in diffusers spelling, or with the embedders.
    EXPECT_TRUE(DiffusersChromaMap::detect({"distilled_guidance_layer.in_proj.weight",
                                            "distilled_guidance_layer.layers.0.linear_1.weight"}));
    EXPECT_TRUE(DiffusersChromaMap::detect(
        {"distilled_guidance_layer.norms.2.weight", "distilled_guidance_layer.out_proj.weight"}));
    EXPECT_TRUE(DiffusersChromaMap::detect(
        {"distilled_guidance_layer.in_proj.weight", "context_embedder.weight"}));
    // Original names are not it, nor FLUX.1's or FLUX.2's diffusers forms (no approximator).
    EXPECT_FALSE(DiffusersChromaMap::detect({"distilled_guidance_layer.in_proj.weight",
                                             "distilled_guidance_layer.layers.0.in_layer.weight",
                                             "distilled_guidance_layer.norms.0.scale",
                                             "img_in.weight", "double_blocks.0.img_attn.qkv.weight",
                                             "single_blocks.0.linear1.weight"}));
    const std::vector<std::string> flux1 = {
        "x_embedder.weight", "time_text_embed.timestep_embedder.linear_1.weight",
        "transformer_blocks.0.norm1.linear.weight", "single_transformer_blocks.0.proj_mlp.weight",
        "norm_out.linear.weight"};
    EXPECT_FALSE(DiffusersChromaMap::detect(flux1));
    EXPECT_FALSE(DiffusersChromaMap::detect(
        {"x_embedder.weight", "double_stream_modulation_img.linear.weight",
         "single_transformer_blocks.0.attn.to_qkv_mlp_proj.weight"}));
    // A later shard of a Chroma transformer: blocks without modulation, no approximator. The
    // shards of FLUX.1 (modulation), SD3 (modulation), FLUX.2 and Qwen Image (other members)
    // are not it.
    EXPECT_TRUE(DiffusersChromaMap::detect(kShard2));
    EXPECT_TRUE(DiffusersChromaMap::detect({"single_transformer_blocks.30.proj_mlp.weight"}));
    EXPECT_FALSE(DiffusersChromaMap::detect({"transformer_blocks.18.norm1.linear.weight",
                                             "transformer_blocks.18.ff_context.net.0.proj.weight",
                                             "single_transformer_blocks.0.norm.linear.weight",
                                             "single_transformer_blocks.0.proj_mlp.weight"}));
    EXPECT_FALSE(DiffusersChromaMap::detect({"transformer_blocks.3.norm1.linear.weight",
                                             "transformer_blocks.3.norm1_context.linear.weight",
                                             "transformer_blocks.3.ff_context.net.0.proj.weight"}));
    EXPECT_FALSE(
        DiffusersChromaMap::detect({"transformer_blocks.4.ff_context.linear_in.weight",
                                    "single_transformer_blocks.0.attn.to_qkv_mlp_proj.weight"}));
    EXPECT_FALSE(DiffusersChromaMap::detect({"transformer_blocks.5.img_mod.1.weight",
                                             "transformer_blocks.5.attn.add_q_proj.weight",
                                             "transformer_blocks.5.txt_mlp.net.0.proj.weight"}));
    // ... so FLUX.1's diffusers form still renames as FLUX.1 with Chroma's layout ahead of it.
    const auto f = mapped(flux1, kP);
    EXPECT_EQ(f.at("time_text_embed.timestep_embedder.linear_1.weight"),
              kP + "time_in.in_layer.weight");
    EXPECT_EQ(f.at("norm_out.linear.weight"), kP + "final_layer.adaLN_scale_shift.weight");
    // The approximator's in_proj / out_proj and unknown names are left alone.
    std::string out;
    EXPECT_FALSE(DiffusersChromaMap::map("distilled_guidance_layer.in_proj.weight", &out));
    EXPECT_FALSE(DiffusersChromaMap::map("distilled_guidance_layer.layers.0.act_1.weight", &out));
    EXPECT_FALSE(DiffusersChromaMap::map("distilled_guidance_layer.norms.0.bias", &out));
}

// model_index.json's ChromaPipeline: transformer/ renamed, vae/ as FLUX's ae, and its one
// text_encoder/ (T5EncoderModel) under the T5-XXL prefix, where a FluxPipeline's
// text_encoder/ is CLIP-L.
TEST(ChromaNames, DiffusersPipelineFolderRouted) {
    const std::string dir = testing::test_dir("chroma_diffusers_route");
    for (const char* sub : {"transformer", "vae", "text_encoder", "tokenizer", "scheduler"})
        testing::make_dirs(dir + "/" + sub);
    testing::write_bytes(dir + "/tokenizer/tokenizer.json", "{}");
    testing::write_safetensors(
        dir + "/transformer/diffusion_pytorch_model.safetensors",
        {f16_tensor("x_embedder.weight", {8, 16}),
         f16_tensor("distilled_guidance_layer.in_proj.weight", {8, 16}),
         f16_tensor("distilled_guidance_layer.layers.0.linear_1.weight", {8, 8}),
         f16_tensor("distilled_guidance_layer.norms.0.weight", {8}),
         f16_tensor("transformer_blocks.0.attn.to_q.weight", {8, 8}),
         f16_tensor("single_transformer_blocks.0.proj_mlp.weight", {32, 8}),
         f16_tensor("proj_out.weight", {16, 8})});
    testing::write_safetensors(dir + "/vae/diffusion_pytorch_model.safetensors",
                               {f16_tensor("decoder.conv_in.weight", {4, 16, 3, 3})});
    testing::write_safetensors(
        dir + "/text_encoder/model.safetensors",
        {f16_tensor("shared.weight", {16, 8}),
         f16_tensor("encoder.block.0.layer.0.SelfAttention.q.weight", {8, 8})});
    for (const char* cls : {"ChromaPipeline", "ChromaImg2ImgPipeline"}) {
        testing::write_bytes(dir + "/model_index.json",
                             std::string(R"({"_class_name": ")") + cls + "\"}");
        TensorIndex index(chroma_first());
        Status st = index.add(dir);
        ASSERT_TRUE(st.ok()) << st.message();
        EXPECT_TRUE(index.has(kP + "img_in.weight")) << cls;
        EXPECT_TRUE(index.has(kP + "distilled_guidance_layer.in_proj.weight"));
        EXPECT_TRUE(index.has(kP + "distilled_guidance_layer.layers.0.in_layer.weight"));
        EXPECT_TRUE(index.has(kP + "distilled_guidance_layer.norms.0.scale"));
        EXPECT_TRUE(index.has(kP + "double_blocks.0.img_attn.q.weight"));
        EXPECT_TRUE(index.has(kP + "single_blocks.0.mlp_in.weight"));
        EXPECT_TRUE(index.has(kP + "final_layer.linear.weight"));
        EXPECT_TRUE(index.has("first_stage_model.decoder.conv_in.weight"));
        EXPECT_TRUE(index.has("text_encoders.t5xxl.shared.weight"));
        EXPECT_TRUE(
            index.has("text_encoders.t5xxl.encoder.block.0.layer.0.SelfAttention.q.weight"));
        EXPECT_FALSE(index.has_prefix("text_encoders.clip_l.")) << cls;
    }
    // A transformer/ in two shards (an index names them): both renamed.
    testing::write_bytes(dir + "/model_index.json", R"({"_class_name": "ChromaPipeline"})");
    std::remove((dir + "/transformer/diffusion_pytorch_model.safetensors").c_str());
    testing::write_safetensors(
        dir + "/transformer/diffusion_pytorch_model-00001-of-00002.safetensors",
        {f16_tensor("distilled_guidance_layer.in_proj.weight", {8, 16}),
         f16_tensor("distilled_guidance_layer.layers.0.linear_1.weight", {8, 8}),
         f16_tensor("context_embedder.weight", {8, 16}), f16_tensor("x_embedder.weight", {8, 16}),
         f16_tensor("transformer_blocks.0.attn.to_q.weight", {8, 8})});
    std::vector<FakeTensor> shard2;
    for (const std::string& n : kShard2) shard2.push_back(f16_tensor(n, {8, 8}));
    testing::write_safetensors(
        dir + "/transformer/diffusion_pytorch_model-00002-of-00002.safetensors", shard2);
    testing::write_bytes(
        dir + "/transformer/diffusion_pytorch_model.safetensors.index.json",
        R"({"weight_map": {"x_embedder.weight": "diffusion_pytorch_model-00001-of-00002.safetensors",
            "proj_out.weight": "diffusion_pytorch_model-00002-of-00002.safetensors"}})");
    TensorIndex sharded(chroma_first());
    Status st = sharded.add(dir);
    ASSERT_TRUE(st.ok()) << st.message();
    for (const char* n : {"distilled_guidance_layer.layers.0.in_layer.weight", "img_in.weight",
                          "double_blocks.0.img_attn.q.weight", "double_blocks.18.img_attn.q.weight",
                          "double_blocks.18.txt_attn.k.weight", "double_blocks.18.img_mlp.2.weight",
                          "double_blocks.18.txt_mlp.0.weight", "single_blocks.0.q.weight",
                          "single_blocks.0.norm.key_norm.scale", "single_blocks.0.mlp_in.weight",
                          "single_blocks.0.linear2.weight", "final_layer.linear.weight"})
        EXPECT_TRUE(sharded.has(kP + n)) << n;

    // The same folder as a FluxPipeline takes the generic DiT routes: text_encoder/ is CLIP-L.
    testing::write_bytes(dir + "/model_index.json", R"({"_class_name": "FluxPipeline"})");
    TensorIndex flux(chroma_first());
    ASSERT_TRUE(flux.add(dir).ok());
    EXPECT_TRUE(flux.has_prefix("text_encoders.clip_l."));
    EXPECT_FALSE(flux.has_prefix("text_encoders.t5xxl."));
}

// ---------------------------------------------------------------------------- LoRA keys

bool has_key(const std::vector<std::string>& keys, const std::string& k) {
    return std::find(keys.begin(), keys.end(), normalize_lora_key(k)) != keys.end();
}

TEST(ChromaLoraKeys, ApproximatorAnswersToBothNamings) {
    const auto out = chroma_lora_keys("distilled_guidance_layer.layers.2.out_layer.weight");
    for (const char* k : {
             "lora_unet_distilled_guidance_layer_layers_2_out_layer",        // kohya
             "diffusion_model.distilled_guidance_layer.layers.2.out_layer",  // ComfyUI, ai-toolkit
             "distilled_guidance_layer.layers.2.out_layer",
             "transformer.distilled_guidance_layer.layers.2.out_layer",  // OneTrainer
             "transformer.distilled_guidance_layer.layers.2.linear_2",   // diffusers / PEFT
             "lora_transformer_distilled_guidance_layer_layers_2_linear_2",
             "base_model.model.distilled_guidance_layer.layers.2.linear_2",
         }) {
        EXPECT_TRUE(has_key(out, k)) << k;
    }
    EXPECT_FALSE(has_key(out, "transformer.distilled_guidance_layer.layers.2.linear_1"));
    EXPECT_FALSE(has_key(out, "lora_unet_distilled_guidance_layer_layers_2_in_layer"));
    EXPECT_TRUE(has_key(chroma_lora_keys("distilled_guidance_layer.layers.0.in_layer.weight"),
                        "transformer.distilled_guidance_layer.layers.0.linear_1"));
    const auto in = chroma_lora_keys("distilled_guidance_layer.in_proj.weight");
    for (const char* k : {"lora_unet_distilled_guidance_layer_in_proj",
                          "diffusion_model.distilled_guidance_layer.in_proj",
                          "transformer.distilled_guidance_layer.in_proj",
                          "lycoris_distilled_guidance_layer_in_proj"})
        EXPECT_TRUE(has_key(in, k)) << k;
    EXPECT_TRUE(has_key(chroma_lora_keys("distilled_guidance_layer.out_proj.weight"),
                        "transformer.distilled_guidance_layer.out_proj"));
    // No key twice, and none for a norm's scale.
    std::vector<std::string> sorted = out;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
    EXPECT_TRUE(chroma_lora_keys("distilled_guidance_layer.norms.0.scale").empty());
    EXPECT_TRUE(chroma_lora_row_keys("distilled_guidance_layer.in_proj.weight", {16, 8}).empty());
}

TEST(ChromaLoraKeys, BlockKeysAreFluxOnes) {
    const auto proj = chroma_lora_keys("double_blocks.3.txt_attn.proj.weight");
    for (const char* k : {"lora_unet_double_blocks_3_txt_attn_proj",
                          "diffusion_model.double_blocks.3.txt_attn.proj",
                          "transformer.transformer_blocks.3.attn.to_add_out",
                          "lora_transformer_transformer_blocks_3_attn_to_add_out"})
        EXPECT_TRUE(has_key(proj, k)) << k;
    EXPECT_TRUE(has_key(chroma_lora_keys("single_blocks.5.linear2.weight"),
                        "transformer.single_transformer_blocks.5.proj_out"));
    EXPECT_TRUE(has_key(chroma_lora_keys("final_layer.linear.weight"), "transformer.proj_out"));
    EXPECT_TRUE(has_key(chroma_lora_keys("img_in.weight"), "transformer.x_embedder"));
    using Rows = std::vector<LoraRows>;
    auto rows_of = [](const std::string& w, const std::vector<int64_t>& shape, const char* key) {
        for (const LoraRowKey& r : chroma_lora_row_keys(w, shape)) {
            if (r.key == normalize_lora_key(key)) return r.rows;
        }
        return Rows{};
    };
    EXPECT_EQ(rows_of("double_blocks.1.img_attn.qkv.weight", {48, 16},
                      "transformer.transformer_blocks.1.attn.to_k"),
              (Rows{{0, 16, 16}}));
    EXPECT_EQ(rows_of("single_blocks.2.linear1.weight", {112, 16},
                      "transformer.single_transformer_blocks.2.proj_mlp"),
              (Rows{{0, 48, 64}}));
    EXPECT_EQ(
        rows_of("single_blocks.2.k.weight", {16, 16}, "diffusion_model.single_blocks.2.linear1"),
        (Rows{{16, 0, 16}}));
}

// Every diffusers linear of the renamed transformer answers, under its original name, to its
// own diffusers key (PEFT "transformer.<module>"): the rename and the key lists agree.
TEST(ChromaLoraKeys, RenamedWeightsAnswerToTheirDiffusersKeys) {
    const auto m = mapped(diffusers_names(), kP);
    size_t checked = 0;
    for (const auto& [from, to] : m) {
        if (!ends_with(from, ".weight") || from.find("norm") != std::string::npos) continue;
        const std::string module = from.substr(0, from.size() - 7);
        const std::string weight = to.substr(kP.size());
        EXPECT_TRUE(has_key(chroma_lora_keys(weight), "transformer." + module)) << from;
        EXPECT_TRUE(
            has_key(chroma_lora_keys(weight), "lora_unet_" + weight.substr(0, weight.size() - 7)))
            << from;
        ++checked;
    }
    EXPECT_EQ(checked, 20u);
}

// ---------------------------------------------------------------- through the LoRA manager

constexpr int64_t kIn = 32;   // width of the toy weights (and rows of q, k, v)
constexpr int64_t kMlp = 64;  // rows of a single block's MLP input
constexpr int64_t kRank = 2;

// A toy Chroma DiT in original names (fused q/k/v, linear1) or as a diffusers file loads it.
std::vector<std::pair<std::string, int64_t>> weights(bool split) {
    std::vector<std::pair<std::string, int64_t>> w = {
        {"distilled_guidance_layer.in_proj", kIn},
        {"distilled_guidance_layer.layers.1.out_layer", kIn},
        {"distilled_guidance_layer.out_proj", 2 * kIn},
        {"double_blocks.0.txt_mlp.0", 2 * kIn},
    };
    if (split) {
        for (const char* p : {"q", "k", "v"}) {
            w.push_back({std::string("double_blocks.0.img_attn.") + p, kIn});
            w.push_back({std::string("single_blocks.0.") + p, kIn});
        }
        w.push_back({"single_blocks.0.mlp_in", kMlp});
    } else {
        w.push_back({"double_blocks.0.img_attn.qkv", 3 * kIn});
        w.push_back({"single_blocks.0.linear1", 3 * kIn + kMlp});
    }
    return w;
}

struct Pair {
    std::vector<float> down, up;
    int64_t out = 0;
    int64_t rank() const { return static_cast<int64_t>(down.size()) / kIn; }
};

Pair pair(int64_t out, uint32_t seed) {
    return {pattern(kRank * kIn, seed), pattern(out * kRank, seed + 100), out};
}

// Pairs on consecutive row ranges of one weight as one pair of their summed rank.
Pair stack(const std::vector<Pair>& parts) {
    Pair s;
    for (const Pair& p : parts) {
        s.down.insert(s.down.end(), p.down.begin(), p.down.end());
        s.out += p.out;
    }
    const int64_t rank = s.rank();
    s.up.assign(s.out * rank, 0.0f);
    int64_t row = 0, col = 0;
    for (const Pair& p : parts) {
        for (int64_t r = 0; r < p.out; ++r)
            for (int64_t c = 0; c < p.rank(); ++c)
                s.up[(row + r) * rank + col + c] = p.up[r * p.rank() + c];
        row += p.out;
        col += p.rank();
    }
    return s;
}

// PEFT (lora_A / lora_B, no alpha) or kohya (lora_down / lora_up, alpha = rank) tensors.
void add(std::vector<FakeTensor>* to, const std::string& module, const Pair& p, bool peft) {
    const int64_t r = p.rank();
    const std::string down = peft ? ".lora_A.weight" : ".lora_down.weight";
    const std::string up = peft ? ".lora_B.weight" : ".lora_up.weight";
    to->push_back({module + down, "F32", {r, kIn}, to_bytes(p.down)});
    to->push_back({module + up, "F32", {p.out, r}, to_bytes(p.up)});
    if (!peft)
        to->push_back({module + ".alpha", "F32", {}, to_bytes(std::vector<float>{float(r)})});
}

class ChromaLora : public ::testing::Test {
  protected:
    void SetUp() override {
        load_backends();
        dir_ = testing::test_dir(std::string("chroma_lora_") +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        testing::make_dirs(dir_ + "/loras");
        const Pair q = pair(kIn, 1), k = pair(kIn, 2), v = pair(kIn, 3);
        const Pair sq = pair(kIn, 4), sk = pair(kIn, 5), sv = pair(kIn, 6), mlp = pair(kMlp, 7);
        const Pair in = pair(kIn, 8), layer = pair(kIn, 9), out = pair(2 * kIn, 10);
        const Pair t0 = pair(2 * kIn, 11);
        const Pair qkv = stack({q, k, v}), linear1 = stack({sq, sk, sv, mlp});

        // diffusers / PEFT: every module in diffusers naming under "transformer.".
        const std::string b = "transformer.transformer_blocks.0.";
        const std::string s = "transformer.single_transformer_blocks.0.";
        const std::string g = "transformer.distilled_guidance_layer.";
        std::vector<FakeTensor> d;
        add(&d, b + "attn.to_q", q, true);
        add(&d, b + "attn.to_k", k, true);
        add(&d, b + "attn.to_v", v, true);
        add(&d, b + "ff_context.net.0.proj", t0, true);
        add(&d, s + "attn.to_q", sq, true);
        add(&d, s + "attn.to_k", sk, true);
        add(&d, s + "attn.to_v", sv, true);
        add(&d, s + "proj_mlp", mlp, true);
        add(&d, g + "in_proj", in, true);
        add(&d, g + "layers.1.linear_2", layer, true);
        add(&d, g + "out_proj", out, true);
        testing::write_safetensors(dir_ + "/loras/diffusers.safetensors", d);

        // kohya sd-scripts: original names, "lora_unet_", underscores.
        std::vector<FakeTensor> o;
        add(&o, "lora_unet_double_blocks_0_img_attn_qkv", qkv, false);
        add(&o, "lora_unet_double_blocks_0_txt_mlp_0", t0, false);
        add(&o, "lora_unet_single_blocks_0_linear1", linear1, false);
        add(&o, "lora_unet_distilled_guidance_layer_in_proj", in, false);
        add(&o, "lora_unet_distilled_guidance_layer_layers_1_out_layer", layer, false);
        add(&o, "lora_unet_distilled_guidance_layer_out_proj", out, false);
        testing::write_safetensors(dir_ + "/loras/kohya.safetensors", o);

        // ai-toolkit: original names under "diffusion_model.", PEFT tensors.
        std::vector<FakeTensor> a;
        add(&a, "diffusion_model.double_blocks.0.img_attn.qkv", qkv, true);
        add(&a, "diffusion_model.double_blocks.0.txt_mlp.0", t0, true);
        add(&a, "diffusion_model.single_blocks.0.linear1", linear1, true);
        add(&a, "diffusion_model.distilled_guidance_layer.in_proj", in, true);
        add(&a, "diffusion_model.distilled_guidance_layer.layers.1.out_layer", layer, true);
        add(&a, "diffusion_model.distilled_guidance_layer.out_proj", out, true);
        testing::write_safetensors(dir_ + "/loras/aitoolkit.safetensors", a);

        // OneTrainer: diffusers blocks as "lora_transformer_...", the approximator in
        // original names under "transformer.", kohya tensors.
        std::vector<FakeTensor> t;
        add(&t, "lora_transformer_transformer_blocks_0_attn_to_q", q, false);
        add(&t, "lora_transformer_transformer_blocks_0_attn_to_k", k, false);
        add(&t, "lora_transformer_transformer_blocks_0_attn_to_v", v, false);
        add(&t, "lora_transformer_transformer_blocks_0_ff_context_net_0_proj", t0, false);
        add(&t, "lora_transformer_single_transformer_blocks_0_attn_to_q", sq, false);
        add(&t, "lora_transformer_single_transformer_blocks_0_attn_to_k", sk, false);
        add(&t, "lora_transformer_single_transformer_blocks_0_attn_to_v", sv, false);
        add(&t, "lora_transformer_single_transformer_blocks_0_proj_mlp", mlp, false);
        add(&t, "transformer.distilled_guidance_layer.in_proj", in, false);
        add(&t, "transformer.distilled_guidance_layer.layers.1.out_layer", layer, false);
        add(&t, "transformer.distilled_guidance_layer.out_proj", out, false);
        testing::write_safetensors(dir_ + "/loras/onetrainer.safetensors", t);
    }

    void open(bool split) {
        std::vector<FakeTensor> w;
        uint32_t seed = 50;
        for (const auto& [name, rows] : weights(split))
            w.push_back(testing::f32_tensor(kP + name + ".weight", {rows, kIn}, ++seed));
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
        family_->name = "Chroma";
        family_->lora_targets.push_back(chroma_lora_target(*runner_, kP));
    }

    BuildFn build() {
        return [this](GraphBuilder& gb) {
            ggml_tensor* in = gb.input(x_);
            std::vector<ggml_tensor*> out;
            for (const auto& [name, rows] : weights(split_))
                out.push_back(nn::linear(gb.nn(), in, kP + name, kIn, rows, false));
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

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double d = 0.0;
    for (size_t j = 0; j < a.size() && j < b.size(); ++j)
        d = std::max(d, double(std::fabs(a[j] - b[j])));
    return d;
}

// The four file forms make the same change to both layouts, on every weight they name (each
// output moves: a key no weight answered to would leave its output as it was).
TEST_F(ChromaLora, EveryFileFormPatchesBothLayoutsAlike) {
    for (bool split : {false, true}) {
        open(split);
        const auto plain = run();
        LoraManager m(dir_ + "/loras", LoraApplyMode::Immediately, 1);
        ASSERT_TRUE(apply(m, "diffusers").ok());
        const auto want = run();
        // Every weight's output moved (outputs are laid out weight after weight).
        size_t at = 0;
        for (const auto& [name, rows] : weights(split)) {
            const size_t n = static_cast<size_t>(rows * 3);
            const std::vector<float> a(plain.begin() + at, plain.begin() + at + n);
            const std::vector<float> b(want.begin() + at, want.begin() + at + n);
            EXPECT_GT(max_diff(a, b), 1e-2) << name << (split ? " (split)" : "");
            at += n;
        }
        for (const char* form : {"kohya", "aitoolkit", "onetrainer"}) {
            ASSERT_TRUE(apply(m, form).ok()) << form;
            EXPECT_LT(max_diff(run(), want), 1e-5) << form << (split ? " (split)" : "");
        }
        ASSERT_TRUE(apply(m, "").ok());
        EXPECT_EQ(max_diff(run(), plain), 0.0);
    }
}

}  // namespace
}  // namespace ggdiff
