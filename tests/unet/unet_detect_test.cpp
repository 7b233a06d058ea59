// detect_unet on the real SD1 layout (the fixture's tensor list, written as a zero-filled
// safetensors of its UNet part), round trips of other configs, and clear errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/tensor_index.h"
#include "unet_test_support.h"

namespace ggdiff::unet_test {
namespace {

using models::UNetConfig;
namespace fs = std::filesystem;
using Layout = std::map<std::string, std::vector<int64_t>>;

const std::string kPrefix = "model.diffusion_model.";

// The model.diffusion_model.* lines of a fixture list ("name d0,d1,..").
Layout fixture_unet(const std::string& list) {
    std::ifstream f(list);
    Layout out;
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind(kPrefix, 0) != 0) continue;
        std::istringstream ls(line);
        std::string name, dims;
        ls >> name >> dims;
        std::vector<int64_t> shape;
        std::istringstream ds(dims);
        for (std::string d; std::getline(ds, d, ',');) shape.push_back(std::stoll(d));
        out[name] = shape;
    }
    return out;
}

TensorMap shapes_only(const Layout& layout) {
    TensorMap m;
    for (const auto& [name, shape] : layout) m[name] = Tensor{shape, {}};
    return m;
}

Result<UNetConfig> detect_from(const Layout& layout, const std::string& file) {
    const fs::path dir = fs::path(GGDIFF_TEST_TMP) / "detect";
    fs::create_directories(dir);
    const std::string path = (dir / file).string();
    Status st = write_safetensors(path, shapes_only(layout), true);
    if (!st.ok()) return st;
    TensorIndex index;
    st = index.add(path);
    if (!st.ok()) return st;
    return models::detect_unet(index);
}

Layout sd1_layout() {
    return fixture_unet(std::string(GGDIFF_SHARED_DIR) + "/fixtures/sd1_mc32.tensors");
}

void expect_same(const UNetConfig& a, const UNetConfig& b) {
    EXPECT_EQ(a.in_channels, b.in_channels);
    EXPECT_EQ(a.out_channels, b.out_channels);
    EXPECT_EQ(a.model_channels, b.model_channels);
    EXPECT_EQ(a.time_embed_dim, b.time_embed_dim);
    EXPECT_EQ(a.channel_mult, b.channel_mult);
    EXPECT_EQ(a.num_res_blocks, b.num_res_blocks);
    EXPECT_EQ(a.transformer_depth, b.transformer_depth);
    EXPECT_EQ(a.middle_depth, b.middle_depth);
    EXPECT_EQ(a.context_dim, b.context_dim);
    EXPECT_EQ(a.num_heads, b.num_heads);
    EXPECT_EQ(a.head_dim, b.head_dim);
    EXPECT_EQ(a.linear_proj, b.linear_proj);
    EXPECT_EQ(a.adm_in_channels, b.adm_in_channels);
}

TEST(UNetDetect, RealSd1Layout) {
    const Layout layout = sd1_layout();
    ASSERT_GT(layout.size(), 600u) << "fixture list not found under " GGDIFF_SHARED_DIR;
    auto cfg = detect_from(layout, "sd1_mc32_unet.safetensors");
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    UNetConfig want;  // SD1 defaults
    want.model_channels = 32;
    want.time_embed_dim = 128;
    expect_same(*cfg, want);
    EXPECT_EQ(cfg->heads_for(32), 8);
}

// The builder asks for exactly the tensors of the real layout, and the test's own layout
// writer agrees with it, so the numeric tests cover what checkpoints hold.
TEST(UNetDetect, BuilderUsesExactlyTheSd1Tensors) {
    const Layout layout = sd1_layout();
    ASSERT_GT(layout.size(), 600u);
    UNetConfig cfg;
    cfg.model_channels = 32;
    cfg.time_embed_dim = 128;
    EXPECT_EQ(unet_layout(cfg, kPrefix), layout);
    int nodes = 0;
    auto names = requested_weights(cfg, shapes_only(layout), kPrefix, 64, &nodes);
    ASSERT_TRUE(names.ok()) << names.status().message();
    std::set<std::string> all;
    for (const auto& [name, shape] : layout) all.insert(name);
    EXPECT_EQ(*names, all);
    std::printf("[ sd1 graph ] %d nodes at 64x64 latent\n", nodes);
}

TEST(UNetDetect, RoundTripSd2StyleAndSdxlStyle) {
    UNetConfig sd2;
    sd2.model_channels = 64;
    sd2.time_embed_dim = 256;
    sd2.channel_mult = {1, 2, 2};
    sd2.num_res_blocks = 1;
    sd2.transformer_depth = {0, 2, 1};
    sd2.middle_depth = 3;
    sd2.context_dim = 1024;
    sd2.num_heads = -1;
    sd2.head_dim = 64;
    sd2.linear_proj = true;
    sd2.in_channels = 9;
    auto got = detect_from(unet_layout(sd2, kPrefix), "sd2_style.safetensors");
    ASSERT_TRUE(got.ok()) << got.status().message();
    expect_same(*got, sd2);

    UNetConfig xl = sd2;
    xl.channel_mult = {1, 2};
    xl.transformer_depth = {0, 2};
    xl.middle_depth = 2;
    xl.context_dim = 2048;
    xl.adm_in_channels = 2816;
    xl.in_channels = 4;
    got = detect_from(unet_layout(xl, kPrefix), "sdxl_style.safetensors");
    ASSERT_TRUE(got.ok()) << got.status().message();
    expect_same(*got, xl);
}

// A broken checkpoint names the first tensor that is missing or wrong.
TEST(UNetDetect, ErrorsNameTheTensor) {
    const Layout good = sd1_layout();
    ASSERT_GT(good.size(), 600u);
    struct Breakage {
        std::string name;
        std::vector<int64_t> shape;  // empty: remove the tensor
    };
    const Breakage cases[] = {
        {"input_blocks.0.0.weight", {}},
        {"out.2.weight", {}},
        {"time_embed.0.weight", {128 * 32}},
        {"input_blocks.4.1.transformer_blocks.0.attn2.to_k.weight", {}},
        {"middle_block.1.proj_in.weight", {}},
        {"output_blocks.11.0.in_layers.2.weight", {}},
        {"input_blocks.5.0.in_layers.2.weight", {48, 64, 3, 3}},
    };
    int i = 0;
    for (const Breakage& b : cases) {
        Layout bad = good;
        const std::string full = kPrefix + b.name;
        ASSERT_TRUE(bad.count(full)) << full;
        if (b.shape.empty()) {
            bad.erase(full);
        } else {
            bad[full] = b.shape;
        }
        auto got = detect_from(bad, "broken" + std::to_string(i++) + ".safetensors");
        ASSERT_FALSE(got.ok()) << b.name;
        EXPECT_NE(got.status().message().find(full), std::string::npos) << got.status().message();
    }
}

TEST(UNetDetect, BlockPrefixesCoverTheWeights) {
    UNetConfig cfg;
    cfg.model_channels = 32;
    cfg.time_embed_dim = 128;
    const std::vector<std::string> blocks = models::unet_block_prefixes(cfg);
    ASSERT_EQ(blocks.size(), 12u + 1u + 12u);
    EXPECT_EQ(blocks.front(), "input_blocks.0.");
    EXPECT_EQ(blocks[12], "middle_block.");
    EXPECT_EQ(blocks.back(), "output_blocks.11.");
    // Every weight but the time embedding head and the out tail is in exactly one block.
    for (const auto& [name, shape] : sd1_layout()) {
        const std::string rel = name.substr(kPrefix.size());
        int hits = 0;
        for (const std::string& b : blocks) hits += rel.rfind(b, 0) == 0;
        const bool outside = rel.rfind("time_embed.", 0) == 0 || rel.rfind("out.", 0) == 0;
        EXPECT_EQ(hits, outside ? 0 : 1) << rel;
    }
}

}  // namespace
}  // namespace ggdiff::unet_test
