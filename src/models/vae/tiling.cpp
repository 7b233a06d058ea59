#include "models/vae/tiling.h"
#include "io/checkpoint_file.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace ggdiff::models {

namespace {

// The overlap fraction the reference engine settles on along one axis of `small` units cut in
// tiles of `tile` units asked to overlap by `overlap` (its sd_tiling_calc_tiles, not wrapping):
// the tile count that fits best, then the overlap that count needs.
float settled_overlap(int small, int tile, float overlap) {
    const int tile_overlap = static_cast<int>(static_cast<float>(tile) * overlap);
    const int stride = tile - tile_overlap;
    int num = stride > 0 ? (small - tile_overlap) / stride : 1;
    const int overshoot = stride > 0 ? ((num + 1) * stride + tile_overlap) % small : 0;
    if (overshoot != stride && overshoot <= num * (tile / 2 - tile_overlap)) ++num;
    if (num <= 2) {
        if (small <= tile) return 0.0f;
        return static_cast<float>(2 * tile - small) / static_cast<float>(tile);
    }
    return static_cast<float>(tile * num - small) / static_cast<float>(tile * (num - 1));
}

float smootherstep(float x) {
    return x * x * x * (x * (6.0f * x - 15.0f) + 10.0f);
}

// Per output position of each tile along one axis: its blend weight, or -1 where the tile
// does not write (the part of the last tile that the one before it already covers).
std::vector<std::vector<float>> axis_weights(const AxisTiles& a, int64_t unit_out, int small) {
    const int64_t len = a.tile * unit_out, ramp = a.overlap * unit_out, img = small * unit_out;
    std::vector<std::vector<float>> w(a.tiles.size(), std::vector<float>(static_cast<size_t>(len)));
    for (size_t k = 0; k < a.tiles.size(); ++k) {
        const int64_t origin = a.tiles[k].start * unit_out, skip = a.tiles[k].skip * unit_out;
        for (int64_t p = 0; p < len; ++p) {
            if (p < skip) {
                w[k][static_cast<size_t>(p)] = -1.0f;
                continue;
            }
            const float lead = ramp > 0 && origin > 0
                                   ? static_cast<float>(p - skip) / static_cast<float>(ramp)
                                   : 1.0f;
            const float trail = ramp > 0 && origin < img - len
                                    ? static_cast<float>(len - p) / static_cast<float>(ramp)
                                    : 1.0f;
            w[k][static_cast<size_t>(p)] = smootherstep(std::min(std::min(lead, trail), 1.0f));
        }
    }
    return w;
}

}  // namespace

AxisTiles plan_tiles(int size, int tile, float overlap) {
    AxisTiles a;
    if (size <= 0 || tile <= 0) return a;
    a.overlap = static_cast<int>(static_cast<float>(tile) * settled_overlap(size, tile, overlap));
    const int stride = std::max(1, tile - a.overlap);
    a.tile = std::min(tile, size);
    for (int x = 0; x < size; x += stride) {
        if (x + a.tile >= size) {
            a.tiles.push_back({size - a.tile, x - (size - a.tile)});
            break;
        }
        a.tiles.push_back({x, 0});
    }
    return a;
}

Status run_tiled(const HostTensor& in, HostTensor& out, float scale, const TileOptions& opt,
                 const TileFn& fn) {
    if (in.ne.empty() || in.ne.size() > 4 || in.numel() != HostTensor::count(in.ne)) {
        return Status::Error("tiling: input must be a [W, H, C, N] tensor, got " +
                             shape_string(in.ne));
    }
    if (!(scale > 0.0f) || !std::isfinite(scale)) {
        return Status::Error("tiling: scale must be positive");
    }
    if (opt.tile_w <= 0 || opt.tile_h <= 0 || !(opt.overlap >= 0.0f && opt.overlap <= 0.9f)) {
        return Status::Error("tiling: tile size must be positive and overlap within [0, 0.9]");
    }
    // Work on a grid of `unit_in` input pixels <-> `unit_out` output pixels.
    int64_t unit_in = 1, unit_out = 1;
    if (scale >= 1.0f) {
        unit_out = std::lround(scale);
        if (std::fabs(static_cast<float>(unit_out) - scale) > 1e-4f) {
            return Status::Error("tiling: scale must be an integer or the inverse of one");
        }
    } else {
        unit_in = std::lround(1.0f / scale);
        if (std::fabs(static_cast<float>(unit_in) * scale - 1.0f) > 1e-4f) {
            return Status::Error("tiling: scale must be an integer or the inverse of one");
        }
    }
    const int64_t W = in.dim(0), H = in.dim(1), C = in.dim(2), N = in.dim(3);
    if (W % unit_in != 0 || H % unit_in != 0) {
        return Status::Error("tiling: input size " + std::to_string(W) + "x" + std::to_string(H) +
                             " is not a multiple of " + std::to_string(unit_in));
    }
    const int gw = static_cast<int>(W / unit_in), gh = static_cast<int>(H / unit_in);
    auto asked = [&](int size, int tile) {
        return std::max(std::min(std::max(1, static_cast<int>(tile / unit_in)), size),
                        std::max(1, opt.min_tile));
    };
    const AxisTiles ax = plan_tiles(gw, asked(gw, opt.tile_w), opt.overlap);
    const AxisTiles ay = plan_tiles(gh, asked(gh, opt.tile_h), opt.overlap);
    const int tw = ax.tile, th = ay.tile;

    const int64_t tin_w = tw * unit_in, tin_h = th * unit_in;
    const int64_t tout_w = tw * unit_out, tout_h = th * unit_out;
    const int64_t OW = gw * unit_out, OH = gh * unit_out;

    if (ax.tiles.size() == 1 && ay.tiles.size() == 1) {  // one tile: the untiled pass itself
        HostTensor tile_out;
        GGDIFF_TRY(fn(in, tile_out).with_context("tile 1/1"));
        if (tile_out.dim(0) != OW || tile_out.dim(1) != OH || tile_out.dim(3) != N) {
            return Status::Error("tiling: tile output has shape " + shape_string(tile_out.ne) +
                                 ", expected [" + std::to_string(OW) + ", " + std::to_string(OH) +
                                 ", C, " + std::to_string(N) + "]");
        }
        out = std::move(tile_out);
        return Status::Ok();
    }

    const auto wx = axis_weights(ax, unit_out, gw);
    const auto wy = axis_weights(ay, unit_out, gh);

    int64_t C_out = -1;
    HostTensor tile_in({tin_w, tin_h, C, N});
    HostTensor tile_out;
    const size_t n_tiles = ax.tiles.size() * ay.tiles.size();
    size_t done = 0;
    for (size_t ty = 0; ty < ay.tiles.size(); ++ty) {
        for (size_t tx = 0; tx < ax.tiles.size(); ++tx) {
            const int64_t x0 = ax.tiles[tx].start * unit_in, y0 = ay.tiles[ty].start * unit_in;
            // Gather the input tile.
            for (int64_t nc = 0; nc < C * N; ++nc) {
                const float* src = in.ptr() + nc * W * H;
                float* dst = tile_in.ptr() + nc * tin_w * tin_h;
                for (int64_t y = 0; y < tin_h; ++y) {
                    std::copy_n(src + (y0 + y) * W + x0, tin_w, dst + y * tin_w);
                }
            }
            tile_out = HostTensor();
            ++done;
            GGDIFF_TRY(
                fn(tile_in, tile_out)
                    .with_context("tile " + std::to_string(done) + "/" + std::to_string(n_tiles)));
            if (tile_out.dim(0) != tout_w || tile_out.dim(1) != tout_h || tile_out.dim(3) != N ||
                tile_out.numel() != HostTensor::count(tile_out.ne) ||
                (C_out >= 0 && tile_out.dim(2) != C_out)) {
                return Status::Error("tiling: tile output has shape " + shape_string(tile_out.ne) +
                                     ", expected [" + std::to_string(tout_w) + ", " +
                                     std::to_string(tout_h) + ", " +
                                     (C_out >= 0 ? std::to_string(C_out) : std::string("C")) +
                                     ", " + std::to_string(N) + "]");
            }
            if (C_out < 0) {
                C_out = tile_out.dim(2);
                out = HostTensor({OW, OH, C_out, N});  // zeros
            }
            // Added with the weights of both axes (they sum to 1 across the overlaps).
            const int64_t ox0 = ax.tiles[tx].start * unit_out, oy0 = ay.tiles[ty].start * unit_out;
            const std::vector<float>& wxs = wx[tx];
            const std::vector<float>& wys = wy[ty];
            for (int64_t nc = 0; nc < C_out * N; ++nc) {
                const float* src = tile_out.ptr() + nc * tout_w * tout_h;
                float* dst = out.ptr() + nc * OW * OH;
                for (int64_t y = 0; y < tout_h; ++y) {
                    const float fy = wys[static_cast<size_t>(y)];
                    if (fy < 0.0f) continue;
                    float* row = dst + (oy0 + y) * OW + ox0;
                    const float* srow = src + y * tout_w;
                    for (int64_t x = 0; x < tout_w; ++x) {
                        const float fx = wxs[static_cast<size_t>(x)];
                        if (fx >= 0.0f) row[x] += srow[x] * fy * fx;
                    }
                }
            }
        }
    }
    return Status::Ok();
}

Status run_tiled_video(const HostTensor& in, HostTensor& out, float scale, const TileOptions& opt,
                       const TileFn& fn) {
    const int64_t channels = in.dim(2), frames_in = in.dim(3);
    HostTensor flat = in;
    flat.ne = {in.dim(0), in.dim(1), channels * frames_in, 1};
    int64_t frames = 0;
    GGDIFF_TRY(
        run_tiled(flat, out, scale, opt, [&](const HostTensor& tile, HostTensor& got) -> Status {
            HostTensor video = tile;
            video.ne = {tile.dim(0), tile.dim(1), channels, frames_in};
            GGDIFF_TRY(fn(video, got));
            frames = got.dim(3);
            got.ne = {got.dim(0), got.dim(1), got.dim(2) * frames, 1};
            return Status::Ok();
        }));
    out.ne = {out.dim(0), out.dim(1), out.dim(2) / frames, frames};
    return Status::Ok();
}

}  // namespace ggdiff::models
