// Which numbered block a weight belongs to, for layer split.
//
// A block is the integer after a path segment transformer_blocks., joint_blocks.,
// double_blocks., single_blocks., blocks., block. or layers. (ggdiff adds resblocks., the
// LDM spelling of the OpenCLIP encoders). UNets are numbered at their input/middle/output
// boundaries instead: input_blocks.0..N-1, then middle_block, then output_blocks.0..
#pragma once

#include <string>
#include <vector>

#include "placement/tensor_record.h"

namespace ggdiff::placement {

// The integer after the first block segment of `name`, or -1 (non-block).
// "double_blocks.3.img_attn.qkv.weight" -> 3, "encoder.block.7.layer.0..." -> 7.
int block_index_of(const std::string& name);

// UNet numbering: input_blocks.N -> N, middle_block -> num_input_blocks,
// output_blocks.N -> num_input_blocks + 1 + N; -1 for anything else.
int unet_block_index_of(const std::string& name, int num_input_blocks);

struct BlockNumbering {
    std::vector<int> block;                // per name: global block index or -1
    std::vector<std::string> block_names;  // per global index: "double_blocks.3", ...
    int num_blocks() const { return static_cast<int>(block_names.size()); }
};

// Numbers the blocks of one module consecutively in graph order. Blocks are grouped by
// their path ("x.double_blocks", "x.single_blocks"); groups keep their order of first
// appearance except that double_blocks precede single_blocks and input_blocks precede
// middle_block precede output_blocks. Within a group, indices ascend and gaps close up.
// A model with any input_blocks./middle_block./output_blocks. segment is numbered as a
// UNet. Only names starting with `prefix` can be blocks (e.g. the dominant text encoder).
// `segments`, when given, are the module's own block segments in graph order (a family's
// recipe declares its diffusion model's: "double_blocks", "single_blocks"): only they make
// blocks, and their groups follow that order.
BlockNumbering number_blocks(const std::vector<std::string>& names, const std::string& prefix = "",
                             const std::vector<std::string>& segments = {});

// Sets TensorRecord::block of every record with number_blocks.
BlockNumbering assign_blocks(std::vector<TensorRecord>& records, const std::string& prefix = "",
                             const std::vector<std::string>& segments = {});

}  // namespace ggdiff::placement
