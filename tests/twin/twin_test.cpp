// Twin tests: the same request on one device and under a placement (layer split, params
// on the CPU or on disk, row split falling back, auto-fit) must give the same image, and
// the log must show where each range of blocks ran. Two ggdiff-rpc workers on free
// loopback ports stand in for two GPUs (TESTING.md, "Multi-device without a GPU"); they
// are started for every test and always stopped.
//
// Every twin runs the other modules on RPC0 as well ("all=RPC0,..."), so the only
// difference from the single-device reference (`--backend RPC0`) is the placement under
// test: the images are expected to be identical, and must be within the golden tolerance.
//
// The reference image is made once per build of the binaries and cached under
// GGDIFF_TEST_TMP (keyed by the binaries, the fixture and the arguments), because under
// ctest every test runs in its own process.
#include <gtest/gtest.h>

#include <functional>
#include <regex>

#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
using ggdiff::e2e::contains;
using ggdiff::e2e::RunResult;
using namespace ggdiff::twin;

// SD1: 25 UNet blocks (12 input, 1 middle, 12 output), 12 CLIP text layers.
constexpr int kUnetBlocks = 25;
constexpr int kClipLayers = 12;
constexpr uint64_t kGiB = 1ull << 30;

// The arguments of the golden case `euler` of ../shared/golden/sd1_mc32 (64x64, 4 steps).
std::vector<std::string> request_args() {
    static const std::vector<std::string> args = [] {
        std::vector<std::string> out;
        const nlohmann::json m = ggdiff::e2e::load_manifest();
        for (const auto& c : m.value("cases", nlohmann::json::array())) {
            if (c.value("id", "") == "euler") out = c.value("args", std::vector<std::string>{});
        }
        return out;
    }();
    return args;
}

class Twin : public TwoWorkers {
  protected:
    void SetUp() override {
        ASSERT_TRUE(ggdiff::e2e::prerequisites_ok());
        ASSERT_FALSE(request_args().empty())
            << "no case `euler` in " << ggdiff::e2e::manifest_path();
        TwoWorkers::SetUp();
    }

    // ggdiff with the fixture, the golden request, both workers, -v, `extra` and -o OUT.
    RunResult generate(const std::vector<std::string>& extra, const std::string& out,
                       const std::string& log_dir) const {
        std::vector<std::string> args = ggdiff::e2e::model_args();
        for (const std::string& a : request_args()) args.push_back(a);
        args.insert(args.end(), {"--rpc-servers", servers(), "-v"});
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return ggdiff::e2e::run_ggdiff(args, log_dir, 300);
    }

    // A single-device image for `extra`, made once per build of the binaries.
    std::string reference(const std::vector<std::string>& extra) const {
        const std::string key = join(extra, " ") + "|" + join(request_args(), " ") + "|" +
                                file_stamp(ggdiff::e2e::fixture_path());
        return cached_image("references", key, [&](const std::string& path) {
            return generate(extra, path, dir_ + "/reference");
        });
    }

    // The single-device reference of every twin: everything on RPC0.
    std::string single_device() const { return reference({"--backend", "RPC0"}); }
    // The same with the VAE decoding on the CPU (for runs that keep RPC0's budget for the
    // module under test).
    std::string vae_on_cpu() const { return reference({"--backend", "all=RPC0,vae=CPU"}); }

    // Runs the placement `extra`, checks it succeeded, and that its image matches
    // `reference_path` within the golden tolerance. Returns the run (log in out/err).
    RunResult twin(const std::vector<std::string>& extra, const std::string& reference_path) {
        const std::string out = dir_ + "/twin.png";
        RunResult r = generate(extra, out, dir_);
        expect_same_image(r, out, reference_path, ggdiff::e2e::manifest_tolerance());
        return r;
    }
};

TEST_F(Twin, SingleDeviceMatchesGolden) {
    const std::string ref = single_device();
    ASSERT_FALSE(ref.empty());
    const auto d = ggdiff::e2e::compare_images(ref, ggdiff::e2e::golden_dir() + "/euler.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, ggdiff::e2e::manifest_tolerance()) << "max " << d.max_abs;
}

TEST_F(Twin, DiffusionLayerSplit) {
    RunResult r = twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1"}, single_device());
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kUnetBlocks);
    EXPECT_TRUE(split_ranges(log, "te").empty()) << log;
    EXPECT_GE(max_splits(log, "UNet"), 2) << "the UNet graph ran on one device only\n" << log;
}

TEST_F(Twin, TextEncoderLayerSplit) {
    RunResult r = twin({"--backend", "all=RPC0,te=RPC0&RPC1"}, single_device());
    const std::string log = log_of(r);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kClipLayers);
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
    EXPECT_GE(max_splits(log, "text encoder"), 2) << log;
}

TEST_F(Twin, TextEncoderAndDiffusionLayerSplit) {
    RunResult r = twin({"--backend", "te=RPC0&RPC1,diffusion=RPC0&RPC1,vae=RPC0"}, single_device());
    const std::string log = log_of(r);
    expect_ranges(log, "te", {"RPC0", "RPC1"}, kClipLayers);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kUnetBlocks);
}

TEST_F(Twin, ParamsOnCpuWithLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1", "--params-backend", "diffusion=cpu"},
             single_device());
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kUnetBlocks);
    EXPECT_EQ(weights_on(log, "UNet"), "params device (staged per phase)") << log;
}

TEST_F(Twin, ParamsOnCpuSingleDevice) {
    RunResult r = twin({"--backend", "RPC0", "--params-backend", "diffusion=cpu"}, single_device());
    const std::string log = log_of(r);
    EXPECT_EQ(weights_on(log, "UNet"), "params device (staged per phase)") << log;
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
}

// The weights on a device that computes nothing for the module (once an abort in ggml:
// "pre-allocated tensor in a buffer that cannot run the operation").
TEST_F(Twin, ParamsOnAnotherDevice) {
    RunResult r =
        twin({"--backend", "RPC0", "--params-backend", "diffusion=RPC1"}, single_device());
    EXPECT_EQ(weights_on(log_of(r), "UNet"), "params device (staged per phase)") << log_of(r);
}

TEST_F(Twin, ParamsFromDiskWithLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1", "--params-backend", "diffusion=disk"},
             single_device());
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kUnetBlocks);
    EXPECT_EQ(weights_on(log, "UNet"), "disk (per phase)") << log;
}

TEST_F(Twin, RowSplitFallsBackToLayerSplit) {
    RunResult r =
        twin({"--backend", "all=RPC0,diffusion=RPC0&RPC1", "--split-mode", "row"}, single_device());
    const std::string log = log_of(r);
    // RPC devices have no split buffer type: the log says so and uses the layer split.
    EXPECT_TRUE(contains(log, "diffusion: row split is not possible")) << log;
    EXPECT_TRUE(contains(log, "no split buffer type")) << log;
    EXPECT_TRUE(contains(log, "using layer split")) << log;
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kUnetBlocks);
}

TEST_F(Twin, CpuInDeviceListFallsBackToFirstDevice) {
    RunResult r = twin({"--backend", "all=RPC0,diffusion=RPC0&CPU"}, single_device());
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "the CPU cannot be part of a layer split")) << log;
    EXPECT_TRUE(contains(log, "--params-backend diffusion=cpu")) << log;
    EXPECT_TRUE(split_ranges(log, "diffusion").empty()) << log;
}

// --auto-fit --max-vram with budgets below the UNet's params + 2 GiB compute reserve on
// each worker, but whose sum of (budget - reserve) holds the UNet: the plan splits it,
// the larger budget first.
TEST_F(Twin, AutoFitSplitsTheDiffusionModel) {
    auto dry_run = [&](const std::vector<std::string>& extra) -> nlohmann::json {
        // At the size of the run: the reserves are the compute buffers measured at it.
        std::vector<std::string> args = ggdiff::e2e::model_args();
        for (const std::string& a : request_args()) args.push_back(a);
        args.insert(args.end(), {"--rpc-servers", servers(), "--auto-fit", "--fit-dry-run"});
        args.insert(args.end(), extra.begin(), extra.end());
        RunResult r = ggdiff::e2e::run_ggdiff(args, dir_ + "/dry", 120);
        EXPECT_TRUE(r.succeeded()) << r.describe();
        EXPECT_LT(r.seconds, 30.0) << "a dry run loads no weights\n" << r.describe();
        try {
            return nlohmann::json::parse(r.out);
        } catch (const std::exception& e) {
            ADD_FAILURE() << "--fit-dry-run did not print JSON: " << e.what() << "\n"
                          << r.describe();
            return nlohmann::json::object();
        }
    };
    auto component = [](const nlohmann::json& plan, const std::string& module) {
        for (const auto& c : plan.value("components", nlohmann::json::array())) {
            if (c.value("module", "") == module) return c;
        }
        return nlohmann::json::object();
    };

    // The sizes, from a plan without budgets.
    const nlohmann::json sizes = dry_run({});
    const nlohmann::json unet = component(sizes, "diffusion");
    ASSERT_TRUE(unet.contains("params_bytes")) << sizes.dump(1);
    const uint64_t params = unet["params_bytes"].get<uint64_t>();
    const uint64_t reserve = unet["reserve_bytes"].get<uint64_t>();
    // The reserve is the UNet's compute buffer measured at 64x64 plus its margin (1/16, at
    // least 1 MiB), in place of the standard 2 GiB.
    ASSERT_TRUE(unet["compute_measured_bytes"].is_number()) << sizes.dump(1);
    const uint64_t measured = unet["compute_measured_bytes"].get<uint64_t>();
    EXPECT_GT(measured, 0u);
    EXPECT_EQ(reserve, measured + std::max<uint64_t>(1 << 20, measured / 16));
    EXPECT_EQ(unet["default_reserve_bytes"].get<uint64_t>(), 2 * kGiB);
    ASSERT_GT(params, 0u);

    // RPC1 gets 70% of the UNet above the reserve, RPC0 55%: neither holds it alone.
    // Any other GPU-type device (on a machine with a GPU) gets 1 MiB, which holds nothing.
    char buf[128];
    const double gib0 = (static_cast<double>(reserve) + 0.55 * params) / kGiB;
    const double gib1 = (static_cast<double>(reserve) + 0.70 * params) / kGiB;
    std::snprintf(buf, sizeof(buf), "RPC0=%.9f,RPC1=%.9f", gib0, gib1);
    std::string budgets = buf;
    for (const auto& dev : sizes.value("devices", nlohmann::json::array())) {
        const std::string name = dev.value("name", "");
        if (name != "RPC0" && name != "RPC1") budgets += "," + name + "=0.001";
    }
    const std::vector<std::string> fit = {"--auto-fit", "--max-vram", budgets};

    const nlohmann::json plan = dry_run({"--max-vram", budgets});
    SCOPED_TRACE(plan.dump(1));
    EXPECT_EQ(plan.value("mode", ""), "time-share");
    EXPECT_EQ(plan.value("time_share", false), true);
    const nlohmann::json d = component(plan, "diffusion");
    EXPECT_EQ(d.value("split", false), true);
    EXPECT_EQ(d.value("split_mode", nlohmann::json()), "layer");
    EXPECT_EQ(d.value("targets", nlohmann::json::array()), nlohmann::json::array({"RPC1", "RPC0"}));
    EXPECT_EQ(d.value("params", ""), "disk");
    for (const auto& dev : plan.value("devices", nlohmann::json::array())) {
        const std::string name = dev.value("name", "");
        if (name != "RPC0" && name != "RPC1") continue;
        const double want = name == "RPC0" ? gib0 : gib1;
        EXPECT_NEAR(static_cast<double>(dev.value("budget_bytes", uint64_t{0})), want * kGiB,
                    4096.0)
            << dev.dump();
    }
    EXPECT_TRUE(contains(plan.value("backend", ""), "diffusion=RPC1&RPC0"));

    // The twin of the plan: each module on the first of its targets, same params.
    std::vector<std::string> single_backend;
    for (const auto& c : plan.value("components", nlohmann::json::array())) {
        const auto targets = c.value("targets", nlohmann::json::array());
        if (targets.empty()) continue;
        single_backend.push_back(c.value("module", "") + "=" + targets[0].get<std::string>());
    }
    std::vector<std::string> single = {"--backend", join(single_backend, ",")};
    if (!plan.value("params_backend", "").empty()) {
        single.insert(single.end(), {"--params-backend", plan.value("params_backend", "")});
    }
    const std::string ref = reference(single);
    ASSERT_FALSE(ref.empty());

    RunResult r = twin(fit, ref);
    const std::string log = log_of(r);
    EXPECT_TRUE(contains(log, "auto-fit plan (time-share)")) << log;
    EXPECT_TRUE(contains(log, "fits on no GPU")) << log;  // the text encoder
    EXPECT_FALSE(contains(log, "auto-fit: auto-fit:")) << log;
    EXPECT_TRUE(contains(log, "diffusion=RPC1&RPC0")) << log;
    expect_ranges(log, "diffusion", {"RPC1", "RPC0"}, kUnetBlocks);
    EXPECT_EQ(weights_on(log, "UNet"), "disk (per phase)") << log;
    // And it is the golden image as well.
    const auto g =
        ggdiff::e2e::compare_images(dir_ + "/twin.png", ggdiff::e2e::golden_dir() + "/euler.png");
    ASSERT_TRUE(g.ok) << g.error;
    EXPECT_LE(g.mean_abs, ggdiff::e2e::manifest_tolerance()) << "max " << g.max_abs;
}

// Every invalid combination of MISSION.md fails before a weight is read: the model path
// does not exist, so an error about the spec (not the file) shows the spec came first.
struct BadSpec {
    const char* what;
    std::vector<std::string> args;
    std::vector<std::string> message;  // substrings of the error
};

TEST_F(Twin, InvalidSpecsFailBeforeLoading) {
    const std::vector<BadSpec> cases = {
        {"unknown device", {"--backend", "RPC7"}, {"--backend", "unknown device \"RPC7\""}},
        {"unknown device in a list",
         {"--backend", "diffusion=RPC0&GPU9"},
         {"--backend", "unknown device \"GPU9\""}},
        {"unknown module", {"--backend", "unetz=RPC0"}, {"--backend", "unknown module \"unetz\""}},
        {"default inside a list",
         {"--backend", "diffusion=RPC0&default"},
         {"--backend", "\"default\"", "RPC0&default"}},
        {"bad split mode", {"--split-mode", "diagonal"}, {"--split-mode", "diagonal"}},
        {"bad split mode for a module",
         {"--split-mode", "diffusion=sideways"},
         {"--split-mode", "sideways"}},
        {"unknown module in split mode",
         {"--split-mode", "foo=row"},
         {"--split-mode", "unknown module \"foo\""}},
        {"device list in --params-backend",
         {"--params-backend", "diffusion=RPC0&RPC1"},
         {"--params-backend", "RPC0&RPC1"}},
        {"unknown params device",
         {"--params-backend", "diffusion=RPC5"},
         {"--params-backend", "unknown device \"RPC5\""}},
        {"disk in --backend", {"--backend", "diffusion=disk"}, {"--backend", "\"disk\""}},
        {"bad --max-vram value", {"--max-vram", "RPC0=abc"}, {"--max-vram", "\"abc\""}},
        {"zero --max-vram", {"--max-vram", "RPC1=0"}, {"--max-vram", "\"0\""}},
        {"--max-vram for an unknown device",
         {"--max-vram", "RPC9=2"},
         {"--max-vram", "unknown device \"RPC9\""}},
        {"bad --max-vram under --auto-fit",
         {"--auto-fit", "--max-vram", "lots"},
         {"--max-vram", "\"lots\""}},
        {"bad --max-vram under --fit-dry-run",
         {"--auto-fit", "--fit-dry-run", "--max-vram", "RPC0=x"},
         {"--max-vram", "\"x\""}},
    };
    const std::string missing = dir_ + "/no-such-model.safetensors";
    for (const BadSpec& c : cases) {
        SCOPED_TRACE(c.what);
        std::vector<std::string> args = {"-m", missing, "-p", "x", "--rpc-servers", servers()};
        args.insert(args.end(), c.args.begin(), c.args.end());
        args.insert(args.end(), {"-o", dir_ + "/never.png"});
        RunResult r = ggdiff::e2e::run_ggdiff(args, dir_, 60);
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        for (const std::string& m : c.message) EXPECT_TRUE(contains(r.err, m)) << r.describe();
        EXPECT_FALSE(contains(r.err, "no-such-model")) << "the spec must be checked first\n"
                                                       << r.describe();
        EXPECT_LT(r.seconds, 20.0) << r.describe();
        EXPECT_FALSE(fs::exists(dir_ + "/never.png"));
    }
}

// The control for the test above: a valid placement gets as far as the model file.
TEST_F(Twin, ValidSpecReachesTheModelFile) {
    const std::string missing = dir_ + "/no-such-model.safetensors";
    RunResult r =
        ggdiff::e2e::run_ggdiff({"-m", missing, "-p", "x", "--rpc-servers", servers(), "--backend",
                                 "te=RPC0&RPC1,diffusion=RPC1&RPC0", "--params-backend",
                                 "diffusion=disk,te=cpu", "--split-mode", "diffusion=row,te=layer",
                                 "--max-vram", "RPC0=4,RPC1=-2", "-o", dir_ + "/never.png"},
                                dir_, 60);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "no-such-model")) << r.describe();
}

}  // namespace

// The image of `r` is identical to `reference` (same device type, same order of operations).
void expect_identical(const RunResult& r, const std::string& out, const std::string& reference) {
    ASSERT_TRUE(r.succeeded()) << r.describe();
    ASSERT_FALSE(reference.empty());
    const auto d = ggdiff::e2e::compare_images(out, reference);
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_EQ(d.max_abs, 0) << "mean " << d.mean_abs << "\n" << r.describe();
}

TEST_F(Twin, MaxVramCutsTheDiffusionModelIntoSegments) {
    // 0.012 GiB on RPC0: the UNet's 19.8 MiB do not fit, so it runs as segments, each
    // uploaded before it runs. The text encoder runs on RPC1 (no budget there), the VAE on the
    // CPU (a budget is the device's: the VAE's 160 MiB on RPC0 would leave the UNet nothing).
    const std::string out = dir_ + "/cut.png";
    RunResult r =
        generate({"--backend", "all=RPC0,te=RPC1,vae=CPU", "--max-vram", "RPC0=0.012"}, out, dir_);
    const std::string log = log_of(r);
    expect_identical(r, out, vae_on_cpu());
    expect_segments(log, "diffusion", kUnetBlocks, 2);
    EXPECT_TRUE(contains(log, "cut (each segment uploaded before it runs)")) << log;
    for (const SegmentLine& s : segment_lines(log, "diffusion")) EXPECT_FALSE(s.kept) << log;
    EXPECT_TRUE(segment_lines(log, "te").empty()) << log;
    // Every segment is uploaded again for each of the 4 steps x 2 (CFG) evaluations.
    EXPECT_TRUE(contains(log, "19.8 MiB of weights uploaded per evaluation")) << log;
}

TEST_F(Twin, MaxVramCutWithParamsFromDiskOrCpu) {
    // The segments are read from the checkpoint for each upload whatever the params place;
    // with `disk` the file's pages are dropped after each upload.
    for (const char* params : {"diffusion=disk", "diffusion=cpu"}) {
        SCOPED_TRACE(params);
        const std::string out = dir_ + "/cut_params.png";
        RunResult r = generate({"--backend", "all=RPC0,te=RPC1,vae=CPU", "--max-vram", "RPC0=0.012",
                                "--stream-layers", "--params-backend", params},
                               out, dir_);
        expect_identical(r, out, vae_on_cpu());
        expect_segments(log_of(r), "diffusion", kUnetBlocks, 3);
    }
}

TEST_F(Twin, MaxVramBudgetLeavesRoomForModulesLoadedWhole) {
    // A --max-vram budget is the device's: the VAE (about 160 MiB, loaded whole on RPC1 with
    // the model) is taken out of the text encoder's 0.35 GiB (358.4 MiB) there, which then
    // does not hold its 235 MiB whole and is cut. (Without that it would fit.)
    const std::string out = dir_ + "/held.png";
    RunResult r =
        generate({"--backend", "all=RPC0,te=RPC1,vae=RPC1", "--max-vram", "RPC1=0.35"}, out, dir_);
    const std::string log = log_of(r);
    expect_identical(r, out, single_device());
    EXPECT_TRUE(std::regex_search(
        log, std::regex(R"(te: --max-vram budget 358\.4 MiB on RPC1, 15\d\.\d MiB of it held by )"
                        R"(other modules)")))
        << log;
    expect_segments(log, "te", kClipLayers, 2);
}

TEST_F(Twin, StreamLayersKeepsLeadingBlocksAndStreamsTheRest) {
    // Both modules cut: the UNet on RPC0 (0.012 GiB), CLIP's 12 layers on RPC1 (0.12 GiB, its
    // 76 MiB token embedding stays resident), with --stream-layers.
    const std::string out = dir_ + "/stream.png";
    RunResult r = generate({"--backend", "all=RPC0,te=RPC1,vae=CPU", "--max-vram",
                            "RPC0=0.012,RPC1=0.12", "--stream-layers"},
                           out, dir_);
    const std::string log = log_of(r);
    expect_identical(r, out, vae_on_cpu());
    expect_segments(log, "diffusion", kUnetBlocks, 3);
    expect_segments(log, "te", kClipLayers, 3);
    for (const char* module : {"diffusion", "te"}) {
        const auto segs = segment_lines(log, module);
        ASSERT_FALSE(segs.empty());
        EXPECT_TRUE(segs.front().kept) << module << " keeps nothing on the device\n" << log;
        EXPECT_FALSE(segs.back().kept) << log;
    }
    EXPECT_TRUE(contains(log, "streamed (")) << log;
}

TEST_F(Twin, MaxVramTooSmallNamesSegmentCapacityAndShortfall) {
    const std::string out = dir_ + "/small.png";
    RunResult r = generate(
        {"--backend", "all=RPC0,te=RPC1,vae=CPU", "--max-vram", "RPC0=0.0045", "--stream-layers"},
        out, dir_);
    EXPECT_FALSE(r.succeeded()) << r.describe();
    EXPECT_EQ(r.term_signal, 0) << r.describe();
    const std::string log = log_of(r);
    EXPECT_TRUE(std::regex_search(
        log, std::regex(R"(diffusion: segment \d+ \(block \d+, [\d.]+ MiB\) does not fit: )"
                        R"(capacity [\d.]+ MiB.*short by [\d.]+ MiB)")))
        << log;
    EXPECT_FALSE(fs::exists(out));
}

TEST_F(Twin, LayerSplitTurnsGraphCuttingOff) {
    // (The text encoder on the CPU: a budget of 0.012 GiB on RPC0 would cut it as well.)
    RunResult r = twin({"--backend", "all=RPC0,te=CPU,diffusion=RPC0&RPC1", "--max-vram", "0.012",
                        "--stream-layers"},
                       single_device());
    const std::string log = log_of(r);
    expect_ranges(log, "diffusion", {"RPC0", "RPC1"}, kUnetBlocks);
    EXPECT_TRUE(contains(log,
                         "diffusion: layer split across several devices: --max-vram sets the "
                         "split shares, graph cutting and --stream-layers are off"))
        << log;
    EXPECT_TRUE(segment_lines(log, "diffusion").empty()) << log;
}

// Two workers with 200 MiB of device memory each (ggdiff-rpc --mem 200): the fixture's 414.5
// MiB of weights plus its compute buffers fit neither alone nor both together. With
// --max-vram 0.15 (153.6 MiB, under the workers' 200) the text encoder (235 MiB) is cut into
// segments on RPC0, the UNet (19.8 MiB) runs whole after it on RPC0, the VAE on RPC1: the image
// is the unlimited single-device image.
class TwinMem200 : public Twin {
  protected:
    int worker_mem_mib() const override { return 200; }

    // Everything on one unlimited worker (`--backend RPC0`), made once per build.
    std::string unlimited_reference() const {
        const std::string key = "unlimited RPC0|" + join(request_args(), " ") + "|" +
                                file_stamp(ggdiff::e2e::fixture_path());
        return cached_image("references", key, [&](const std::string& path) {
            rpc_test::Worker unlimited;
            std::string error;
            if (!unlimited.start(&error)) {
                RunResult failed;
                failed.spawn_failed = true;
                failed.err = error;
                return failed;
            }
            std::vector<std::string> args = ggdiff::e2e::model_args();
            for (const std::string& a : request_args()) args.push_back(a);
            args.insert(args.end(),
                        {"--rpc-servers", unlimited.endpoint(), "--backend", "RPC0", "-o", path});
            return ggdiff::e2e::run_ggdiff(args, dir_ + "/reference", 300);
        });
    }

    void expect_streamed_on_limited_workers(const std::vector<std::string>& extra, bool streamed) {
        const std::string ref = unlimited_reference();
        const std::string out = dir_ + "/limited.png";
        std::vector<std::string> args = {"--backend", "all=RPC0,vae=RPC1", "--max-vram", "0.15"};
        args.insert(args.end(), extra.begin(), extra.end());
        RunResult r = generate(args, out, dir_);
        const std::string log = log_of(r);
        expect_identical(r, out, ref);
        expect_segments(log, "te", kClipLayers, 2);
        EXPECT_TRUE(contains(log, streamed ? "streamed (" : "cut (each segment")) << log;
        EXPECT_TRUE(contains(log, "te: --max-vram budget 153.6 MiB on RPC0;")) << log;
        EXPECT_TRUE(segment_lines(log, "diffusion").empty()) << "the UNet fits whole\n" << log;
    }
};

TEST_F(TwinMem200, ModelLargerThanBothWorkersRunsStreamed) {
    // Without cutting the text encoder's weights alone exceed RPC0's 200 MiB.
    const std::string out = dir_ + "/whole.png";
    RunResult whole = generate({"--backend", "all=RPC0,vae=RPC1"}, out, dir_);
    EXPECT_FALSE(whole.succeeded()) << whole.describe();
    EXPECT_TRUE(contains(log_of(whole), "cannot allocate")) << whole.describe();
    // Nor do both workers hold it with a layer split of both modules.
    RunResult split =
        generate({"--backend", "te=RPC0&RPC1,diffusion=RPC0&RPC1,vae=RPC1"}, out, dir_);
    EXPECT_FALSE(split.succeeded()) << split.describe();
    expect_streamed_on_limited_workers({"--stream-layers"}, true);
}

TEST_F(TwinMem200, ModelLargerThanBothWorkersRunsCut) {
    expect_streamed_on_limited_workers({}, false);
}
