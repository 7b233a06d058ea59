// Canny edges as sd-cli's --canny makes them: a bright square on black gives a closed
// outline, a flat image gives nothing, the 3-pixel border stays black.
#include <gtest/gtest.h>

#include "image/canny.h"

namespace ggdiff {
namespace {

Image square(int size, int lo, int hi, uint8_t fg) {
    Image img;
    img.width = img.height = size;
    img.channels = 3;
    img.pixels.assign(static_cast<size_t>(size) * size * 3, 0);
    for (int y = lo; y < hi; ++y) {
        for (int x = lo; x < hi; ++x) {
            for (int c = 0; c < 3; ++c)
                img.pixels[(static_cast<size_t>(y) * size + x) * 3 + c] = fg;
        }
    }
    return img;
}

uint8_t at(const Image& img, int x, int y) {
    return img.pixels[(static_cast<size_t>(y) * img.width + x) * 3];
}

TEST(Canny, SquareGivesEdgesAroundIt) {
    const Image in = square(32, 10, 22, 255);
    const Image e = canny_edges(in);
    ASSERT_EQ(e.width, 32);
    ASSERT_EQ(e.height, 32);
    ASSERT_EQ(e.channels, 3);
    int near = 0;
    for (int y = 0; y < 32; ++y) {
        for (int x = 0; x < 32; ++x) {
            const size_t i = (static_cast<size_t>(y) * 32 + x) * 3;
            // Grey in all channels, black or white only.
            EXPECT_EQ(e.pixels[i], e.pixels[i + 1]);
            EXPECT_EQ(e.pixels[i], e.pixels[i + 2]);
            const uint8_t v = e.pixels[i];
            EXPECT_TRUE(v == 0 || v == 255) << int(v);
            // Edges lie within 3 pixels of the square's sides (the blur and the Sobel
            // kernel reach that far), never inside its flat middle or far outside it.
            const bool band = x >= 7 && x <= 24 && y >= 7 && y <= 24;
            const bool middle = x >= 13 && x <= 18 && y >= 13 && y <= 18;
            if (v == 255) {
                EXPECT_TRUE(band && !middle) << "edge at " << x << "," << y;
                near++;
            }
        }
    }
    EXPECT_GT(near, 24) << "too few edge pixels around the square";
    // Every middle row crosses an edge on either side of the square.
    for (int y = 13; y <= 18; ++y) {
        bool left = false, right = false;
        for (int x = 7; x <= 12; ++x) left = left || at(e, x, y) == 255;
        for (int x = 19; x <= 24; ++x) right = right || at(e, x, y) == 255;
        EXPECT_TRUE(left && right) << "row " << y;
    }
}

TEST(Canny, FlatImageKeepsTheReferenceQuirk) {
    // With no gradient anywhere the thresholds are 0 and every pixel counts as a strong
    // edge, as in sd-cli; only the 3-pixel border is black.
    const Image flat = square(16, 0, 0, 0);
    const Image e = canny_edges(flat);
    CannyOptions inv;
    inv.inverse = true;
    const Image w = canny_edges(flat, inv);
    for (int y = 0; y < 16; ++y) {
        for (int x = 0; x < 16; ++x) {
            const bool border = x < 3 || y < 3 || x > 13 || y > 13;
            EXPECT_EQ(at(e, x, y), border ? 0 : 255) << x << "," << y;
            EXPECT_EQ(at(w, x, y), border ? 255 : 0) << x << "," << y;
        }
    }
}

TEST(Canny, GreyInputIsAccepted) {
    Image g;
    g.width = g.height = 8;
    g.channels = 1;
    g.pixels.assign(64, 128);
    const Image e = canny_edges(g);
    EXPECT_EQ(e.channels, 3);
    EXPECT_EQ(e.pixels.size(), 8u * 8u * 3u);
}

}  // namespace
}  // namespace ggdiff
