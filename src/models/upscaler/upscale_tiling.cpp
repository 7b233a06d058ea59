#include "models/upscaler/upscale_tiling.h"

namespace ggdiff::models {

Status run_upscale_tiles(const HostTensor& in, HostTensor& out, int scale, int tile,
                         const TileFn& fn, float target_overlap) {
    if (scale < 1) return Status::Error("upscale tiling: scale must be at least 1");
    if (tile < 1) return Status::Error("upscale tiling: tile size must be at least 1");
    if (in.dim(0) < 1 || in.dim(1) < 1) return Status::Error("upscale tiling: empty image");
    TileOptions opt;
    opt.tile_w = opt.tile_h = tile;
    opt.overlap = target_overlap;
    return run_tiled(in, out, static_cast<float>(scale), opt, fn).with_context("upscale tiling");
}

}  // namespace ggdiff::models
