// Twins over two ggdiff-rpc workers (TESTING.md, "Twin") for LTX-2.3 on its tiny recipe parts
// (tests/fixtures/ltx_recipe_*.tensors: a 2-block audio-video DiT, embeddings connectors, a
// 7-layer Gemma 3, video and audio VAEs; see tests/cli/ltx_e2e_test.cpp): a 9-frame 64x64 video
// with its sound track. The DiT's transformer_blocks split by layers over RPC0 and RPC1, alone
// or with Gemma 3's layers, a batch of two on data-parallel replicas (all=RPC0|RPC1), --auto-fit
// under budgets that hold the DiT only when it is split, and the DiT cut in segments under a
// --max-vram budget give the frames (and the sound) of the one-device run.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "../golden/e2e_support.h"
#include "image/wav.h"
#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;
using namespace ggdiff::twin;

constexpr int kFrames = 9;
constexpr int kBlocks = 2;     // the DiT's transformer_blocks
constexpr int kLlmBlocks = 7;  // Gemma 3's layers
constexpr double kSameImage = 0.5;
constexpr double kSameSound = 1e-3;  // mean absolute difference of the samples (in [-1, 1])
constexpr double kGiB = double(1ull << 30);

std::string part(const std::string& name) {
    return e2e::built_fixture("ltx_recipe_" + name);
}

// Frame i of a video written with -o DIR/f_%02d.png (batch item k's frames follow item k-1's).
std::string frame(const std::string& dir, int i) {
    char name[32];
    std::snprintf(name, sizeof name, "/f_%02d.png", i);
    return dir + name;
}

ggdiff::AudioTrack read_sound(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes(std::istreambuf_iterator<char>(in), {});
    auto track = ggdiff::decode_wav(bytes.data(), bytes.size());
    EXPECT_TRUE(track.ok()) << path << ": " << track.status().message();
    return track.ok() ? *track : ggdiff::AudioTrack{};
}

class LtxTwin : public TwoWorkers {
  protected:
    void SetUp() override {
        for (const std::string& f : model_files()) {
            ASSERT_TRUE(fs::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        TwoWorkers::SetUp();
    }

    static std::vector<std::string> model_files() {
        return {part("dit"),       part("connectors"),
                part("llm"),       part("vae"),
                part("audio_vae"), e2e::repo_suite_dir("pid_tiny") + "/gemma2_tokenizer.json"};
    }
    static std::vector<std::string> model_args() {
        const std::vector<std::string> f = model_files();
        return {"--diffusion-model",
                f[0],
                "--embeddings-connectors",
                f[1],
                "--llm",
                f[2],
                "--vae",
                f[3],
                "--audio-vae",
                f[4],
                "--llm-tokenizer",
                f[5]};
    }
    static std::vector<std::string> case_args() {
        return {"-p",
                "a red cat",
                "-W",
                "64",
                "-H",
                "64",
                "--steps",
                "2",
                "-s",
                "42",
                "--video-frames",
                std::to_string(kFrames),
                "--fps",
                "16",
                "-t",
                "1"};
    }

    // The request with `extra` after it, on both workers, logging its placement (-v).
    std::vector<std::string> request(const std::vector<std::string>& extra,
                                     const std::string& mode = "vid_gen") const {
        std::vector<std::string> args = {"-M", mode};
        for (const std::string& a : model_args()) args.push_back(a);
        for (const std::string& a : case_args()) args.push_back(a);
        args.insert(args.end(), {"--rpc-servers", servers(), "-v"});
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    }

    // The video's frames as PNG files in `out_dir` (f_00.png, ...) and its sound (f_00.wav).
    RunResult generate(const std::vector<std::string>& extra, const std::string& out_dir) const {
        fs::create_directories(out_dir);
        std::vector<std::string> args = request(extra);
        args.insert(args.end(), {"-o", out_dir + "/f_%02d.png"});
        return e2e::run_ggdiff(args, out_dir, 600);
    }

    // The frames of the request under `extra` (everything on RPC0 for the reference), made once
    // per build of the binaries: the folder that holds them ("" when making them failed).
    std::string cached_video(const std::vector<std::string>& extra) const {
        std::string key =
            join(extra, " ") + "|" + join(model_args(), " ") + "|" + join(case_args(), " ");
        for (const std::string& f : model_files()) key += "|" + file_stamp(f);
        std::string folder = cache_path("ltx_references", key);
        folder.resize(folder.size() - 4);  // a folder, not the .png cache_path names
        if (fs::is_regular_file(folder + "/done")) return folder;
        const std::string tmp = folder + ".tmp" + std::to_string(getpid());
        const RunResult r = generate(extra, tmp);
        if (!r.succeeded() || !fs::is_regular_file(frame(tmp, kFrames - 1))) {
            ADD_FAILURE() << "the single-device reference failed\n" << r.describe();
            return "";
        }
        std::ofstream(tmp + "/done") << "ok\n";
        std::error_code ec;
        fs::rename(tmp, folder, ec);  // parallel tests may race to make it: either copy will do
        if (ec) fs::remove_all(tmp);
        return folder;
    }
    std::string single_device() const { return cached_video({"--backend", "all=RPC0"}); }

    // Frames first, middle and last of item `item` in `out_dir` are those of `reference`, and
    // the item's sound is that of the reference.
    static void expect_same_video(const RunResult& r, const std::string& out_dir,
                                  const std::string& reference, const char* what, int item = 0) {
        ASSERT_TRUE(r.succeeded()) << r.describe();
        ASSERT_FALSE(reference.empty());
        for (int i : {0, kFrames / 2, kFrames - 1}) {
            expect_same_image(r, frame(out_dir, item * kFrames + i), frame(reference, i),
                              kSameImage, what);
        }
        const std::string wav = frame(out_dir, item * kFrames);
        const ggdiff::AudioTrack got = read_sound(wav.substr(0, wav.size() - 4) + ".wav");
        const ggdiff::AudioTrack want =
            read_sound(frame(reference, 0).substr(0, frame(reference, 0).size() - 4) + ".wav");
        ASSERT_FALSE(want.empty());
        ASSERT_EQ(got.samples.size(), want.samples.size()) << what;
        double diff = 0;
        for (size_t i = 0; i < got.samples.size(); ++i) {
            diff += std::fabs(double(got.samples[i]) - double(want.samples[i]));
        }
        diff /= double(got.samples.size());
        EXPECT_LE(diff, kSameSound) << what << ": the sound differs from the one-device sound";
        std::printf("%s: sound mean_abs_diff %.6f\n", what, diff);
    }

    // The twin of `extra`: its frames and sound are the one-device run's.
    RunResult twin(const std::vector<std::string>& extra, const char* what) {
        const std::string reference = single_device();
        const std::string out = dir_ + "/twin";
        RunResult r = generate(extra, out);
        expect_same_video(r, out, reference, what);
        return r;
    }

    // The --auto-fit --fit-dry-run plan of the request with `extra` (JSON on stdout). It runs
    // under -M img_gen: -M vid_gen does not take --fit-dry-run yet (it plans, then generates).
    nlohmann::json dry_run(const std::vector<std::string>& extra) const {
        std::vector<std::string> args = request({"--auto-fit", "--fit-dry-run"}, "img_gen");
        args.erase(std::find(args.begin(), args.end(), "-v"));
        args.insert(args.end(), extra.begin(), extra.end());
        RunResult r = e2e::run_ggdiff(args, dir_ + "/dry", 300);
        EXPECT_TRUE(r.succeeded()) << r.describe();
        const nlohmann::json plan = nlohmann::json::parse(r.out, nullptr, false);
        if (plan.is_discarded()) {
            ADD_FAILURE() << "--fit-dry-run did not print JSON\n" << r.describe();
            return nlohmann::json::object();
        }
        return plan;
    }
    static nlohmann::json component(const nlohmann::json& plan, const std::string& module) {
        for (const auto& c : plan.value("components", nlohmann::json::array())) {
            if (c.value("module", "") == module) return c;
        }
        return nlohmann::json::object();
    }
};

// The DiT's 2 blocks over RPC0 and RPC1: its embedders and first share on RPC0 (the shares of
// this tiny DiT leave RPC0 no block), the blocks on RPC1; the graph crosses the devices.
TEST_F(LtxTwin, DitLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1", "--split-mode", "diffusion=layer"},
             "DiT layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    EXPECT_GE(max_splits(log, "DiT"), 2) << "the DiT ran on one device only\n" << log;
}

// The DiT and Gemma 3 split by layers together: both graphs cross the devices.
TEST_F(LtxTwin, DitAndLlmLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1,te=RPC0&RPC1"}, "DiT and LLM layer split");
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kBlocks, /*first_may_be_empty=*/true);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kLlmBlocks);
    EXPECT_GE(max_splits(log, "DiT"), 2) << "the DiT ran on one device only\n" << log;
    EXPECT_GE(max_splits(log, "Gemma 3"), 2) << "Gemma 3 ran on one device only\n" << log;
}

// A batch of two videos on two replicas: item 0 on RPC0 is the one-device video, item 1 on
// RPC1 the one-device video of the next seed (its frames follow item 0's).
TEST_F(LtxTwin, BatchOnTwoDataParallelReplicas) {
    const std::string out = dir_ + "/dp";
    RunResult r = generate({"-b", "2", "--backend", "all=RPC0|RPC1"}, out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(log_of(r), "data parallel: 2 replicas (RPC0, RPC1)")) << log_of(r);
    expect_same_video(r, out, single_device(), "data parallel item 0");
    const std::string next = cached_video({"--backend", "all=RPC0", "-s", "43"});
    expect_same_video(r, out, next, "data parallel item 1", 1);
    EXPECT_FALSE(fs::exists(frame(out, 2 * kFrames))) << "more than two videos";
    EXPECT_GT(e2e::compare_images(frame(out, 0), frame(out, kFrames)).mean_abs, 3.0)
        << "both replicas made the same video";
}

// --auto-fit under --max-vram budgets that hold the DiT only when it is split over both
// workers (each its reserve plus 70% of the DiT's weights; the other modules take the room the
// DiT leaves): the plan splits the DiT, and the video is the one-device one.
TEST_F(LtxTwin, AutoFitSplitsTheDit) {
    const nlohmann::json sizes = dry_run({"--backend", "all=RPC0"});
    const nlohmann::json dit = component(sizes, "diffusion");
    ASSERT_TRUE(dit.contains("params_bytes")) << sizes.dump(1);
    EXPECT_TRUE(dit.value("splittable", false)) << sizes.dump(1);
    EXPECT_TRUE(component(sizes, "te").value("splittable", false)) << sizes.dump(1);
    const double params = dit["params_bytes"].get<double>();
    const double reserve = dit["reserve_bytes"].get<double>();
    char buf[128];
    std::snprintf(buf, sizeof(buf), "RPC0=%.9f,RPC1=%.9f", (reserve + 0.7 * params) / kGiB,
                  (reserve + 0.7 * params) / kGiB);
    const std::string budgets = buf;
    const nlohmann::json plan = dry_run({"--max-vram", budgets});
    SCOPED_TRACE(plan.dump(1));
    const nlohmann::json d = component(plan, "diffusion");
    EXPECT_TRUE(d.value("split", false));
    EXPECT_EQ(d.value("targets", nlohmann::json::array()).size(), 2u);

    RunResult r = twin({"--auto-fit", "--max-vram", budgets}, "--auto-fit");
    EXPECT_EQ(split_ranges(log_of(r), "diffusion").size(), 2u) << log_of(r);
}

// A --max-vram budget on RPC0 0.1 MiB short of the DiT's weights (the dry run's sizes): its two
// 0.2 MiB blocks run as segments uploaded in turn, and the video is that of the same placement
// without a budget (Gemma 3 and the VAEs on the CPU). (--stream-layers, which keeps two segments
// resident, needs room for both blocks here: two segments are the whole DiT.)
TEST_F(LtxTwin, MaxVramCutsTheDitInSegments) {
    const std::vector<std::string> placement = {"--backend", "all=RPC0,te=CPU,vae=CPU"};
    const nlohmann::json dit = component(dry_run({"--backend", "all=RPC0,te=CPU"}), "diffusion");
    ASSERT_TRUE(dit.contains("params_bytes")) << dit;
    const std::string whole = cached_video(placement);
    const std::string budget =
        vram_budget("RPC0", dit, dit["params_bytes"].get<double>() - 0.1 * (1 << 20));
    std::vector<std::string> extra = placement;
    extra.insert(extra.end(), {"--max-vram", budget});
    const std::string out = dir_ + "/cut";
    RunResult r = generate(extra, out);
    expect_same_video(r, out, whole, "--max-vram cutting");
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "diffusion: 2 segments, cut (")) << log;
    expect_segments(log, "diffusion", kBlocks, 2);
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
    // The CPU placement's frames are the one-device frames as well (its sound is not: the
    // in-process CPU audio VAE computes with other kernels than the worker's, 0.02 apart).
    const std::string reference = single_device();
    for (int i : {0, kFrames / 2, kFrames - 1}) {
        expect_same_image(r, frame(whole, i), frame(reference, i), kSameImage,
                          "LLM and VAEs on the CPU");
    }
}

}  // namespace
