#include "models/vae/tiling.h"
#include "io/checkpoint_file.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace ggdiff::models {

namespace {

// Feathering weight of output position p (0-based) in a tile of length len whose first
// `lead` and last `trail` positions overlap a neighbour.
double feather(int64_t p, int64_t len, int64_t lead, int64_t trail) {
    double w = 1.0;
    if (lead > 0) w = std::min(w, (static_cast<double>(p) + 0.5) / static_cast<double>(lead));
    if (trail > 0) {
        w *= std::min(1.0, (static_cast<double>(len - p) - 0.5) / static_cast<double>(trail));
    }
    return w;
}

// Per-position weights of every tile along one axis, in output pixels.
std::vector<std::vector<double>> axis_weights(const std::vector<int>& starts, int tile,
                                              int64_t unit_out) {
    const size_t n = starts.size();
    const int64_t len = tile * unit_out;
    std::vector<std::vector<double>> w(n, std::vector<double>(static_cast<size_t>(len)));
    for (size_t k = 0; k < n; ++k) {
        const int64_t lead = k > 0 ? (starts[k - 1] + tile - starts[k]) * unit_out : 0;
        const int64_t trail = k + 1 < n ? (starts[k] + tile - starts[k + 1]) * unit_out : 0;
        for (int64_t p = 0; p < len; ++p)
            w[k][p] = feather(p, len, std::max<int64_t>(lead, 0), std::max<int64_t>(trail, 0));
    }
    return w;
}

}  // namespace

std::vector<int> tile_starts(int size, int tile, float overlap) {
    if (size <= tile || tile <= 0) return {0};
    const int stride = std::max(1, static_cast<int>(std::floor(tile * (1.0f - overlap))));
    const int span = size - tile;
    const int n = (span + stride - 1) / stride + 1;
    std::vector<int> starts(static_cast<size_t>(n));
    // Spread evenly: neighbours then overlap by at least the requested fraction.
    for (int k = 0; k < n; ++k) {
        starts[k] = static_cast<int>((static_cast<int64_t>(k) * span + (n - 1) / 2) / (n - 1));
    }
    return starts;
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
    const int tw = std::min(gw, std::max(1, static_cast<int>(opt.tile_w / unit_in)));
    const int th = std::min(gh, std::max(1, static_cast<int>(opt.tile_h / unit_in)));
    const std::vector<int> xs = tile_starts(gw, tw, opt.overlap);
    const std::vector<int> ys = tile_starts(gh, th, opt.overlap);

    const int64_t tin_w = tw * unit_in, tin_h = th * unit_in;
    const int64_t tout_w = tw * unit_out, tout_h = th * unit_out;
    const int64_t OW = gw * unit_out, OH = gh * unit_out;

    if (xs.size() == 1 && ys.size() == 1) {  // one tile: the untiled pass itself
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

    const auto wx = axis_weights(xs, tw, unit_out);
    const auto wy = axis_weights(ys, th, unit_out);

    std::vector<double> acc, wsum(static_cast<size_t>(OW * OH), 0.0);
    int64_t C_out = -1;
    HostTensor tile_in({tin_w, tin_h, C, N});
    HostTensor tile_out;
    const size_t n_tiles = xs.size() * ys.size();
    size_t done = 0;
    for (size_t ty = 0; ty < ys.size(); ++ty) {
        for (size_t tx = 0; tx < xs.size(); ++tx) {
            const int64_t x0 = xs[tx] * unit_in, y0 = ys[ty] * unit_in;
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
                acc.assign(static_cast<size_t>(OW * OH * C_out * N), 0.0);
            }
            // Accumulate weighted values and weights.
            const int64_t ox0 = xs[tx] * unit_out, oy0 = ys[ty] * unit_out;
            const std::vector<double>& wxs = wx[tx];
            const std::vector<double>& wys = wy[ty];
            for (int64_t y = 0; y < tout_h; ++y) {
                double* ws = wsum.data() + (oy0 + y) * OW + ox0;
                for (int64_t x = 0; x < tout_w; ++x) ws[x] += wys[y] * wxs[x];
            }
            for (int64_t nc = 0; nc < C_out * N; ++nc) {
                const float* src = tile_out.ptr() + nc * tout_w * tout_h;
                double* dst = acc.data() + nc * OW * OH;
                for (int64_t y = 0; y < tout_h; ++y) {
                    double* row = dst + (oy0 + y) * OW + ox0;
                    const float* srow = src + y * tout_w;
                    for (int64_t x = 0; x < tout_w; ++x) row[x] += wys[y] * wxs[x] * srow[x];
                }
            }
        }
    }

    out = HostTensor({OW, OH, C_out, N});
    for (int64_t nc = 0; nc < C_out * N; ++nc) {
        const double* src = acc.data() + nc * OW * OH;
        float* dst = out.ptr() + nc * OW * OH;
        for (int64_t i = 0; i < OW * OH; ++i) dst[i] = static_cast<float>(src[i] / wsum[i]);
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
