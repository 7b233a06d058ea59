// Boogu Image without a model run: a bare DiT file is filed under the diffusion model and
// detected; sizes come from the weights (the golden fixture's list), and a DiT whose heads do
// not split into three RoPE axes is refused naming the tensor; the sequence's position ids
// (text on the diagonal, each reference and then the image on their own frame index, shifted
// past the text and by the references' larger sides) value by value; the LoRA keys of a
// joint-attention projection with and without "processor." (kohya, ComfyUI, PEFT).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "../io/io_test_util.h"
#include "families/boogu/dit.h"
#include "families/boogu/names.h"
#include "families/registry.h"
#include "io/lora_names.h"
#include "io/name_map.h"
#include "io/tensor_index.h"

namespace ggdiff {
namespace {

const std::string kDit = "model.diffusion_model.";

// The golden fixture's tensor list (tests/fixtures/boogu_tiny_dit.tensors) as fake tensors,
// each name passed through `rename` (an empty result drops the tensor).
std::vector<testing::FakeTensor> fixture_tensors(
    const std::function<std::string(const std::string&)>& rename = {}) {
    std::ifstream f(std::string(GGDIFF_SOURCE_DIR) + "/tests/fixtures/boogu_tiny_dit.tensors");
    std::vector<testing::FakeTensor> t;
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream in(line);
        std::string name, dims;
        in >> name >> dims;
        if (rename) name = rename(name);
        if (name.empty()) continue;
        std::vector<int64_t> shape;
        std::istringstream d(dims);
        for (std::string v; std::getline(d, v, ',');) shape.push_back(std::stoll(v));
        t.push_back({name, "F16", shape, std::string(2 * testing::numel(shape), '\0')});
    }
    return t;
}

TensorIndex open(const std::vector<testing::FakeTensor>& tensors, const std::string& tag,
                 const std::string& prefix) {
    const std::string path = testing::test_dir("boogu_" + tag) + "/dit.safetensors";
    testing::write_safetensors(path, tensors);
    TensorIndex index = model_index();
    const Status st = index.add(path, prefix);
    EXPECT_TRUE(st.ok()) << st.message();
    return index;
}

TEST(BooguDit, BareFileIsDetectedAndSizesComeFromTheWeights) {
    const auto tensors = fixture_tensors();
    ASSERT_EQ(tensors.size(), 134u);
    const TensorIndex index = open(tensors, "bare", "");  // -m: no role
    EXPECT_EQ(family_id(index), "boogu_image");
    auto cfg = models::detect_boogu(index, kDit);
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->width, 96);
    EXPECT_EQ(cfg->head_dim, 24);
    EXPECT_EQ(cfg->heads, 4);
    EXPECT_EQ(cfg->kv_heads, 2);
    EXPECT_EQ(cfg->ffn, 512);
    EXPECT_EQ(cfg->cap_width, 512);
    EXPECT_EQ(cfg->t_width, 96);
    EXPECT_EQ(cfg->latent_channels, 16);
    EXPECT_EQ(cfg->single_layers, 2);
    EXPECT_EQ(cfg->double_layers, 1);
    EXPECT_EQ(cfg->noise_refiners, 1);
    EXPECT_EQ(cfg->context_refiners, 1);
    EXPECT_EQ(cfg->ref_refiners, 1);
    EXPECT_EQ(cfg->axes_dim, (std::vector<int>{8, 8, 8}));
}

// Heads of 20 are not three RoPE axes of whole pairs: refused, naming the norm it read.
TEST(BooguDit, HeadsThatAreNotThreeRopeAxesAreRefused) {
    auto tensors = fixture_tensors();
    for (testing::FakeTensor& t : tensors) {
        if (t.name == "single_stream_layers.0.attn.norm_q.weight") {
            t.shape = {20};
            t.data.assign(40, '\0');
        }
    }
    const TensorIndex index = open(tensors, "heads", kDit);
    auto cfg = models::detect_boogu(index, kDit);
    ASSERT_FALSE(cfg.ok());
    EXPECT_NE(cfg.status().message().find("single_stream_layers.0.attn"), std::string::npos)
        << cfg.status().message();
}

TEST(BooguDit, PositionIdsOfTextReferencesAndImage) {
    models::BooguConfig cfg;
    // 3 text tokens, a 6x4 reference latent (3x2 patches), a 3x3 latent (padded: 2x2 patches).
    const models::BooguTokens t = models::boogu_tokens(cfg, 3, 3, 3, {{6, 4}});
    EXPECT_EQ(t.ref_tokens(), 6);
    EXPECT_EQ(t.image.tokens(), 4);
    EXPECT_EQ(t.total(), 13);
    const std::vector<float> ids = models::boogu_position_ids(t);
    const std::vector<float> want = {
        0, 0, 0, 1, 1, 1, 2, 2, 2,  // text: (i, i, i)
        3, 0, 0, 3, 0, 1, 3, 0, 2, 3, 1, 0,
        3, 1, 1, 3, 1, 2,                    // the reference at 3 (rows 2, cols 3)
        6, 0, 0, 6, 0, 1, 6, 1, 0, 6, 1, 1,  // the image at 3 + max(2, 3)
    };
    EXPECT_EQ(ids, want);
}

TEST(BooguNames, JointAttentionLoraKeysWithAndWithoutProcessor) {
    const std::vector<std::string> keys =
        boogu_lora_keys("double_stream_layers.0.img_instruct_attn.processor.img_to_q.weight");
    auto has = [&](const std::string& k) {
        return std::find(keys.begin(), keys.end(), k) != keys.end();
    };
    // kohya keeps "processor" (underscored); dotted ComfyUI / PEFT keys lose it on reading.
    EXPECT_TRUE(has("unet_double_stream_layers_0_img_instruct_attn_processor_img_to_q"));
    EXPECT_TRUE(has(normalize_lora_key(
        "diffusion_model.double_stream_layers.0.img_instruct_attn.processor.img_to_q")));
    EXPECT_TRUE(has(normalize_lora_key(
        "transformer.double_stream_layers.0.img_instruct_attn.processor.img_to_q")));
    EXPECT_TRUE(has(normalize_lora_key(
        "base_model.model.double_stream_layers.0.img_instruct_attn.processor.img_to_q")));
}

}  // namespace
}  // namespace ggdiff
