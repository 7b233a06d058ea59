// Twin tests for data-parallel batches (`--backend "all=RPC0|RPC1"`): a batch whose items run
// on two replicas at once, one per ggdiff-rpc worker, must give the images and metadata of
// the same batch on one device, in the same order (file names and seeds), and the log and
// the workers (which log their graph computes here) must show that both replicas computed.
// Bad '|' specs fail before any weight is read.
#include <gtest/gtest.h>

#include <regex>

#include "twin_support.h"

namespace {

namespace fs = std::filesystem;
using ggdiff::e2e::contains;
using ggdiff::e2e::RunResult;
using namespace ggdiff::twin;

// The graphs a worker computed so far: with GGML_RPC_DEBUG=1 ggml's RPC server logs each as
// "[graph_compute] device: 0, uid: 2, n_nodes: 441, n_tensors: 639".
int graph_computes(const std::string& worker_log) {
    int n = 0;
    for (size_t at = worker_log.find("[graph_compute]"); at != std::string::npos;
         at = worker_log.find("[graph_compute]", at + 1)) {
        ++n;
    }
    return n;
}

// "NAME seed N" for each "saved PATH (seed N)" line, in output order.
std::vector<std::string> saved_files(const std::string& log) {
    std::vector<std::string> out;
    const std::regex re(R"(saved (\S+) \(seed (\d+)\))");
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
         ++it) {
        out.push_back(fs::path((*it)[1].str()).filename().string() + " seed " + (*it)[2].str());
    }
    return out;
}

class DataParallelTwin : public TwoWorkers {
  protected:
    static constexpr int kBatch = 4;

    void SetUp() override {
        ASSERT_TRUE(ggdiff::e2e::prerequisites_ok());
        // The workers log every graph they compute (only they see the variable).
        ggdiff::e2e::ScopedEnv debug("GGML_RPC_DEBUG", "1");
        TwoWorkers::SetUp();
    }

    // The golden `euler` request (64x64, 4 euler steps, seed 42) as a batch of `batch` with
    // both workers, -v and `extra`, written to OUT (then OUT_1, OUT_2, ...).
    RunResult generate(int batch, const std::vector<std::string>& extra, const std::string& out,
                       const std::string& log_dir) const {
        std::vector<std::string> args = ggdiff::e2e::model_args();
        for (const std::string& a : ggdiff::e2e::euler_request(4)) args.push_back(a);
        args.insert(args.end(),
                    {"-b", std::to_string(batch), "--rpc-servers", servers(), "-v", "-o", out});
        args.insert(args.end(), extra.begin(), extra.end());
        return ggdiff::e2e::run_ggdiff(args, log_dir, 600);
    }

    // The batch on one device (everything on RPC0), made once per build of the binaries.
    std::vector<std::string> single_device_batch() const {
        const std::string key = "data parallel|" + join(ggdiff::e2e::euler_request(4), " ") + "|" +
                                file_stamp(ggdiff::e2e::fixture_path());
        return cached_batch("references", key, kBatch, [&](const std::string& path) {
            RunResult r = generate(kBatch, {"--backend", "RPC0"}, path, dir_ + "/reference");
            EXPECT_FALSE(contains(log_of(r), "data parallel")) << log_of(r);
            return r;
        });
    }

    // Image i of the run written to `out` matches reference image i, pixels and metadata.
    void expect_same_batch(const RunResult& r, const std::string& out,
                           const std::vector<std::string>& reference, int count) {
        ASSERT_GE(reference.size(), static_cast<size_t>(count));
        for (int i = 0; i < count; ++i) {
            const std::string path = batch_name(out, i);
            const std::string what = "data parallel image " + std::to_string(i);
            expect_same_image(r, path, reference[static_cast<size_t>(i)],
                              ggdiff::e2e::manifest_tolerance(), what.c_str());
            auto mine = ggdiff::read_image_parameters(path);
            auto theirs = ggdiff::read_image_parameters(reference[static_cast<size_t>(i)]);
            ASSERT_TRUE(mine.ok()) << path << ": " << mine.status().message();
            ASSERT_TRUE(theirs.ok()) << theirs.status().message();
            EXPECT_EQ(*mine, *theirs) << what;
            EXPECT_TRUE(contains(*mine, "Seed: " + std::to_string(42 + i))) << *mine;
        }
        std::vector<std::string> expected;
        for (int i = 0; i < count; ++i) {
            expected.push_back(fs::path(batch_name(out, i)).filename().string() + " seed " +
                               std::to_string(42 + i));
        }
        EXPECT_EQ(saved_files(r.err), expected) << r.err;
    }
};

TEST_F(DataParallelTwin, BatchOnTwoReplicasMatchesOneDevice) {
    const std::vector<std::string> reference = single_device_batch();
    ASSERT_EQ(reference.size(), static_cast<size_t>(kBatch));
    const int before0 = graph_computes(w0_.log()), before1 = graph_computes(w1_.log());
    const std::string out = dir_ + "/dp.png";
    const RunResult r = generate(kBatch, {"--backend", "all=RPC0|RPC1"}, out, dir_);
    const std::string log = log_of(r);
    expect_same_batch(r, out, reference, kBatch);
    EXPECT_TRUE(contains(log, "data parallel: 2 replicas (RPC0, RPC1), each with its own copy"))
        << log;
    EXPECT_TRUE(
        contains(log, "data parallel: 2 replicas (RPC0, RPC1); items 0,2 on RPC0, 1,3 on RPC1"))
        << log;
    // Each replica's UNet computes on its own worker.
    EXPECT_TRUE(contains(log, "UNet: computes on RPC0")) << log;
    EXPECT_TRUE(contains(log, "UNet: computes on RPC1")) << log;
    // Both workers computed their two items: each denoised 2 items x 4 steps (CFG batched
    // with the prompt) besides encoding the prompt and decoding, and as many graphs as the other.
    const int computed0 = graph_computes(w0_.log()) - before0;
    const int computed1 = graph_computes(w1_.log()) - before1;
    std::printf("graphs computed: RPC0 %d, RPC1 %d\n", computed0, computed1);
    EXPECT_GE(computed0, 2 * 4) << w0_.log();
    EXPECT_GE(computed1, 2 * 4) << w1_.log();
    EXPECT_EQ(computed0, computed1);
}

// Workers with 200 MiB of device memory each (ggdiff-rpc --mem 200): one replica of the text
// encoder and UNet (255 MiB of weights) fits neither; with --max-vram 0.15 --stream-layers each
// replica streams its text encoder, and the batch still gives the one-device images (the VAE
// decodes on the CPU in both runs).
class DataParallelMem200 : public DataParallelTwin {
  protected:
    int worker_mem_mib() const override { return 200; }

    // The batch with everything but the VAE on one unlimited worker, made once per build.
    std::vector<std::string> unlimited_batch() const {
        const std::string key = "unlimited RPC0, vae=CPU|" +
                                join(ggdiff::e2e::euler_request(4), " ") + "|" +
                                file_stamp(ggdiff::e2e::fixture_path());
        return cached_batch("references", key, kBatch, [&](const std::string& path) {
            rpc_test::Worker unlimited;
            std::string error;
            RunResult failed;
            if (!unlimited.start(&error)) {
                failed.spawn_failed = true;
                failed.err = error;
                return failed;
            }
            std::vector<std::string> args = ggdiff::e2e::model_args();
            for (const std::string& a : ggdiff::e2e::euler_request(4)) args.push_back(a);
            args.insert(args.end(),
                        {"-b", std::to_string(kBatch), "--rpc-servers", unlimited.endpoint(),
                         "--backend", "all=RPC0,vae=CPU", "-o", path});
            return ggdiff::e2e::run_ggdiff(args, dir_ + "/reference", 600);
        });
    }
};

TEST_F(DataParallelMem200, StreamedReplicasGiveTheOneDeviceBatch) {
    const std::vector<std::string> reference = unlimited_batch();
    ASSERT_EQ(reference.size(), static_cast<size_t>(kBatch));
    const std::string out = dir_ + "/dp.png";
    // Without cutting a replica does not fit its worker.
    const RunResult whole =
        generate(2, {"--backend", "all=RPC0|RPC1,vae=CPU"}, dir_ + "/whole.png", dir_);
    EXPECT_FALSE(whole.succeeded()) << whole.describe();
    const RunResult r = generate(
        kBatch, {"--backend", "all=RPC0|RPC1,vae=CPU", "--max-vram", "0.15", "--stream-layers"},
        out, dir_);
    const std::string log = log_of(r);
    expect_same_batch(r, out, reference, kBatch);
    EXPECT_TRUE(
        contains(log, "data parallel: 2 replicas (RPC0, RPC1); items 0,2 on RPC0, 1,3 on RPC1"))
        << log;
    EXPECT_TRUE(contains(log, "te: --max-vram budget 153.6 MiB on RPC0")) << log;
    EXPECT_TRUE(contains(log, "te: --max-vram budget 153.6 MiB on RPC1")) << log;
}

// A module without '|' on a device both replicas use (the text encoders on RPC0): the
// replicas take turns on it, and the images are still those of one device.
TEST_F(DataParallelTwin, SharedDeviceTakesTurns) {
    const std::vector<std::string> reference = single_device_batch();
    ASSERT_EQ(reference.size(), static_cast<size_t>(kBatch));
    const std::string out = dir_ + "/dp.png";
    const RunResult r = generate(2, {"--backend", "all=RPC0|RPC1,te=RPC0"}, out, dir_);
    const std::string log = log_of(r);
    expect_same_batch(r, out, reference, 2);
    EXPECT_TRUE(contains(log,
                         "data parallel: RPC0 serves 2 replicas; their phases on it take "
                         "turns"))
        << log;
    EXPECT_TRUE(contains(log, "replicas (RPC0, RPC1); items 0 on RPC0, 1 on RPC1")) << log;
}

// -b 1 runs on the first replica and the log says so.
TEST_F(DataParallelTwin, OneItemRunsOnTheFirstReplica) {
    const std::vector<std::string> reference = single_device_batch();
    ASSERT_EQ(reference.size(), static_cast<size_t>(kBatch));
    const std::string out = dir_ + "/dp.png";
    const RunResult r = generate(1, {"--backend", "all=RPC0|RPC1"}, out, dir_);
    expect_same_batch(r, out, reference, 1);
    EXPECT_TRUE(contains(
        log_of(r), "data parallel: 2 replicas (RPC0, RPC1); item 0 on RPC0; RPC1 idle (-b 1)"))
        << log_of(r);
}

// Bad '|' specs fail cleanly with the message naming the token, before any weight is read.
TEST_F(DataParallelTwin, BadSpecsFailBeforeLoading) {
    const struct {
        const char* spec;
        const char* message;
    } cases[] = {
        {"all=RPC0|RPC9", "error: --backend: unknown device \"RPC9\" (known: "},
        {"RPC0|RPC1&RPC0",
         "error: --backend: cannot mix '|' (data parallel: one replica per device) and '&' "
         "(layer split) in \"RPC0|RPC1&RPC0\"; give a module one or the other"},
        {"all=RPC0|RPC1,vae=RPC1|RPC0|CPU",
         "error: --backend: '|' lists of different lengths: all=RPC0|RPC1 has 2 devices, "
         "vae=RPC1|RPC0|CPU has 3; every '|' list needs one device per replica"},
    };
    for (const auto& c : cases) {
        const RunResult r = generate(2, {"--backend", c.spec}, dir_ + "/bad.png", dir_);
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        EXPECT_TRUE(contains(r.err, c.message)) << r.describe();
        EXPECT_FALSE(contains(r.err, "computes on")) << "weights were loaded\n" << r.err;
        EXPECT_FALSE(fs::exists(dir_ + "/bad.png")) << c.spec;
    }
}

}  // namespace
