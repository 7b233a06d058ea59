// Block numbering for layer split.
#include <gtest/gtest.h>

#include <algorithm>

#include "placement/block_index.h"

namespace ggdiff::placement {
namespace {

TEST(BlockIndex, SegmentsFromMission) {
    EXPECT_EQ(block_index_of("model.diffusion_model.transformer_blocks.12.attn.to_q.weight"), 12);
    EXPECT_EQ(block_index_of("model.diffusion_model.joint_blocks.3.x_block.attn.qkv.weight"), 3);
    EXPECT_EQ(block_index_of("model.diffusion_model.double_blocks.18.img_mlp.0.weight"), 18);
    EXPECT_EQ(block_index_of("model.diffusion_model.single_blocks.0.linear1.weight"), 0);
    EXPECT_EQ(block_index_of("model.diffusion_model.blocks.29.ffn.0.weight"), 29);
    EXPECT_EQ(block_index_of("text_encoders.t5xxl.transformer.encoder.block.23.layer.1.w"), 23);
    EXPECT_EQ(
        block_index_of("cond_stage_model.transformer.text_model.encoder.layers.11.mlp.fc1.weight"),
        11);
    EXPECT_EQ(block_index_of("cond_stage_model.model.transformer.resblocks.22.attn.in_proj_weight"),
              22);
}

TEST(BlockIndex, NonBlock) {
    EXPECT_EQ(block_index_of("model.diffusion_model.img_in.weight"), -1);
    EXPECT_EQ(block_index_of("model.diffusion_model.final_layer.linear.weight"), -1);
    EXPECT_EQ(block_index_of("model.diffusion_model.blocks.weight"), -1);      // no integer
    EXPECT_EQ(block_index_of("model.diffusion_model.myblocks.3.weight"), -1);  // not a segment
    EXPECT_EQ(block_index_of("model.diffusion_model.layers"), -1);
    EXPECT_EQ(block_index_of("layers.x1.weight"), -1);
    EXPECT_EQ(block_index_of(""), -1);
}

TEST(BlockIndex, UNetVariant) {
    // A UNet's transformer_blocks live inside input/output blocks: the UNet numbering wins.
    EXPECT_EQ(
        unet_block_index_of(
            "model.diffusion_model.input_blocks.4.1.transformer_blocks.0.attn1.to_q.weight", 12),
        4);
    EXPECT_EQ(unet_block_index_of("model.diffusion_model.middle_block.1.proj_in.weight", 12), 12);
    EXPECT_EQ(unet_block_index_of("model.diffusion_model.output_blocks.0.0.in_layers.0.weight", 12),
              13);
    EXPECT_EQ(unet_block_index_of("model.diffusion_model.output_blocks.11.1.norm.weight", 12), 24);
    EXPECT_EQ(unet_block_index_of("model.diffusion_model.time_embed.0.weight", 12), -1);
    EXPECT_EQ(unet_block_index_of("model.diffusion_model.out.2.weight", 12), -1);
}

TEST(NumberBlocks, UNetAtInputMiddleOutputBoundaries) {
    std::vector<std::string> names = {"model.diffusion_model.time_embed.0.weight"};
    for (int i = 0; i < 12; ++i) {
        names.push_back("model.diffusion_model.input_blocks." + std::to_string(i) + ".0.weight");
        names.push_back("model.diffusion_model.input_blocks." + std::to_string(i) +
                        ".1.transformer_blocks.0.attn1.to_q.weight");
    }
    names.push_back("model.diffusion_model.middle_block.0.in_layers.2.weight");
    for (int i = 0; i < 12; ++i)
        names.push_back("model.diffusion_model.output_blocks." + std::to_string(i) + ".0.weight");
    names.push_back("model.diffusion_model.out.2.weight");
    // File order is usually alphabetical; numbering must not depend on it.
    std::sort(names.begin(), names.end());

    BlockNumbering n = number_blocks(names);
    ASSERT_EQ(n.num_blocks(), 25);
    EXPECT_EQ(n.block_names[0], "input_blocks.0");
    EXPECT_EQ(n.block_names[11], "input_blocks.11");
    EXPECT_EQ(n.block_names[12], "middle_block");
    EXPECT_EQ(n.block_names[13], "output_blocks.0");
    EXPECT_EQ(n.block_names[24], "output_blocks.11");
    for (size_t i = 0; i < names.size(); ++i) {
        const std::string& s = names[i];
        if (s.find("time_embed") != std::string::npos || s.find(".out.") != std::string::npos) {
            EXPECT_EQ(n.block[i], -1) << s;
        } else if (s.find("input_blocks.4.1.transformer") != std::string::npos) {
            EXPECT_EQ(n.block[i], 4) << s;
        } else if (s.find("middle_block") != std::string::npos) {
            EXPECT_EQ(n.block[i], 12) << s;
        } else if (s.find("output_blocks.10.") != std::string::npos) {
            EXPECT_EQ(n.block[i], 23) << s;
        }
    }
}

TEST(NumberBlocks, DoubleBlocksBeforeSingleBlocks) {
    std::vector<std::string> names = {
        "model.diffusion_model.single_blocks.0.linear1.weight",
        "model.diffusion_model.single_blocks.1.linear1.weight",
        "model.diffusion_model.single_blocks.10.linear1.weight",
        "model.diffusion_model.img_in.weight",
        "model.diffusion_model.double_blocks.1.img_attn.qkv.weight",
        "model.diffusion_model.double_blocks.0.img_attn.qkv.weight",
        "model.diffusion_model.double_blocks.0.txt_attn.qkv.weight",
    };
    BlockNumbering n = number_blocks(names);
    ASSERT_EQ(n.num_blocks(), 5);
    EXPECT_EQ(n.block_names,
              (std::vector<std::string>{"double_blocks.0", "double_blocks.1", "single_blocks.0",
                                        "single_blocks.1", "single_blocks.10"}));
    EXPECT_EQ(n.block, (std::vector<int>{2, 3, 4, -1, 1, 0, 0}));
}

// A family's declared segments: only they are blocks, in the declared order (here the
// reverse of the generic one), and a segment the generic set knows ("layers") is not a block
// unless declared.
TEST(NumberBlocks, DeclaredSegmentsAndOrder) {
    std::vector<std::string> names = {
        "model.diffusion_model.double_blocks.0.img_attn.qkv.weight",
        "model.diffusion_model.single_blocks.0.linear1.weight",
        "model.diffusion_model.refiner.layers.0.w",
        "model.diffusion_model.single_blocks.1.linear1.weight",
    };
    BlockNumbering n = number_blocks(names, "", {"single_blocks", "double_blocks"});
    EXPECT_EQ(n.block_names,
              (std::vector<std::string>{"single_blocks.0", "single_blocks.1", "double_blocks.0"}));
    EXPECT_EQ(n.block, (std::vector<int>{2, 0, -1, 1}));
    // The UNet numbering applies when the declared segments name the UNet's parts only.
    const std::vector<std::string> unet = {"model.diffusion_model.input_blocks.0.0.weight",
                                           "model.diffusion_model.output_blocks.0.0.weight",
                                           "model.diffusion_model.middle_block.0.weight"};
    EXPECT_EQ(number_blocks(unet, "", {"input_blocks", "middle_block", "output_blocks"}).block,
              (std::vector<int>{0, 2, 1}));
    EXPECT_EQ(number_blocks(unet, "", {"double_blocks"}).num_blocks(), 0);
}

TEST(NumberBlocks, PrefixRestrictsToOneEncoder) {
    std::vector<std::string> names = {
        "text_encoders.clip_l.transformer.text_model.encoder.layers.0.mlp.fc1.weight",
        "text_encoders.t5xxl.transformer.encoder.block.0.layer.0.SelfAttention.q.weight",
        "text_encoders.t5xxl.transformer.encoder.block.1.layer.0.SelfAttention.q.weight",
        "text_encoders.t5xxl.transformer.shared.weight",
    };
    BlockNumbering n = number_blocks(names, "text_encoders.t5xxl.");
    EXPECT_EQ(n.block, (std::vector<int>{-1, 0, 1, -1}));
    EXPECT_EQ(n.block_names, (std::vector<std::string>{"block.0", "block.1"}));
}

TEST(NumberBlocks, GapsCloseUpAndRecordsGetBlocks) {
    std::vector<TensorRecord> recs(4);
    const char* names[] = {"blocks.0.w", "blocks.2.w", "blocks.7.w", "head.w"};
    for (size_t i = 0; i < recs.size(); ++i) recs[i].name = names[i];
    BlockNumbering n = assign_blocks(recs);
    EXPECT_EQ(n.num_blocks(), 3);
    EXPECT_EQ(recs[0].block, 0);
    EXPECT_EQ(recs[1].block, 1);
    EXPECT_EQ(recs[2].block, 2);
    EXPECT_EQ(recs[3].block, -1);
}

}  // namespace
}  // namespace ggdiff::placement
