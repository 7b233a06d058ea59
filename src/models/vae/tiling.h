// Tiled VAE passes on the host: split a [W, H, C, N] tensor into overlapping tiles, run a
// callback (a VAE decode or encode graph) on each, and blend the outputs, so that peak compute
// memory depends on the tile size only.
//
// Tiles and blending as stable-diffusion.cpp (process_tiles_2d) makes them, so that a tiled
// decode gives the reference's pixels: along each axis the overlap is settled for the tile
// count that fits best (plan_tiles), tiles step by the tile less that overlap, and the last one
// is moved back to end at the border (the part the tile before it covers is not written). A
// tile's output pixel is added with the weight wx * wy, each ramping as the smootherstep of the
// distance into an overlap shared with a neighbour (0 to 1 over the overlap; 1 at the image's
// border), which sum to 1 where tiles meet.
#pragma once

#include <functional>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"

namespace ggdiff::models {

struct TileOptions {
    int tile_w = 32;       // tile size in input pixels (latent pixels for decode);
    int tile_h = 32;       // clamped to the input size
    float overlap = 0.5f;  // overlap asked for between neighbours, fraction of the tile [0, 0.9]
    // Tiles are at least this many grid units (latent pixels) even where the input is smaller
    // than that (the reference's 4 for a VAE; the tile is then the whole axis).
    int min_tile = 1;
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

// The tiles along one axis of `size` grid units for tiles of `tile` units asked to overlap by
// `overlap` (exposed for tests): each tile's start and the units at its start it leaves to the
// tile before it (only the last, moved back to end at `size`, has any).
struct AxisTile {
    int start = 0, skip = 0;
};
struct AxisTiles {
    int tile = 0;     // units per tile (at most `size`)
    int overlap = 0;  // units over which neighbours blend
    std::vector<AxisTile> tiles;
};
AxisTiles plan_tiles(int size, int tile, float overlap);

}  // namespace ggdiff::models
