// detect_vae / detect_taesd on checkpoint files with real layouts. The files carry the
// shapes only: the data region is a sparse hole (zeros), so full-size VAEs cost nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/tensor_index.h"
#include "models/vae/taesd.h"
#include "models/vae/vae.h"

namespace {

namespace fs = std::filesystem;
using ggdiff::TensorIndex;
using ggdiff::models::detect_taesd;
using ggdiff::models::detect_vae;
using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// "name d0,d1,..." lines of a shared/fixtures tensor list whose name starts with `select`.
Shapes read_list(const std::string& file, const std::string& select) {
    Shapes out;
    std::ifstream f(std::string(GGDIFF_SHARED_DIR) + "/fixtures/" + file);
    std::string line;
    while (std::getline(f, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream ss(line);
        std::string name, dims;
        if (!(ss >> name >> dims) || name.rfind(select, 0) != 0) continue;
        std::vector<int64_t> shape;
        std::istringstream ds(dims);
        for (std::string d; std::getline(ds, d, ',');) shape.push_back(std::stoll(d));
        out.push_back({name, shape});
    }
    return out;
}

// A safetensors file (F16) with these tensors; the data is a hole of zeros.
fs::path write_safetensors(const std::string& file, const Shapes& tensors) {
    const fs::path dir = fs::path(GGDIFF_TEST_TMP);
    fs::create_directories(dir);
    const fs::path path = dir / file;
    std::string header = "{";
    uint64_t offset = 0;
    for (const auto& [name, shape] : tensors) {
        uint64_t n = 2;
        std::string dims;
        for (int64_t d : shape) {
            n *= static_cast<uint64_t>(d);
            dims += (dims.empty() ? "" : ",") + std::to_string(d);
        }
        if (header.size() > 1) header += ",";
        header += "\"" + name + "\":{\"dtype\":\"F16\",\"shape\":[" + dims +
                  "],\"data_offsets\":[" + std::to_string(offset) + "," +
                  std::to_string(offset + n) + "]}";
        offset += n;
    }
    header += "}";
    header.append((8 - header.size() % 8) % 8, ' ');
    {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        const uint64_t len = header.size();
        for (int i = 0; i < 8; ++i) f.put(static_cast<char>((len >> (8 * i)) & 0xff));
        f << header;
    }
    fs::resize_file(path, 8 + header.size() + offset);
    return path;
}

Shapes sd_vae() {
    return read_list("sd1_mc32.tensors", "first_stage_model.");
}

Shapes without(Shapes s, const std::string& name) {
    s.erase(std::remove_if(s.begin(), s.end(), [&](const auto& t) { return t.first == name; }),
            s.end());
    return s;
}

TEST(VaeDetect, Sd1FullSize) {
    const Shapes shapes = sd_vae();
    ASSERT_GT(shapes.size(), 200u) << "fixture list not found under " << GGDIFF_SHARED_DIR;
    TensorIndex index;
    ASSERT_TRUE(index.add(write_safetensors("sd_vae.safetensors", shapes).string()).ok());
    auto cfg = detect_vae(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->ch, 128);
    EXPECT_EQ(cfg->ch_mult, (std::vector<int>{1, 2, 4, 4}));
    EXPECT_EQ(cfg->num_res_blocks, 2);
    EXPECT_EQ(cfg->z_channels, 4);
    EXPECT_EQ(cfg->in_channels, 3);
    EXPECT_EQ(cfg->out_ch, 3);
    EXPECT_TRUE(cfg->has_quant_conv);
    EXPECT_TRUE(cfg->has_encoder);
    EXPECT_FLOAT_EQ(cfg->scale_factor, 0.18215f);
    EXPECT_FLOAT_EQ(cfg->shift_factor, 0.0f);
    EXPECT_EQ(cfg->downscale(), 8);

    // The declared list is exactly the checkpoint's VAE.
    const auto declared = ggdiff::models::vae_tensor_shapes(*cfg);
    EXPECT_EQ(declared.size(), shapes.size());
    for (const auto& [name, shape] : declared) {
        const ggdiff::TensorInfo* t = index.find(name);
        ASSERT_NE(t, nullptr) << name;
        EXPECT_EQ(t->shape, shape) << name;
    }
}

TEST(VaeDetect, NamesFirstMissingTensor) {
    const std::string gone = "first_stage_model.decoder.up.2.block.1.conv2.weight";
    TensorIndex index;
    ASSERT_TRUE(
        index.add(write_safetensors("sd_vae_missing.safetensors", without(sd_vae(), gone)).string())
            .ok());
    auto cfg = detect_vae(index);
    ASSERT_FALSE(cfg.ok());
    EXPECT_NE(cfg.status().message().find(gone), std::string::npos) << cfg.status().message();
}

TEST(VaeDetect, NamesMisshapedTensor) {
    Shapes shapes = sd_vae();
    const std::string bad = "first_stage_model.encoder.mid.attn_1.v.weight";
    for (auto& [name, shape] : shapes) {
        if (name == bad) shape = {512, 256, 1, 1};
    }
    TensorIndex index;
    ASSERT_TRUE(index.add(write_safetensors("sd_vae_bad.safetensors", shapes).string()).ok());
    auto cfg = detect_vae(index);
    ASSERT_FALSE(cfg.ok());
    EXPECT_NE(cfg.status().message().find(bad), std::string::npos) << cfg.status().message();
    EXPECT_NE(cfg.status().message().find("[512, 256, 1, 1]"), std::string::npos)
        << cfg.status().message();
}

TEST(VaeDetect, NoVaeAtAll) {
    TensorIndex index;
    ASSERT_TRUE(
        index
            .add(write_safetensors("no_vae.safetensors",
                                   read_list("sd1_mc32.tensors", "model.diffusion_model.out"))
                     .string())
            .ok());
    auto cfg = detect_vae(index);
    ASSERT_FALSE(cfg.ok());
    EXPECT_NE(cfg.status().message().find("first_stage_model.decoder.conv_in.weight"),
              std::string::npos)
        << cfg.status().message();
}

TEST(VaeDetect, DecoderOnlyWithMatrixAttention) {
    Shapes shapes;
    for (auto [name, shape] : sd_vae()) {
        if (name.find(".encoder.") != std::string::npos ||
            name.find(".quant_conv.") != std::string::npos) {
            continue;
        }
        // diffusers stores the attention projections as [C, C].
        if (name.find("attn_1.") != std::string::npos && shape.size() == 4) shape.resize(2);
        shapes.push_back({name, shape});
    }
    TensorIndex index;
    ASSERT_TRUE(index.add(write_safetensors("sd_vae_dec.safetensors", shapes).string()).ok());
    auto cfg = detect_vae(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_FALSE(cfg->has_encoder);
    EXPECT_TRUE(cfg->has_quant_conv);
    EXPECT_EQ(cfg->ch_mult, (std::vector<int>{1, 2, 4, 4}));
}

// FLUX.1's autoencoder as a --vae file: 16 latent channels, no quant convs.
TEST(VaeDetect, FluxAutoencoderAsVaeFile) {
    const Shapes shapes = read_list("flux_ae.tensors", "");
    ASSERT_GT(shapes.size(), 200u);
    TensorIndex index;
    ASSERT_TRUE(index
                    .add(write_safetensors("flux_ae.safetensors", shapes).string(),
                         ggdiff::prefix_for_role("vae"))
                    .ok());
    auto cfg = detect_vae(index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->z_channels, 16);
    EXPECT_FALSE(cfg->has_quant_conv);
    EXPECT_EQ(cfg->ch, 128);
    EXPECT_EQ(cfg->ch_mult, (std::vector<int>{1, 2, 4, 4}));
    EXPECT_EQ(cfg->num_res_blocks, 2);
    EXPECT_FLOAT_EQ(cfg->scale_factor, 0.3611f);
    EXPECT_FLOAT_EQ(cfg->shift_factor, 0.1159f);
}

// TAESD as published (diffusers AutoencoderTiny names), loaded with --taesd.
TEST(TaesdDetect, DiffusersLayout) {
    ggdiff::models::TaesdConfig want;
    want.has_encoder = true;
    Shapes shapes;
    for (const auto& [name, shape] : ggdiff::models::taesd_tensor_shapes(want, "")) {
        shapes.push_back({name, shape});
    }
    TensorIndex index;
    ASSERT_TRUE(index
                    .add(write_safetensors("taesd.safetensors", shapes).string(),
                         ggdiff::prefix_for_role("taesd"))
                    .ok());
    auto cfg = detect_taesd(index, "taesd.");
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->channels, 64);
    EXPECT_EQ(cfg->z_channels, 4);
    EXPECT_EQ(cfg->decoder_offset, 0);
    EXPECT_TRUE(cfg->has_decoder);
    EXPECT_TRUE(cfg->has_encoder);
    EXPECT_FLOAT_EQ(cfg->scale_factor, 1.0f);

    // A missing block weight is named.
    const std::string gone = "decoder.layers.8.conv.2.weight";
    TensorIndex broken;
    ASSERT_TRUE(
        broken
            .add(write_safetensors("taesd_broken.safetensors", without(shapes, gone)).string(),
                 ggdiff::prefix_for_role("taesd"))
            .ok());
    auto bad = detect_taesd(broken, "taesd.");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("taesd." + gone), std::string::npos)
        << bad.status().message();
}

// taef1-like decoder only, in the original taesd.py numbering (Clamp at index 0).
TEST(TaesdDetect, OriginalLayoutDecoderOnly16Channels) {
    ggdiff::models::TaesdConfig want;
    want.z_channels = 16;
    want.decoder_offset = 1;
    const Shapes shapes = ggdiff::models::taesd_tensor_shapes(want, "taesd.");
    TensorIndex index;
    ASSERT_TRUE(index.add(write_safetensors("taef1_dec.safetensors", shapes).string()).ok());
    auto cfg = detect_taesd(index, "taesd.");
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->z_channels, 16);
    EXPECT_EQ(cfg->decoder_offset, 1);
    EXPECT_FALSE(cfg->has_encoder);
}

}  // namespace
