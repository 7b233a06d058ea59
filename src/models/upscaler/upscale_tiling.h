// Tiled upscaling on the host, laid out and blended as stable-diffusion.cpp tiles its ESRGAN
// runs (the same process_tiles_2d as its VAE: models/vae/tiling.h), so that large images give
// the same result as the reference engine. Along each axis the tiles are `tile` input pixels
// wide (the whole side when it is smaller); their count and overlap come from a target overlap
// of 25 % (plan_tiles); the last tile is moved back to end on the border; overlaps blend
// with smootherstep weights that add up to 1.
#pragma once

#include "core/status.h"
#include "models/vae/tiling.h"

namespace ggdiff::models {

// in: [W, H, C, 1]; fn gets [tw, th, C, 1] tiles and must return [tw*scale, th*scale, C', 1].
// out becomes [W*scale, H*scale, C', 1]. A single tile (both sides <= tile) calls fn once
// on the whole image.
Status run_upscale_tiles(const HostTensor& in, HostTensor& out, int scale, int tile,
                         const TileFn& fn, float target_overlap = 0.25f);

}  // namespace ggdiff::models
