// Shared by the ControlNet and inpainting end-to-end tests: the fixtures they use (the
// narrow sd1_mc32 checkpoint and its test ControlNet, the inpainting checkpoint of
// ../shared/golden/sd1_inpaint), a small request, and mask images made on the fly.
#pragma once

#include "../golden/e2e_support.h"

namespace ggdiff::e2e {

inline std::string control_net_path() {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/controlnet_sd1_mc32.safetensors";
}
inline std::string inpaint_model_path() {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/sd1_inpaint_mc32.safetensors";
}
inline std::string control_image_path() {
    return shared_dir() + "/golden/sd1_control/circle.png";
}
inline std::string init_image_path() {
    return shared_dir() + "/golden/sd1_inpaint/init.png";
}
inline std::string center_mask_path() {
    return shared_dir() + "/golden/sd1_inpaint/mask_center.png";
}

// 64x64, 3 euler steps, cfg 7, seed 42 (plus `extra`), written to dir/NAME.png.
inline std::vector<std::string> small_request(const std::vector<std::string>& model,
                                              const std::vector<std::string>& extra,
                                              const std::string& out) {
    std::vector<std::string> args = model;
    const std::vector<std::string> base = euler_request(3);
    args.insert(args.end(), base.begin(), base.end());
    args.insert(args.end(), {"-o", out});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

// A w x h grey mask: `value` inside [x0, x1) x [y0, y1), `outside` elsewhere.
inline std::string write_mask(const std::string& path, int w, int h, uint8_t outside, uint8_t value,
                              int x0 = 0, int y0 = 0, int x1 = 0, int y1 = 0) {
    Image m;
    m.width = w;
    m.height = h;
    m.channels = 1;
    m.pixels.assign(static_cast<size_t>(w) * h, outside);
    for (int y = y0; y < y1; ++y) {
        for (int x = x0; x < x1; ++x) m.pixels[static_cast<size_t>(y) * w + x] = value;
    }
    Status st = write_image(path, m);
    EXPECT_TRUE(st.ok()) << st.message();
    return path;
}

inline double image_diff(const std::string& a, const std::string& b) {
    const ImageDiff d = compare_images(a, b);
    EXPECT_TRUE(d.ok) << d.error;
    return d.ok ? d.mean_abs : -1.0;
}

// Mean absolute difference per channel inside / outside a rectangle of two images.
struct RegionDiff {
    double inside = 0, outside = 0;
};
inline RegionDiff region_diff(const std::string& a, const std::string& b, int x0, int y0, int x1,
                              int y1) {
    RegionDiff r;
    auto ia = read_image(a);
    auto ib = read_image(b);
    EXPECT_TRUE(ia.ok() && ib.ok());
    if (!ia.ok() || !ib.ok()) return r;
    const Image x = convert_channels(*ia, 3), y = convert_channels(*ib, 3);
    double si = 0, so = 0;
    size_t ni = 0, no = 0;
    for (int py = 0; py < x.height; ++py) {
        for (int px = 0; px < x.width; ++px) {
            const bool in = px >= x0 && px < x1 && py >= y0 && py < y1;
            for (int c = 0; c < 3; ++c) {
                const size_t i = (static_cast<size_t>(py) * x.width + px) * 3 + c;
                const double d = std::abs(int(x.pixels[i]) - int(y.pixels[i]));
                (in ? si : so) += d;
                (in ? ni : no)++;
            }
        }
    }
    r.inside = ni ? si / ni : 0;
    r.outside = no ? so / no : 0;
    return r;
}

}  // namespace ggdiff::e2e
