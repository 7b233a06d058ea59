// -M vid_gen through the CLI: output naming as sd-cli's (one frame -> an image, a printf
// pattern -> one image per frame, several frames -> one .avi/.webp per batch item), checks
// of -o before any weight is read, and the video files themselves (Qwen Image Layered stands
// in for a video model: its layers come out as the frames of each batch item).
#include <gtest/gtest.h>

#include <fstream>

#include "../golden/e2e_support.h"
#include "../golden/qwen_e2e.h"
#include "image/image_io.h"
#include "image/image_metadata.h"
#include "image/infotext.h"
#include "image/video_io.h"

namespace ggdiff::e2e {
namespace {

namespace fs = std::filesystem;

bool read_weights(const RunResult& r) {
    return contains(r.err + r.out, " weights, ");
}

std::vector<std::string> sd1_request() {
    return {"-M", "vid_gen", "-m", fixture_path(),      "-p",    "a red cube", "-W", "64", "-H",
            "64", "--steps", "1",  "--sampling-method", "euler", "-s",         "5"};
}

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::vector<std::string> files_in(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string n = e.path().filename().string();
        if (n.rfind("run", 0) != 0) names.push_back(n);  // not the logs
    }
    std::sort(names.begin(), names.end());
    return names;
}

Result<DecodedVideo> read_video(const std::string& path) {
    const std::string bytes = read_text(path);
    return decode_video(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

class VideoCli : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(fs::is_regular_file(binary_path()));
        ASSERT_TRUE(fs::is_regular_file(fixture_path()))
            << "run through ctest: the fixture tests make the fixtures";
        dir_ = fresh_dir();
    }
    RunResult run(const std::vector<std::string>& args, int timeout = 300) {
        return run_ggdiff(args, dir_, timeout);
    }
    std::string dir_;
};

// A model of one frame per item: -o clip.avi writes clip.png (sd-cli replaces a video
// extension by .png for a single image), with the parameters; .webp stays a still WebP.
TEST_F(VideoCli, OneFrameIsAnImage) {
    RunResult r = run(cat(sd1_request(), {"-o", dir_ + "/clip.avi"}));
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "saved " + dir_ + "/clip.png (seed 5)")) << r.describe();
    auto text = read_image_parameters(dir_ + "/clip.png");
    ASSERT_TRUE(text.ok()) << text.status().message();
    EXPECT_TRUE(contains(*text, "a red cube")) << *text;

    RunResult w = run(cat(sd1_request(), {"-o", dir_ + "/still.webp", "--disable-image-metadata"}));
    ASSERT_TRUE(w.succeeded()) << w.describe();
    auto img = read_image(dir_ + "/still.webp");
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, 64);
    const std::string bytes = read_text(dir_ + "/still.webp");
    auto none =
        decode_image_parameters(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value());
    EXPECT_EQ(files_in(dir_), (std::vector<std::string>{"clip.png", "still.webp"}));
}

// A frame pattern numbers the frames from 0 across the batch; %% is a literal '%'.
TEST_F(VideoCli, PatternWritesOneImagePerFrame) {
    RunResult r = run(cat(sd1_request(), {"-b", "2", "-o", dir_ + "/x_%03d.png"}));
    ASSERT_TRUE(r.succeeded()) << r.describe();
    RunResult p = run(cat(sd1_request(), {"-o", dir_ + "/p%%_%d.avi"}));
    ASSERT_TRUE(p.succeeded()) << p.describe();
    EXPECT_EQ(files_in(dir_), (std::vector<std::string>{"p%_0.png", "x_000.png", "x_001.png"}));
    auto t0 = read_image_parameters(dir_ + "/x_000.png");
    auto t1 = read_image_parameters(dir_ + "/x_001.png");
    ASSERT_TRUE(t0.ok() && t1.ok());
    EXPECT_TRUE(contains(*t0, "Seed: 5")) << *t0;
    EXPECT_TRUE(contains(*t1, "Seed: 6")) << *t1;
}

// Bad -o values fail before any weight is read and write nothing.
TEST_F(VideoCli, BadOutputsAreRefusedBeforeLoading) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"/y_%s.png", "'%s' is not a frame number"},
        {"/y_%d_%d.png", "more than one frame number"},
        {"/y_%5.png", "'%5.' is not a frame number"},
        {"/y.webm", "no WebM encoder"},
        {"/missing/y.avi", "missing"}};
    for (const auto& [name, message] : cases) {
        SCOPED_TRACE(name);
        RunResult r = run(cat(sd1_request(), {"-v", "-o", dir_ + name}));
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        EXPECT_TRUE(contains(r.err, message)) << r.describe();
        EXPECT_FALSE(read_weights(r)) << r.describe();
    }
    RunResult fps = run(cat(sd1_request(), {"--fps", "0", "-o", dir_ + "/z.avi"}));
    EXPECT_TRUE(fps.failed_cleanly()) << fps.describe();
    EXPECT_TRUE(contains(fps.err, "--fps")) << fps.describe();
    EXPECT_TRUE(files_in(dir_).empty());
}

// --control-video is a folder of frame images, checked before any weight is read; only Wan
// VACE models take it (and --vace-strength).
TEST_F(VideoCli, ControlVideoIsAFolderOfFramesForVaceModels) {
    const std::string frames = dir_ + "/frames";
    fs::create_directories(frames);
    auto fails = [&](const std::vector<std::string>& extra, const std::string& message,
                     bool before_weights) {
        SCOPED_TRACE(message);
        RunResult r = run(cat(sd1_request(), extra));
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        EXPECT_TRUE(contains(r.err, message)) << r.describe();
        if (before_weights) {
            EXPECT_FALSE(read_weights(r)) << r.describe();
        }
    };
    fails({"--control-video", dir_ + "/missing"}, "not a directory", true);
    fails({"--control-video", frames}, "no frame images", true);
    std::ofstream(frames + "/notes.txt") << "skipped";
    std::ofstream(frames + "/01.png") << "not a png";
    fails({"--control-video", frames}, "01.png", true);
    fs::copy_file(GGDIFF_SHARED_DIR "/golden/sd1_control/circle.png", frames + "/01.png",
                  fs::copy_options::overwrite_existing);
    fails({"--control-video", frames}, "--control-video is not supported for SD1", false);
    fails({"--vace-strength", "0.5"}, "--vace-strength applies to Wan VACE models only", false);
}

// Several frames per item: one video per batch item (NAME.avi, NAME_1.avi), at --fps, with the
// item's parameters; .webp gives an animated WebP; any other extension gets .avi added.
TEST_F(VideoCli, SeveralFramesMakeOneVideoPerItem) {
    if (!fs::is_regular_file(qwen_fixture("qwen_layered_tiny_dit"))) {
        GTEST_SKIP() << "the Qwen Image Layered fixture is made by ctest's fixture tests";
    }
    auto request = [&](const std::string& out, const std::vector<std::string>& more) {
        std::vector<std::string> a = qwen_model_args(true);
        a = cat(a, {"-M", "vid_gen", "-p", "a poster", "-W", "64", "-H", "64", "--steps", "1", "-s",
                    "7", "--qwen-image-layers", "2", "-o", dir_ + "/" + out});
        return cat(a, more);
    };
    RunResult r = run(request("clip.png", {"-b", "2", "--fps", "8"}), 600);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "saved " + dir_ + "/clip.avi (3 frames, 8 fps)")) << r.describe();
    EXPECT_TRUE(contains(r.err, "saved " + dir_ + "/clip_1.avi (3 frames, 8 fps)")) << r.describe();
    for (const char* name : {"clip.avi", "clip_1.avi"}) {
        SCOPED_TRACE(name);
        auto v = read_video(dir_ + "/" + name);
        ASSERT_TRUE(v.ok()) << v.status().message();
        EXPECT_EQ(v->frames.size(), 3u);
        EXPECT_EQ(v->fps, 8);
        EXPECT_EQ(v->width, 64);
        auto info = parse_infotext(v->parameters);
        ASSERT_TRUE(info.ok()) << v->parameters;
        EXPECT_EQ(info->seed, std::string(name) == "clip.avi" ? 7 : 8) << v->parameters;
    }

    RunResult w = run(request("anim.webp", {"--disable-image-metadata"}), 600);
    ASSERT_TRUE(w.succeeded()) << w.describe();
    auto v = read_video(dir_ + "/anim.webp");
    ASSERT_TRUE(v.ok()) << v.status().message();
    EXPECT_EQ(v->frames.size(), 3u);
    EXPECT_EQ(v->durations_ms[0], 63);  // 1000 / 16 fps, rounded
    EXPECT_EQ(v->parameters, "");

    RunResult m = run(request("movie.mp4", {}), 600);
    ASSERT_TRUE(m.succeeded()) << m.describe();
    EXPECT_TRUE(contains(m.err, "note:")) << m.describe();
    EXPECT_EQ(files_in(dir_),
              (std::vector<std::string>{"anim.webp", "clip.avi", "clip_1.avi", "movie.mp4.avi"}));
}

}  // namespace
}  // namespace ggdiff::e2e
