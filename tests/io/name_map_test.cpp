// diffusers/HF and open_clip layouts -> canonical LDM names, checked against the real
// SD1 tensor list in shared/fixtures/sd1_mc32.tensors.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "../support/wan_vae_diffusers.h"
#include "io/model_info.h"
#include "io/name_map.h"
#include "io/tensor_index.h"
#include "io_test_util.h"

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

std::vector<std::pair<std::string, std::vector<int64_t>>> fixture_list(const std::string& file) {
    std::ifstream in(std::string(GGDIFF_SHARED_DIR) + "/fixtures/" + file);
    std::vector<std::pair<std::string, std::vector<int64_t>>> out;
    std::string line;
    while (std::getline(in, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream ss(line);
        std::string name, shape;
        if (!(ss >> name >> shape)) continue;
        std::vector<int64_t> dims;
        std::istringstream sh(shape);
        std::string d;
        while (std::getline(sh, d, ',')) dims.push_back(std::stoll(d));
        out.emplace_back(name, dims);
    }
    return out;
}

std::set<std::string> fixture_names(const std::string& prefix) {
    std::set<std::string> out;
    for (const auto& [name, shape] : fixture_list("sd1_mc32.tensors")) {
        if (name.rfind(prefix, 0) == 0) out.insert(name);
    }
    return out;
}

void add_wb(std::vector<std::string>* v, const std::string& base) {
    v->push_back(base + ".weight");
    v->push_back(base + ".bias");
}

// The tensor names of an SD1 UNet in diffusers layout.
std::vector<std::string> diffusers_sd1_unet() {
    std::vector<std::string> n;
    auto resnet = [&](const std::string& p, bool shortcut) {
        for (const char* m : {"norm1", "conv1", "time_emb_proj", "norm2", "conv2"})
            add_wb(&n, p + m);
        if (shortcut) add_wb(&n, p + "conv_shortcut");
    };
    auto attention = [&](const std::string& p) {
        for (const char* m : {"norm", "proj_in", "proj_out"}) add_wb(&n, p + m);
        const std::string b = p + "transformer_blocks.0.";
        for (const char* a : {"attn1.", "attn2."}) {
            for (const char* m : {"to_q", "to_k", "to_v"}) n.push_back(b + a + m + ".weight");
            add_wb(&n, b + a + "to_out.0");
        }
        add_wb(&n, b + "ff.net.0.proj");
        add_wb(&n, b + "ff.net.2");
        for (const char* m : {"norm1", "norm2", "norm3"}) add_wb(&n, b + m);
    };
    for (const char* m : {"time_embedding.linear_1", "time_embedding.linear_2", "conv_in",
                          "conv_norm_out", "conv_out"}) {
        add_wb(&n, m);
    }
    for (int i = 0; i < 4; ++i) {
        const std::string d = "down_blocks." + std::to_string(i) + ".";
        for (int j = 0; j < 2; ++j) {
            resnet(d + "resnets." + std::to_string(j) + ".", j == 0 && (i == 1 || i == 2));
            if (i < 3) attention(d + "attentions." + std::to_string(j) + ".");
        }
        if (i < 3) add_wb(&n, d + "downsamplers.0.conv");
        const std::string u = "up_blocks." + std::to_string(i) + ".";
        for (int j = 0; j < 3; ++j) {
            resnet(u + "resnets." + std::to_string(j) + ".", true);
            if (i > 0) attention(u + "attentions." + std::to_string(j) + ".");
        }
        if (i < 3) add_wb(&n, u + "upsamplers.0.conv");
    }
    resnet("mid_block.resnets.0.", false);
    resnet("mid_block.resnets.1.", false);
    attention("mid_block.attentions.0.");
    return n;
}

// The tensor names of the SD KL VAE in diffusers layout (new attention names).
std::vector<std::string> diffusers_vae() {
    std::vector<std::string> n;
    auto resnet = [&](const std::string& p, bool shortcut) {
        for (const char* m : {"norm1", "conv1", "norm2", "conv2"}) add_wb(&n, p + m);
        if (shortcut) add_wb(&n, p + "conv_shortcut");
    };
    for (const char* c : {"encoder.", "decoder."}) {
        const std::string p = c;
        for (const char* m : {"conv_in", "conv_norm_out", "conv_out"}) add_wb(&n, p + m);
        resnet(p + "mid_block.resnets.0.", false);
        resnet(p + "mid_block.resnets.1.", false);
        for (const char* m : {"group_norm", "to_q", "to_k", "to_v", "to_out.0"})
            add_wb(&n, p + "mid_block.attentions.0." + m);
    }
    for (int i = 0; i < 4; ++i) {
        const std::string d = "encoder.down_blocks." + std::to_string(i) + ".";
        for (int j = 0; j < 2; ++j)
            resnet(d + "resnets." + std::to_string(j) + ".", j == 0 && (i == 1 || i == 2));
        if (i < 3) add_wb(&n, d + "downsamplers.0.conv");
        const std::string u = "decoder.up_blocks." + std::to_string(i) + ".";
        for (int j = 0; j < 3; ++j)
            resnet(u + "resnets." + std::to_string(j) + ".", j == 0 && (i == 2 || i == 3));
        if (i < 3) add_wb(&n, u + "upsamplers.0.conv");
    }
    for (const char* m : {"quant_conv", "post_quant_conv"}) add_wb(&n, m);
    return n;
}

std::set<std::string> mapped_set(const std::vector<std::string>& names, const std::string& prefix) {
    std::set<std::string> out;
    for (const NameMapping& m : map_tensor_names(names, prefix)) out.insert(m.name);
    return out;
}

std::vector<FakeTensor> tiny_tensors(const std::vector<std::string>& names) {
    std::vector<FakeTensor> out;
    for (const std::string& n : names) {
        // attn2.to_k carries the context width so the family can be detected.
        const bool ctx = n.find("attn2.to_k.weight") != std::string::npos;
        out.push_back(f16_tensor(n, ctx ? std::vector<int64_t>{2, 768} : std::vector<int64_t>{2}));
    }
    return out;
}

TEST(NameMap, DiffusersUnetMatchesLdmNames) {
    EXPECT_EQ(mapped_set(diffusers_sd1_unet(), "model.diffusion_model."),
              fixture_names("model.diffusion_model."));
}

TEST(NameMap, DiffusersVaeMatchesLdmNames) {
    std::vector<std::string> old_style = diffusers_vae();
    for (std::string& n : old_style) {
        for (auto [from, to] : {std::pair{"to_q", "query"},
                                {"to_k", "key"},
                                {"to_v", "value"},
                                {"to_out.0", "proj_attn"}}) {
            size_t p = n.find(from);
            if (p != std::string::npos) n.replace(p, std::string(from).size(), to);
        }
    }
    EXPECT_EQ(mapped_set(diffusers_vae(), "first_stage_model."),
              fixture_names("first_stage_model."));
    EXPECT_EQ(mapped_set(old_style, "first_stage_model."), fixture_names("first_stage_model."));
}

// The original names of a Wan 2.1 VAE tensor list ("name shape" lines).
std::vector<std::string> wan_vae_names(const std::string& path) {
    std::vector<std::string> out;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream ss(line);
        std::string name;
        if (ss >> name) out.push_back(name);
    }
    return out;
}

// A diffusers AutoencoderKLWan (Wan 2.1 layout) indexes to the original Wan VAE names, as
// --vae and bare as -m: the tiny VAE of tests/fixtures and the Qwen Image VAE fixture.
TEST(NameMap, DiffusersWanVaeMatchesOriginalNames) {
    for (const std::string& list :
         {std::string(GGDIFF_SOURCE_DIR) + "/tests/fixtures/wan_vae_tiny.tensors",
          std::string(GGDIFF_SHARED_DIR) + "/fixtures/qwen_vae.tensors"}) {
        SCOPED_TRACE(list);
        const std::vector<std::string> original = wan_vae_names(list);
        ASSERT_GE(original.size(), 190u);
        std::vector<std::string> diffusers;
        std::set<std::string> want;
        for (const std::string& n : original) {
            diffusers.push_back(wan_vae_test::to_diffusers(n));
            want.insert("first_stage_model." + n);
        }
        EXPECT_EQ(std::set<std::string>(diffusers.begin(), diffusers.end()).size(),
                  original.size());
        EXPECT_TRUE(DiffusersWanVaeMap::detect(diffusers));
        EXPECT_FALSE(DiffusersWanVaeMap::grouped(diffusers));
        EXPECT_FALSE(DiffusersWanVaeMap::detect(original));
        EXPECT_EQ(mapped_set(diffusers, "first_stage_model."), want);
        EXPECT_EQ(mapped_set(diffusers, ""), want);
        // The original names pass through.
        EXPECT_EQ(mapped_set(original, "first_stage_model."), want);
    }
    // Single names of the real layout, as the reference engine's table has them.
    const std::vector<std::string> names = {"decoder.up_blocks.1.resnets.0.conv_shortcut.weight",
                                            "decoder.up_blocks.2.upsamplers.0.resample.1.weight",
                                            "decoder.up_blocks.0.upsamplers.0.time_conv.weight",
                                            "decoder.up_blocks.3.resnets.2.norm2.gamma",
                                            "encoder.down_blocks.5.time_conv.bias",
                                            "encoder.down_blocks.6.conv_shortcut.bias",
                                            "encoder.mid_block.attentions.0.to_qkv.weight",
                                            "decoder.mid_block.resnets.1.conv2.weight",
                                            "decoder.norm_out.gamma",
                                            "post_quant_conv.weight"};
    const std::vector<std::string> want = {
        "first_stage_model.decoder.upsamples.4.shortcut.weight",
        "first_stage_model.decoder.upsamples.11.resample.1.weight",
        "first_stage_model.decoder.upsamples.3.time_conv.weight",
        "first_stage_model.decoder.upsamples.14.residual.3.gamma",
        "first_stage_model.encoder.downsamples.5.time_conv.bias",
        "first_stage_model.encoder.downsamples.6.shortcut.bias",
        "first_stage_model.encoder.middle.1.to_qkv.weight",
        "first_stage_model.decoder.middle.2.residual.6.weight",
        "first_stage_model.decoder.head.0.gamma",
        "first_stage_model.conv2.weight"};
    // The other up blocks' tensors fix the block counts.
    std::vector<std::string> all =
        wan_vae_names(std::string(GGDIFF_SOURCE_DIR) + "/tests/fixtures/wan_vae_tiny.tensors");
    for (std::string& n : all) n = wan_vae_test::to_diffusers(n);
    const std::vector<NameMapping> m = map_tensor_names(all, "first_stage_model.");
    for (size_t i = 0; i < names.size(); ++i) {
        bool found = false;
        for (const NameMapping& x : m) {
            if (all[x.source] != names[i]) continue;
            found = true;
            EXPECT_EQ(x.name, want[i]) << names[i];
        }
        EXPECT_TRUE(found) << names[i];
    }
    // The SD/FLUX diffusers VAE is no Wan VAE (group norms, no gamma).
    EXPECT_FALSE(DiffusersWanVaeMap::detect(diffusers_vae()));
}

// Wan 2.2's AutoencoderKLWan groups its blocks as the original names do: every name of the
// tiny TI2V-5B-layout VAE comes back, the resamplers after their group's resnets.
TEST(NameMap, DiffusersWan22VaeMatchesOriginalNames) {
    const std::vector<std::string> original =
        wan_vae_names(std::string(GGDIFF_SOURCE_DIR) + "/tests/fixtures/wan22_vae_tiny.tensors");
    ASSERT_GE(original.size(), 190u);
    std::vector<std::string> diffusers;
    std::set<std::string> want;
    for (const std::string& n : original) {
        diffusers.push_back(wan_vae_test::to_diffusers22(n));
        want.insert("first_stage_model." + n);
    }
    EXPECT_EQ(std::set<std::string>(diffusers.begin(), diffusers.end()).size(), original.size());
    EXPECT_TRUE(DiffusersWanVaeMap::detect(diffusers));
    EXPECT_TRUE(DiffusersWanVaeMap::grouped(diffusers));
    EXPECT_FALSE(DiffusersWanVaeMap::grouped(original));
    std::vector<std::string> notes;
    EXPECT_EQ(mapped_set(diffusers, "first_stage_model."), want);
    const std::vector<NameMapping> m = map_tensor_names(diffusers, "first_stage_model.", &notes);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("diffusers Wan VAE"), std::string::npos) << notes[0];
    // Single names, as diffusers' conversion of Wan2.2_VAE.pth writes them.
    const std::pair<const char*, const char*> pairs[] = {
        {"encoder.down_blocks.1.resnets.0.conv_shortcut.weight",
         "encoder.downsamples.1.downsamples.0.shortcut.weight"},
        {"encoder.down_blocks.1.downsampler.time_conv.weight",
         "encoder.downsamples.1.downsamples.2.time_conv.weight"},
        {"decoder.up_blocks.0.resnets.2.norm2.gamma",
         "decoder.upsamples.0.upsamples.2.residual.3.gamma"},
        {"decoder.up_blocks.2.upsampler.resample.1.weight",
         "decoder.upsamples.2.upsamples.3.resample.1.weight"},
        {"decoder.mid_block.attentions.0.to_qkv.weight", "decoder.middle.1.to_qkv.weight"},
        {"quant_conv.weight", "conv1.weight"}};
    for (const auto& [from, to] : pairs) {
        bool found = false;
        for (const NameMapping& x : m) {
            if (diffusers[x.source] != from) continue;
            found = true;
            EXPECT_EQ(x.name, std::string("first_stage_model.") + to) << from;
        }
        EXPECT_TRUE(found) << from;
    }
}

TEST(NameMap, LdmNamesPassThrough) {
    std::vector<std::string> all;
    for (const auto& [name, shape] : fixture_list("sd1_mc32.tensors")) all.push_back(name);
    const std::set<std::string> want(all.begin(), all.end());
    EXPECT_EQ(mapped_set(all, ""), want);
    // A bare LDM UNet given as --diffusion-model, and a full checkpoint given as --vae.
    std::vector<std::string> bare;
    for (const std::string& n : fixture_names("model.diffusion_model."))
        bare.push_back(n.substr(22));
    EXPECT_EQ(mapped_set(bare, "model.diffusion_model."), fixture_names("model.diffusion_model."));
    EXPECT_EQ(mapped_set(all, "first_stage_model."), fixture_names("first_stage_model."));
    // The checkpoint's CLIP given as --clip_l lands under the role prefix in HF layout.
    for (const std::string& n : mapped_set(all, "text_encoders.clip_l.")) {
        EXPECT_EQ(n.rfind("text_encoders.clip_l.text_model.", 0), 0u) << n;
    }
}

TEST(NameMap, DiffusersFolderIndexesToCanonicalNames) {
    const std::string dir = test_dir("diffusers_sd1");
    write_bytes(dir + "/model_index.json", R"({"_class_name": "StableDiffusionPipeline"})");
    make_dirs(dir + "/unet");
    make_dirs(dir + "/vae");
    make_dirs(dir + "/text_encoder");
    make_dirs(dir + "/tokenizer");
    write_safetensors(dir + "/unet/diffusion_pytorch_model.safetensors",
                      tiny_tensors(diffusers_sd1_unet()));
    write_safetensors(dir + "/vae/diffusion_pytorch_model.fp16.safetensors",
                      tiny_tensors(diffusers_vae()));
    // The text encoder sharded in two files with an index.
    std::vector<std::string> clip;
    for (const std::string& n : fixture_names("cond_stage_model.transformer."))
        clip.push_back(n.substr(29));
    std::vector<std::string> half1(clip.begin(), clip.begin() + clip.size() / 2);
    std::vector<std::string> half2(clip.begin() + clip.size() / 2, clip.end());
    write_safetensors(dir + "/text_encoder/model-00001-of-00002.safetensors", tiny_tensors(half1));
    write_safetensors(dir + "/text_encoder/model-00002-of-00002.safetensors", tiny_tensors(half2));
    nlohmann::json index = {{"weight_map", nlohmann::json::object()}};
    for (const auto& n : half1) index["weight_map"][n] = "model-00001-of-00002.safetensors";
    for (const auto& n : half2) index["weight_map"][n] = "model-00002-of-00002.safetensors";
    write_bytes(dir + "/text_encoder/model.safetensors.index.json", index.dump());

    TensorIndex ix;
    Status st = ix.add(dir);
    ASSERT_TRUE(st.ok()) << st.message();
    std::set<std::string> got;
    for (const TensorInfo& t : ix.tensors()) got.insert(t.name);
    EXPECT_EQ(got, fixture_names(""));
    EXPECT_EQ(ix.files().size(), 4u);
    EXPECT_EQ(summarize(ix).context_dim, 768);
    const TensorInfo* t = ix.find("model.diffusion_model.output_blocks.2.1.conv.weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->source_name, "up_blocks.0.upsamplers.0.conv.weight");

    // The unet folder alone as --diffusion-model, and the pipeline folder for --vae.
    TensorIndex parts;
    ASSERT_TRUE(parts.add(dir + "/unet", prefix_for_role("diffusion-model")).ok());
    ASSERT_TRUE(parts.add(dir, prefix_for_role("vae")).ok());
    got.clear();
    for (const TensorInfo& x : parts.tensors()) got.insert(x.name);
    std::set<std::string> want = fixture_names("model.diffusion_model.");
    for (const std::string& n : fixture_names("first_stage_model.")) want.insert(n);
    EXPECT_EQ(got, want);
}

TEST(NameMap, OpenClipInProjSplitsIntoQkv) {
    const std::string dir = test_dir("openclip");
    const int64_t D = 8;
    const std::string p = "cond_stage_model.model.";
    std::vector<FakeTensor> ts = {
        f32_tensor(p + "token_embedding.weight", {10, D}, 1),
        f32_tensor(p + "positional_embedding", {77, D}, 2),
        f32_tensor(p + "transformer.resblocks.0.ln_1.weight", {D}, 3),
        f32_tensor(p + "transformer.resblocks.0.ln_1.bias", {D}, 4),
        f32_tensor(p + "transformer.resblocks.0.attn.in_proj_weight", {3 * D, D}, 5),
        f32_tensor(p + "transformer.resblocks.0.attn.in_proj_bias", {3 * D}, 6),
        f32_tensor(p + "transformer.resblocks.0.attn.out_proj.weight", {D, D}, 7),
        f32_tensor(p + "transformer.resblocks.0.mlp.c_fc.weight", {4 * D, D}, 8),
        f32_tensor(p + "transformer.resblocks.0.mlp.c_proj.weight", {D, 4 * D}, 9),
        f32_tensor(p + "ln_final.weight", {D}, 10),
        f32_tensor(p + "text_projection", {D, D}, 11),
        f32_tensor("model.diffusion_model.input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight",
                   {4, 1024}, 12),
    };
    write_safetensors(dir + "/sd2.safetensors", ts);
    TensorIndex ix;
    ASSERT_TRUE(ix.add(dir + "/sd2.safetensors").ok());
    const std::string h = "cond_stage_model.transformer.text_model.";
    const std::string l = h + "encoder.layers.0.";
    for (const char* n :
         {"embeddings.token_embedding.weight", "embeddings.position_embedding.weight",
          "encoder.layers.0.layer_norm1.weight", "encoder.layers.0.layer_norm1.bias",
          "encoder.layers.0.self_attn.out_proj.weight", "encoder.layers.0.mlp.fc1.weight",
          "encoder.layers.0.mlp.fc2.weight", "final_layer_norm.weight"}) {
        EXPECT_TRUE(ix.has(h + n)) << n;
    }
    EXPECT_TRUE(ix.has("cond_stage_model.transformer.text_projection"));
    EXPECT_EQ(ix.size(), ts.size() + 2 + 2);  // in_proj weight and bias became three each

    std::vector<float> fused_w = pattern(3 * D * D, 5), fused_b = pattern(3 * D, 6);
    const char* qkv[] = {"q_proj", "k_proj", "v_proj"};
    for (int i = 0; i < 3; ++i) {
        SCOPED_TRACE(qkv[i]);
        const TensorInfo* w = ix.find(l + "self_attn." + qkv[i] + ".weight");
        const TensorInfo* b = ix.find(l + "self_attn." + qkv[i] + ".bias");
        ASSERT_NE(w, nullptr);
        ASSERT_NE(b, nullptr);
        EXPECT_EQ(w->shape, (std::vector<int64_t>{D, D}));
        EXPECT_EQ(b->shape, (std::vector<int64_t>{D}));
        std::vector<float> v;
        ASSERT_TRUE(ix.read_f32(*w, v).ok());
        EXPECT_EQ(
            v, std::vector<float>(fused_w.begin() + i * D * D, fused_w.begin() + (i + 1) * D * D));
        ASSERT_TRUE(ix.read_f32(*b, v).ok());
        EXPECT_EQ(v, std::vector<float>(fused_b.begin() + i * D, fused_b.begin() + (i + 1) * D));
    }
    EXPECT_EQ(summarize(ix).context_dim, 1024);
}

TEST(NameMap, OpenClipFileAsClipG) {
    std::vector<std::string> names = {"transformer.resblocks.3.attn.in_proj_weight",
                                      "token_embedding.weight", "text_projection"};
    std::set<std::string> want = {
        "text_encoders.clip_g.text_model.encoder.layers.3.self_attn.q_proj.weight",
        "text_encoders.clip_g.text_model.encoder.layers.3.self_attn.k_proj.weight",
        "text_encoders.clip_g.text_model.encoder.layers.3.self_attn.v_proj.weight",
        "text_encoders.clip_g.text_model.embeddings.token_embedding.weight",
        "text_encoders.clip_g.text_projection"};
    EXPECT_EQ(mapped_set(names, "text_encoders.clip_g."), want);
    // SDXL's bigG inside a full checkpoint.
    EXPECT_EQ(mapped_set({"conditioner.embedders.1.model.ln_final.bias"}, ""),
              std::set<std::string>{
                  "conditioner.embedders.1.transformer.text_model.final_layer_norm.bias"});
}

// The names of the narrow test ControlNet (original layout under control_model.).
std::set<std::string> controlnet_names() {
    std::ifstream in(std::string(GGDIFF_SOURCE_DIR) +
                     "/tests/fixtures/controlnet_sd1_mc32.tensors");
    std::set<std::string> out;
    std::string line;
    while (std::getline(in, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream ss(line);
        std::string name;
        if (ss >> name) out.insert(name);
    }
    return out;
}

// The same ControlNet in diffusers layout: the UNet's down half and middle block, the
// conditioning embedding and the zero convs as controlnet_* blocks.
std::vector<std::string> diffusers_sd1_controlnet() {
    std::vector<std::string> n;
    for (const std::string& u : diffusers_sd1_unet()) {
        if (u.rfind("up_blocks.", 0) == 0 || u.rfind("conv_norm_out.", 0) == 0 ||
            u.rfind("conv_out.", 0) == 0) {
            continue;
        }
        n.push_back(u);
    }
    add_wb(&n, "controlnet_cond_embedding.conv_in");
    for (int i = 0; i < 6; ++i) add_wb(&n, "controlnet_cond_embedding.blocks." + std::to_string(i));
    add_wb(&n, "controlnet_cond_embedding.conv_out");
    for (int i = 0; i < 12; ++i) add_wb(&n, "controlnet_down_blocks." + std::to_string(i));
    add_wb(&n, "controlnet_mid_block");
    return n;
}

TEST(NameMap, ControlNetLayouts) {
    const std::set<std::string> want = controlnet_names();
    ASSERT_EQ(want.size(), 340u);
    // diffusers ControlNetModel.
    EXPECT_EQ(mapped_set(diffusers_sd1_controlnet(), "control_model."), want);
    // Original layout, with and without its own control_model. prefix.
    const std::vector<std::string> prefixed(want.begin(), want.end());
    EXPECT_EQ(mapped_set(prefixed, "control_model."), want);
    std::vector<std::string> bare;
    for (const std::string& n : want) bare.push_back(n.substr(14));
    EXPECT_EQ(mapped_set(bare, "control_model."), want);
    // A full ControlNet training checkpoint (cldm): only its control_model part is used.
    std::vector<std::string> cldm = prefixed;
    for (const auto& [name, shape] : fixture_list("sd1_mc32.tensors")) cldm.push_back(name);
    EXPECT_EQ(mapped_set(cldm, "control_model."), want);
}

// (A bare DiT of one family is filed by that family's layout: tests/families.)
TEST(NameMap, BareComponentsGivenAsMainModel) {
    EXPECT_EQ(mapped_set({"conv_in.weight", "down_blocks.0.resnets.0.conv1.weight",
                          "time_embedding.linear_1.weight"},
                         "")
                  .count("model.diffusion_model.input_blocks.1.0.in_layers.2.weight"),
              1u);
    // T5 saved with a "transformer." wrapper, given as --t5xxl.
    EXPECT_EQ(
        mapped_set({"transformer.shared.weight", "transformer.encoder.final_layer_norm.weight"},
                   "text_encoders.t5xxl."),
        (std::set<std::string>{"text_encoders.t5xxl.shared.weight",
                               "text_encoders.t5xxl.encoder.final_layer_norm.weight"}));
}

}  // namespace
}  // namespace ggdiff
