// detect_controlnet on ControlNet tensor lists (the narrow one the control tests generate
// and the full-width one of ../shared/golden/sd1_control), written as zero-filled
// safetensors: sizes read from the weights, fit checks against the UNet, clear errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/tensor_index.h"
#include "models/diffusion/controlnet.h"
#include "unet_test_support.h"

namespace ggdiff::unet_test {
namespace {

namespace fs = std::filesystem;
using Layout = std::map<std::string, std::vector<int64_t>>;

// The lines of a tensor list ("name d0,d1,..") whose names start with `prefix`, renamed to
// start with `as` instead.
Layout read_list(const std::string& path, const std::string& prefix, const std::string& as) {
    std::ifstream f(path);
    EXPECT_TRUE(f.good()) << path;
    Layout out;
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#' || line.rfind(prefix, 0) != 0) continue;
        std::istringstream ls(line);
        std::string name, dims;
        ls >> name >> dims;
        std::vector<int64_t> shape;
        std::istringstream ds(dims);
        for (std::string d; std::getline(ds, d, ',');) shape.push_back(std::stoll(d));
        out[as + name.substr(prefix.size())] = shape;
    }
    return out;
}

std::string narrow_list() {
    return std::string(GGDIFF_SOURCE_DIR) + "/tests/fixtures/controlnet_sd1_mc32.tensors";
}
std::string wide_list() {
    return std::string(GGDIFF_SHARED_DIR) + "/fixtures/controlnet_sd1_mc320.tensors";
}

// Writes the layout as a zero-filled file and indexes it in a file role (default
// --control-net).
Result<TensorIndex> index_of(const Layout& layout, const std::string& file,
                             const std::string& role = "control-net") {
    const fs::path dir = fs::path(GGDIFF_TEST_TMP) / "controlnet";
    fs::create_directories(dir);
    const std::string path = (dir / file).string();
    TensorMap m;
    for (const auto& [name, shape] : layout) m[name] = Tensor{shape, {}};
    Status st = write_safetensors(path, m, true);
    if (!st.ok()) return st;
    TensorIndex index;
    st = index.add(path, prefix_for_role(role));
    if (!st.ok()) return st;
    return index;
}

Result<models::UNetConfig> unet_of(const std::string& list, const std::string& file) {
    auto index = index_of(read_list(list, "model.diffusion_model.", "model.diffusion_model."), file,
                          "model");
    if (!index.ok()) return index.status();
    return models::detect_unet(*index);
}

TEST(ControlNetDetect, NarrowControlNetFitsTheNarrowUNet) {
    // The list has the control_model. prefix of original full ControlNet files.
    auto index = index_of(read_list(narrow_list(), "control_model.", "control_model."), "n.st");
    ASSERT_TRUE(index.ok()) << index.status().message();
    auto cfg = models::detect_controlnet(*index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->net.model_channels, 32);
    EXPECT_EQ(cfg->net.in_channels, 4);
    EXPECT_EQ(cfg->net.channel_mult, (std::vector<int>{1, 2, 4, 4}));
    EXPECT_EQ(cfg->net.context_dim, 768);
    EXPECT_EQ(cfg->hint_channels, 3);
    EXPECT_EQ(cfg->hint_widths, (std::vector<int>{16, 16, 32, 32, 96, 96, 256, 32}));
    ASSERT_EQ(cfg->outputs(), 13);
    EXPECT_EQ(cfg->residual_channels(0), 32);
    EXPECT_EQ(cfg->residual_channels(4), 64);
    EXPECT_EQ(cfg->residual_channels(11), 128);
    EXPECT_EQ(cfg->residual_channels(12), 128);

    auto unet = unet_of(std::string(GGDIFF_SHARED_DIR) + "/fixtures/sd1_mc32.tensors", "u32.st");
    ASSERT_TRUE(unet.ok()) << unet.status().message();
    EXPECT_TRUE(models::check_controlnet_fits(*cfg, *unet).ok());
}

TEST(ControlNetDetect, WideControlNetIsReadFromItsWeights) {
    // Standalone file without any prefix: filed under control_model.
    auto index = index_of(read_list(wide_list(), "", ""), "w.st");
    ASSERT_TRUE(index.ok()) << index.status().message();
    auto cfg = models::detect_controlnet(*index);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->net.model_channels, 320);
    EXPECT_EQ(cfg->hint_widths.back(), 320);
    EXPECT_EQ(cfg->outputs(), 13);

    // Made for the 320-wide UNet, not for the 32-wide one.
    auto narrow = unet_of(std::string(GGDIFF_SHARED_DIR) + "/fixtures/sd1_mc32.tensors", "u.st");
    ASSERT_TRUE(narrow.ok()) << narrow.status().message();
    const Status st = models::check_controlnet_fits(*cfg, *narrow);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("320/640/1280/1280"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("32/64/128/128"), std::string::npos) << st.message();
    auto wide = unet_of(std::string(GGDIFF_SHARED_DIR) + "/fixtures/sd1_mc320.tensors", "u320.st");
    ASSERT_TRUE(wide.ok()) << wide.status().message();
    EXPECT_TRUE(models::check_controlnet_fits(*cfg, *wide).ok());
}

TEST(ControlNetDetect, ErrorsNameTheTensor) {
    Layout base = read_list(narrow_list(), "control_model.", "control_model.");
    {
        Layout l = base;
        l.erase("control_model.zero_convs.7.0.weight");
        auto index = index_of(l, "e1.st");
        ASSERT_TRUE(index.ok());
        auto cfg = models::detect_controlnet(*index);
        ASSERT_FALSE(cfg.ok());
        EXPECT_NE(cfg.status().message().find("control_model.zero_convs.7.0.weight"),
                  std::string::npos)
            << cfg.status().message();
    }
    {
        Layout l = base;
        l["control_model.input_hint_block.8.weight"] = {96, 16, 3, 3};  // does not chain
        auto index = index_of(l, "e2.st");
        ASSERT_TRUE(index.ok());
        auto cfg = models::detect_controlnet(*index);
        ASSERT_FALSE(cfg.ok());
        EXPECT_NE(cfg.status().message().find("input_hint_block.8.weight"), std::string::npos)
            << cfg.status().message();
    }
    {
        Layout l = base;
        l.erase("control_model.input_blocks.0.0.weight");
        auto index = index_of(l, "e3.st");
        ASSERT_TRUE(index.ok());
        auto cfg = models::detect_controlnet(*index);
        ASSERT_FALSE(cfg.ok());
        EXPECT_NE(cfg.status().message().find("control_model.input_blocks.0.0.weight"),
                  std::string::npos)
            << cfg.status().message();
    }
}

}  // namespace
}  // namespace ggdiff::unet_test
