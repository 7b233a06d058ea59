// HiDream-O1-Image's edit mode (-r reference images), as stable-diffusion.cpp (38a51f81,
// HiDreamO1Conditioner) prepares it:
// - each reference is resized (bicubic, as torch) to the largest size in multiples of 32 whose
//   area is at most max_size^2 and centre-cropped, max_size = the output's larger side (x 48/64
//   for two references, / 2 for three or four, x 24/64 up to eight, / 4 beyond); its pixels in
//   [-1, 1] join the generated image's patches in the sequence;
// - the vision tower reads that image resized again (nearest) to about cond^2 pixels in
//   multiples of 32 (cond 384 up to four references, 288 up to eight, else 192), in [-1, 1]; its
//   rows replace the <|image_pad|> tokens of "<|vision_start|>...<|vision_end|>" before the
//   prompt in the user turn;
// - the RoPE positions: text runs continue from the last image's time position + 1, a vision
//   image at (base, base + row, base + column) with base = its first token's position, the
//   generated image at 4096 and each reference patch grid after it from the highest time
//   position + 1 (the reference's build_position_ids).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/host_tensor.h"
#include "image/image.h"

namespace ggdiff::models {

constexpr int kHiDreamO1ImageToken = 151655;        // <|image_pad|>
constexpr int kHiDreamO1VisionStartToken = 151652;  // <|vision_start|>

struct HiDreamO1EditImage {
    HostTensor pixels;  // [w, h, 3] in [-1, 1], w and h multiples of 32: joins the patches
    HostTensor vision;  // [cw, ch, 3] in [-1, 1], multiples of 32: the vision tower's input
};

// Reference `image` (one of `count`) for an output of width x height.
HiDreamO1EditImage hidream_o1_edit_image(const Image& image, int count, int width, int height);

// One image's place in a token sequence: a grid of t x h x w tokens, the first of them being
// <|vision_start|> when `skip_start` (the generated image and the references after the prompt)
// or the first <|image_pad|> (the vision tower's images in the prompt).
struct HiDreamO1Grid {
    int32_t t = 1, h = 0, w = 0;
    bool skip_start = false;
};

// The four RoPE position streams (time, row, column, unused) of `ids` (the prompt's tokens,
// then each skip_start grid as <|vision_start|> followed by <|image_pad|> tokens), the grids in
// the order their image tokens appear.
std::vector<int32_t> hidream_o1_sequence_positions(const std::vector<int32_t>& ids,
                                                   const std::vector<HiDreamO1Grid>& grids);

}  // namespace ggdiff::models
