#include "models/upscaler/upscale_tiling.h"

#include <algorithm>

namespace ggdiff::models {

TileAxisPlan plan_tile_axis(int size, int tile, float target_overlap) {
    const AxisTiles a = plan_tiles(size, tile, target_overlap);
    TileAxisPlan p;
    p.count = static_cast<int>(a.tiles.size());
    p.overlap = a.overlap;
    p.size = a.tile;
    return p;
}

std::vector<int> tile_axis_starts(int size, const TileAxisPlan& plan) {
    std::vector<int> starts;
    const int step = std::max(1, plan.size - plan.overlap);
    for (int s = 0; s < size; s += step) {
        if (s + plan.size >= size) {
            starts.push_back(size - plan.size);
            break;
        }
        starts.push_back(s);
    }
    return starts;
}

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
