// Tiled VAE passes on the host: split a [W, H, C, N] tensor into overlapping tiles, run a
// callback (a VAE decode or encode graph) on each, and blend the outputs with linear
// feathering across every overlap, so that peak compute memory depends on the tile
// size only.
//
// Blending: each tile's output pixel gets the weight wx * wy, where along each axis the
// weight ramps linearly from ~0 at an edge shared with a neighbouring tile to 1 at the
// far end of that overlap (edges on the image border are not feathered); the result is
// sum(w * tile) / sum(w), accumulated in double so that a callback that gives every tile
// the same values as an untiled run gives exactly the untiled result.
// (stable-diffusion.cpp blends its tiles in the same spirit, with a different ramp.)
#pragma once

#include <functional>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"

namespace ggdiff::models {

struct TileOptions {
    int tile_w = 32;       // tile size in input pixels (latent pixels for decode);
    int tile_h = 32;       // clamped to the input size
    float overlap = 0.5f;  // minimum overlap between neighbours, fraction of the tile [0, 0.9]
};

using TileFn = std::function<Status(const HostTensor& tile_in, HostTensor& tile_out)>;

// in: [W, H, C, N]. scale: output pixels per input pixel, an integer (8 for decode) or the
// inverse of one (1/8 for encode; W, H and the tile size must then be multiples of 8, the
// tile size is rounded down to one). fn gets [tw, th, C, N] tiles and must return
// [tw*scale, th*scale, C_out, N] (C_out may differ from C, the same for every tile).
// out is resized to [W*scale, H*scale, C_out, N].
Status run_tiled(const HostTensor& in, HostTensor& out, float scale, const TileOptions& opt,
                 const TileFn& fn);

// A video decoded in tiles of its region, each tile a whole video of that region (as the
// reference engine tiles a video): in [W, H, C, T]; fn gets [tw, th, C, T] and returns
// [tw*scale, th*scale, C_out, F] (F frames, the same for every tile); out is
// [W*scale, H*scale, C_out, F]. The frames blend as channels.
Status run_tiled_video(const HostTensor& in, HostTensor& out, float scale, const TileOptions& opt,
                       const TileFn& fn);

// Start offsets (in units of `unit` input pixels) of the tiles along one axis of `size`
// units with tiles of `tile` units and at least `overlap` fractional overlap; exposed for
// tests. The first tile starts at 0, the last ends at `size`.
std::vector<int> tile_starts(int size, int tile, float overlap);

}  // namespace ggdiff::models
