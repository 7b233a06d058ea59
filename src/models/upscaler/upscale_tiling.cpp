#include "models/upscaler/upscale_tiling.h"

#include <algorithm>
#include <string>

namespace ggdiff::models {

namespace {

float smootherstep(float t) {
    return t * t * t * (t * (6.0f * t - 15.0f) + 10.0f);
}

HostTensor crop(const HostTensor& in, int x0, int y0, int w, int h) {
    const int64_t iw = in.dim(0), ih = in.dim(1), planes = in.dim(2) * in.dim(3);
    HostTensor t({w, h, in.dim(2), in.dim(3)});
    for (int64_t p = 0; p < planes; ++p) {
        for (int y = 0; y < h; ++y) {
            const float* src = in.ptr() + p * iw * ih + (y0 + y) * iw + x0;
            std::copy(src, src + w, t.ptr() + (p * h + y) * w);
        }
    }
    return t;
}

// Adds `tile` (output pixels) at (x0, y0) of `out` with the feathered weights; the first
// skip_x columns and skip_y rows (shared with the previous tile beyond the planned overlap)
// are left out. Without any overlap the tile is copied.
void blend(const HostTensor& tile, HostTensor& out, int x0, int y0, int overlap_x, int overlap_y,
           int skip_x, int skip_y) {
    const int w = static_cast<int>(tile.dim(0)), h = static_cast<int>(tile.dim(1));
    const int64_t ow = out.dim(0), oh = out.dim(1), planes = out.dim(2) * out.dim(3);
    const bool feather = overlap_x > 0 || overlap_y > 0;
    for (int y = skip_y; y < h; ++y) {
        float wy = 1.0f;
        if (feather) {
            const float f0 = overlap_y > 0 && y0 > 0 ? (y - skip_y) / float(overlap_y) : 1.0f;
            const float f1 = overlap_y > 0 && y0 < oh - h ? (h - y) / float(overlap_y) : 1.0f;
            wy = smootherstep(std::min({f0, f1, 1.0f}));
        }
        for (int x = skip_x; x < w; ++x) {
            float wxy = 1.0f;
            if (feather) {
                const float f0 = overlap_x > 0 && x0 > 0 ? (x - skip_x) / float(overlap_x) : 1.0f;
                const float f1 = overlap_x > 0 && x0 < ow - w ? (w - x) / float(overlap_x) : 1.0f;
                wxy = wy * smootherstep(std::min({f0, f1, 1.0f}));
            }
            const int64_t dst = (y0 + y) * ow + x0 + x;
            const int64_t src = static_cast<int64_t>(y) * w + x;
            for (int64_t p = 0; p < planes; ++p) {
                float& o = out.data[p * ow * oh + dst];
                const float v = tile.data[p * w * h + src];
                o = feather ? o + v * wxy : v;
            }
        }
    }
}

}  // namespace

TileAxisPlan plan_tile_axis(int size, int tile, float target_overlap) {
    TileAxisPlan p;
    p.size = std::min(tile, size);
    const int overlap = static_cast<int>(tile * target_overlap);
    const int step = tile - overlap;
    int n = (size - overlap) / step;
    const int overshoot = ((n + 1) * step + overlap) % std::max(1, size);
    // One more tile when the tiles do not fit exactly and it keeps the overlap under half.
    if (overshoot != step && overshoot <= n * (tile / 2 - overlap)) ++n;
    float factor = 0.0f;
    if (n <= 2) {
        if (size <= tile) {
            n = 1;
        } else {
            n = 2;
            factor = (2 * tile - size) / static_cast<float>(tile);
        }
    } else {
        factor = static_cast<float>(tile * n - size) / static_cast<float>(tile * (n - 1));
    }
    p.count = n;
    p.overlap = std::max(0, static_cast<int>(tile * factor));
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
    const int width = static_cast<int>(in.dim(0)), height = static_cast<int>(in.dim(1));
    if (width < 1 || height < 1) return Status::Error("upscale tiling: empty image");
    const TileAxisPlan px = plan_tile_axis(width, tile, target_overlap);
    const TileAxisPlan py = plan_tile_axis(height, tile, target_overlap);
    const int step_x = std::max(1, px.size - px.overlap);
    const int step_y = std::max(1, py.size - py.overlap);

    out = HostTensor();
    HostTensor tile_out;
    for (int planned_y = 0; planned_y < height; planned_y += step_y) {
        const bool last_y = planned_y + py.size >= height;
        const int y = last_y ? height - py.size : planned_y;
        for (int planned_x = 0; planned_x < width; planned_x += step_x) {
            const bool last_x = planned_x + px.size >= width;
            const int x = last_x ? width - px.size : planned_x;
            GGDIFF_TRY(fn(crop(in, x, y, px.size, py.size), tile_out));
            if (tile_out.dim(0) != static_cast<int64_t>(px.size) * scale ||
                tile_out.dim(1) != static_cast<int64_t>(py.size) * scale ||
                tile_out.dim(3) != in.dim(3)) {
                return Status::Error("upscale tiling: a " + std::to_string(px.size) + "x" +
                                     std::to_string(py.size) + " tile came back as " +
                                     std::to_string(tile_out.dim(0)) + "x" +
                                     std::to_string(tile_out.dim(1)));
            }
            if (out.data.empty()) {
                out =
                    HostTensor({static_cast<int64_t>(width) * scale,
                                static_cast<int64_t>(height) * scale, tile_out.dim(2), in.dim(3)});
            } else if (tile_out.dim(2) != out.dim(2)) {
                return Status::Error("upscale tiling: tiles came back with different channels");
            }
            blend(tile_out, out, x * scale, y * scale, px.overlap * scale, py.overlap * scale,
                  (planned_x - x) * scale, (planned_y - y) * scale);
            if (last_x) break;
        }
        if (last_y) break;
    }
    return Status::Ok();
}

}  // namespace ggdiff::models
