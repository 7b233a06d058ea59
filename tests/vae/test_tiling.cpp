// Host-side tiling: tile layout, exact reproduction for per-pixel callbacks, errors, and
// a tiled tiny-VAE decode against the untiled one.
#include <gtest/gtest.h>

#include <cmath>

#include "models/vae/tiling.h"
#include "models/vae/vae.h"
#include "vae_test_support.h"

namespace {

using ggdiff::HostTensor;
using ggdiff::Status;
using ggdiff::models::AxisTiles;
using ggdiff::models::plan_tiles;
using ggdiff::models::run_tiled;
using ggdiff::models::TileOptions;

// Tile plans as the reference engine's sd_tiling_calc_tiles and process_tiles_2d make them
// (worked out by hand from its formulas).
TEST(Tiling, PlansAsTheReference) {
    auto starts = [](const AxisTiles& a) {
        std::vector<std::pair<int, int>> out;
        for (const auto& t : a.tiles) out.emplace_back(t.start, t.skip);
        return out;
    };
    using V = std::vector<std::pair<int, int>>;
    // LTX-2 at 192 pixels: 6 latent pixels in tiles of 4, half overlapping.
    AxisTiles a = plan_tiles(6, 4, 0.5f);
    EXPECT_EQ(a.tile, 4);
    EXPECT_EQ(a.overlap, 2);
    EXPECT_EQ(starts(a), (V{{0, 0}, {2, 0}}));
    // Smaller than a tile: one tile of the whole axis, no overlap.
    a = plan_tiles(2, 4, 0.5f);
    EXPECT_EQ(a.tile, 2);
    EXPECT_EQ(a.overlap, 0);
    EXPECT_EQ(starts(a), (V{{0, 0}}));
    // Four tiles fit 10 exactly at half overlap.
    a = plan_tiles(10, 4, 0.5f);
    EXPECT_EQ(a.overlap, 2);
    EXPECT_EQ(starts(a), (V{{0, 0}, {2, 0}, {4, 0}, {6, 0}}));
    // Two tiles over 7: the overlap settles at a quarter (1 unit).
    a = plan_tiles(7, 4, 0.5f);
    EXPECT_EQ(a.overlap, 1);
    EXPECT_EQ(starts(a), (V{{0, 0}, {3, 0}}));
    // 13 in tiles of 4: 0.4375 of a tile (1 unit), stride 3.
    a = plan_tiles(13, 4, 0.5f);
    EXPECT_EQ(a.overlap, 1);
    EXPECT_EQ(starts(a), (V{{0, 0}, {3, 0}, {6, 0}, {9, 0}}));
    // The last tile moved back to end at 9 leaves its first unit to the tile before it.
    a = plan_tiles(9, 4, 0.25f);
    EXPECT_EQ(a.overlap, 1);
    EXPECT_EQ(starts(a), (V{{0, 0}, {3, 0}, {5, 1}}));
    // No overlap asked, yet three tiles of 6 over 13 blend over 2 units, as the reference's do.
    a = plan_tiles(13, 6, 0.0f);
    EXPECT_EQ(a.overlap, 2);
    EXPECT_EQ(starts(a), (V{{0, 0}, {4, 0}, {7, 1}}));
}

// A decode-like callback: each input pixel becomes an 8x8 block of 3 channels computed
// from that pixel alone, so every tile sees exactly the values of an untiled pass.
Status upscale8(const HostTensor& in, HostTensor& out) {
    const int64_t w = in.dim(0), h = in.dim(1), c = in.dim(2), n = in.dim(3);
    out = HostTensor({w * 8, h * 8, 3, n});
    for (int64_t b = 0; b < n; ++b)
        for (int64_t oc = 0; oc < 3; ++oc)
            for (int64_t y = 0; y < h * 8; ++y)
                for (int64_t x = 0; x < w * 8; ++x) {
                    const float v = in.data[((b * c + oc % c) * h + y / 8) * w + x / 8];
                    out.data[((b * 3 + oc) * h * 8 + y) * w * 8 + x] =
                        std::tanh(v) * static_cast<float>(oc + 1) +
                        0.01f * static_cast<float>((x % 8) - (y % 8));
                }
    return Status::Ok();
}

// An encode-like callback: each 8x8 block becomes one pixel of 2 channels.
Status downscale8(const HostTensor& in, HostTensor& out) {
    const int64_t w = in.dim(0), h = in.dim(1), c = in.dim(2), n = in.dim(3);
    out = HostTensor({w / 8, h / 8, 2, n});
    for (int64_t b = 0; b < n; ++b)
        for (int64_t oc = 0; oc < 2; ++oc)
            for (int64_t y = 0; y < h / 8; ++y)
                for (int64_t x = 0; x < w / 8; ++x) {
                    float s = 0;
                    for (int64_t ic = 0; ic < c; ++ic)
                        for (int64_t dy = 0; dy < 8; ++dy)
                            for (int64_t dx = 0; dx < 8; ++dx)
                                s += in.data[((b * c + ic) * h + y * 8 + dy) * w + x * 8 + dx] *
                                     static_cast<float>(oc + 1 + ic);
                    out.data[((b * 2 + oc) * (h / 8) + y) * (w / 8) + x] = s;
                }
    return Status::Ok();
}

TEST(Tiling, DecodeLikeCallbackIsReproducedExactly) {
    const HostTensor in = vae_test::random_tensor({13, 9, 2, 2}, 21);
    HostTensor whole;
    ASSERT_TRUE(upscale8(in, whole).ok());
    for (const TileOptions& opt :
         {TileOptions{4, 4, 0.5f}, TileOptions{5, 3, 0.3f}, TileOptions{6, 9, 0.0f},
          TileOptions{2, 2, 0.75f}, TileOptions{32, 32, 0.5f}}) {
        SCOPED_TRACE(testing::Message() << opt.tile_w << "x" << opt.tile_h << " " << opt.overlap);
        int calls = 0;
        HostTensor out;
        Status st = run_tiled(in, out, 8.0f, opt, [&](const HostTensor& a, HostTensor& b) {
            ++calls;
            return upscale8(a, b);
        });
        ASSERT_TRUE(st.ok()) << st.message();
        ASSERT_EQ(out.ne, whole.ne);
        // The blend weights sum to 1 (up to float rounding) wherever tiles meet.
        for (size_t i = 0; i < whole.data.size(); ++i) {
            ASSERT_NEAR(out.data[i], whole.data[i], 1e-5) << i;
        }
        if (opt.tile_w < 13) {
            EXPECT_GT(calls, 1);
        }
    }
}

TEST(Tiling, EncodeLikeCallbackIsReproducedExactly) {
    const HostTensor in = vae_test::random_tensor({40, 24, 3, 2}, 22);
    HostTensor whole;
    ASSERT_TRUE(downscale8(in, whole).ok());
    for (const TileOptions& opt :
         {TileOptions{16, 16, 0.5f}, TileOptions{24, 8, 0.3f}, TileOptions{20, 12, 0.5f}}) {
        SCOPED_TRACE(testing::Message() << opt.tile_w << "x" << opt.tile_h << " " << opt.overlap);
        int calls = 0;
        HostTensor out;
        Status st = run_tiled(in, out, 1.0f / 8.0f, opt, [&](const HostTensor& a, HostTensor& b) {
            ++calls;
            EXPECT_EQ(a.dim(0) % 8, 0);
            EXPECT_EQ(a.dim(1) % 8, 0);
            return downscale8(a, b);
        });
        ASSERT_TRUE(st.ok()) << st.message();
        ASSERT_EQ(out.ne, whole.ne);
        for (size_t i = 0; i < whole.data.size(); ++i) {
            ASSERT_NEAR(out.data[i], whole.data[i], 1e-4 * (1.0 + std::fabs(whole.data[i]))) << i;
        }
        EXPECT_GT(calls, 1);
    }
}

// Blending as the reference's: across an overlap the tile ahead comes in as the smootherstep
// 6t^5 - 15t^4 + 10t^3 of the distance into the overlap and the tile behind goes out as its
// complement, from 0 at the first shared pixel; pixels of one tile only keep its value.
TEST(Tiling, OverlapBlendsWithSmootherstep) {
    const HostTensor in({16, 1, 1, 1}, 0.0f);
    int tile = 0;
    HostTensor out;
    TileOptions opt{8, 1, 0.5f};
    Status st = run_tiled(in, out, 1.0f, opt, [&](const HostTensor& a, HostTensor& b) {
        b = HostTensor(a.ne, static_cast<float>(tile++));
        return Status::Ok();
    });
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(tile, 3);  // starts 0, 4, 8
    auto smooth = [](float t) { return t * t * t * (t * (6 * t - 15) + 10); };
    for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(out.data[x], 0.0f);
    for (int x = 4; x < 8; ++x) EXPECT_NEAR(out.data[x], smooth((x - 4) / 4.0f), 1e-6);
    for (int x = 8; x < 12; ++x) {
        const float t = (x - 8) / 4.0f;
        EXPECT_NEAR(out.data[x], smooth(1.0f - t) + 2.0f * smooth(t), 1e-6);
    }
    for (int x = 12; x < 16; ++x) EXPECT_FLOAT_EQ(out.data[x], 2.0f);
    EXPECT_NEAR(out.data[6], 0.5f, 1e-6);  // half way: half of each
}

TEST(Tiling, Errors) {
    const HostTensor in = vae_test::random_tensor({16, 16, 4, 1}, 23);
    HostTensor out;
    // Wrong output size from the callback.
    Status st =
        run_tiled(in, out, 8.0f, TileOptions{8, 8, 0.5f}, [](const HostTensor& a, HostTensor& b) {
            b = HostTensor({a.dim(0) * 4, a.dim(1) * 4, 3, 1});
            return Status::Ok();
        });
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("tile output"), std::string::npos) << st.message();
    // A failing callback stops the run and says which tile.
    int calls = 0;
    st = run_tiled(in, out, 8.0f, TileOptions{8, 8, 0.5f}, [&](const HostTensor& a, HostTensor& b) {
        return ++calls == 2 ? Status::Error("boom") : upscale8(a, b);
    });
    EXPECT_FALSE(st.ok());
    EXPECT_EQ(calls, 2);
    EXPECT_NE(st.message().find("tile 2/9: boom"), std::string::npos) << st.message();
    // Encode input not a multiple of the scale; a scale that is neither n nor 1/n.
    const HostTensor odd = vae_test::random_tensor({20, 16, 3, 1}, 24);
    EXPECT_FALSE(run_tiled(odd, out, 0.125f, TileOptions{}, downscale8).ok());
    EXPECT_FALSE(run_tiled(in, out, 2.5f, TileOptions{}, upscale8).ok());
    EXPECT_FALSE(run_tiled(in, out, 8.0f, TileOptions{0, 8, 0.5f}, upscale8).ok());
}

// A tiled decode of the tiny VAE stays close to the untiled one. GroupNorm statistics
// and the mid attention are per tile, so it is not exact; on a spatially stationary
// latent the difference is a small fraction of the output's spread.
TEST(Tiling, TinyVaeDecodeTiledIsCloseToUntiled) {
    ggdiff::models::VaeConfig cfg;
    cfg.ch = 32;
    cfg.ch_mult = {1, 2, 2};
    cfg.num_res_blocks = 1;
    const std::string prefix = "first_stage_model.";
    const auto weights =
        vae_test::random_weights(ggdiff::models::vae_tensor_shapes(cfg, prefix), 31);
    const HostTensor z = vae_test::random_tensor({24, 16, 4, 1}, 32);
    auto decode = [&](const HostTensor& in, HostTensor& out) -> Status {
        auto r = vae_test::run_graph(
            weights, in, [&](ggml_tensor* x, ggml_context* ctx, ggdiff::nn::Weights* w) {
                ggdiff::nn::Ctx c{ctx, w};
                return ggdiff::models::build_vae_decode(c, cfg, x, prefix);
            });
        if (!r.ok()) return r.status();
        out = std::move(*r);
        return Status::Ok();
    };
    HostTensor whole, tiled;
    ASSERT_TRUE(decode(z, whole).ok());
    int calls = 0;
    Status st = run_tiled(z, tiled, 4.0f, TileOptions{12, 12, 0.5f},
                          [&](const HostTensor& a, HostTensor& b) {
                              ++calls;
                              return decode(a, b);
                          });
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(calls, 6);  // 3 x 2 tiles
    ASSERT_EQ(tiled.ne, whole.ne);

    // Same picture: strongly correlated with the untiled decode.
    double sw = 0, st2 = 0, sww = 0, stt = 0, swt = 0;
    const double n = static_cast<double>(whole.data.size());
    for (size_t i = 0; i < whole.data.size(); ++i) {
        const double a = whole.data[i], b = tiled.data[i];
        sw += a, st2 += b, sww += a * a, stt += b * b, swt += a * b;
    }
    const double corr =
        (swt - sw * st2 / n) / std::sqrt((sww - sw * sw / n) * (stt - st2 * st2 / n));
    EXPECT_GT(corr, 0.95);

    // No seams: along both axes, the mean absolute step between neighbouring columns
    // (rows) of the tiled output stays at the untiled output's level everywhere.
    const int64_t W = whole.dim(0), H = whole.dim(1), C = whole.dim(2);
    auto step = [&](const HostTensor& t, bool along_x, int64_t k) {
        double s = 0;
        const int64_t other = along_x ? H : W;
        for (int64_t c = 0; c < C; ++c)
            for (int64_t o = 0; o < other; ++o) {
                const int64_t i0 = along_x ? (c * H + o) * W + k : (c * H + k) * W + o;
                const int64_t i1 = along_x ? i0 + 1 : i0 + W;
                s += std::fabs(t.data[i1] - t.data[i0]);
            }
        return s;
    };
    for (bool along_x : {true, false}) {
        for (int64_t k = 0; k + 1 < (along_x ? W : H); ++k) {
            EXPECT_LT(step(tiled, along_x, k), 1.3 * step(whole, along_x, k))
                << (along_x ? "column " : "row ") << k;
        }
    }
}

}  // namespace
