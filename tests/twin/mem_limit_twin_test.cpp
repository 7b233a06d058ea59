// ggdiff-rpc --mem end to end: the SD1 fixture with `--backend RPC0` on workers that advertise
// and enforce a device memory limit. When the model fits, the image is the one an unlimited
// worker gives; when it does not, ggdiff fails with an error that says what could not be
// allocated where (no crash, no hang), and the worker keeps serving.
#include <gtest/gtest.h>
#include <signal.h>

#include "twin_support.h"

namespace {

using ggdiff::e2e::contains;
using ggdiff::e2e::RunResult;
using namespace ggdiff::twin;

// The fixture's weights (414.5 MiB) and its largest compute buffers at 64x64 (the VAE's, about
// 26 MiB) fit in this, with room to spare.
constexpr int kFitsMiB = 512;
// Not even the text encoder's weights fit in this.
constexpr int kTooSmallMiB = 64;

// The arguments of the golden case `euler` of ../shared/golden/sd1_mc32 (64x64, 4 steps).
std::vector<std::string> request_args() {
    std::vector<std::string> out;
    const nlohmann::json m = ggdiff::e2e::load_manifest();
    for (const auto& c : m.value("cases", nlohmann::json::array())) {
        if (c.value("id", "") == "euler") out = c.value("args", std::vector<std::string>{});
    }
    return out;
}

// ggdiff with the fixture, the golden request, --rpc-servers `servers`, -v, `--backend RPC0`
// and -o OUT.
RunResult generate_on_rpc0(const std::string& servers, const std::string& out,
                           const std::string& log_dir) {
    std::vector<std::string> args = ggdiff::e2e::model_args();
    for (const std::string& a : request_args()) args.push_back(a);
    args.insert(args.end(), {"--rpc-servers", servers, "-v", "--backend", "RPC0", "-o", out});
    return ggdiff::e2e::run_ggdiff(args, log_dir, 300);
}

template <int kMiB>
class LimitedWorkers : public TwoWorkers {
  protected:
    int worker_mem_mib() const override { return kMiB; }
    void SetUp() override {
        ASSERT_TRUE(ggdiff::e2e::prerequisites_ok());
        ASSERT_FALSE(request_args().empty())
            << "no case `euler` in " << ggdiff::e2e::manifest_path();
        TwoWorkers::SetUp();
    }
};

using MemLimitFits = LimitedWorkers<kFitsMiB>;
using MemLimitTooSmall = LimitedWorkers<kTooSmallMiB>;

TEST_F(MemLimitFits, ImageIsTheUnlimitedWorkersImage) {
    rpc_test::Worker unlimited;
    std::string error;
    ASSERT_TRUE(unlimited.start(&error)) << error;
    const std::string key = "unlimited RPC0|" + join(request_args(), " ") + "|" +
                            file_stamp(ggdiff::e2e::fixture_path());
    const std::string reference = cached_image("mem_limit", key, [&](const std::string& path) {
        return generate_on_rpc0(unlimited.endpoint(), path, dir_ + "/reference");
    });
    unlimited.stop();

    const std::string out = dir_ + "/limited.png";
    const RunResult r = generate_on_rpc0(servers(), out, dir_);
    expect_same_image(r, out, reference, ggdiff::e2e::manifest_tolerance(), "--mem");
    const std::string log = w0_.log();
    EXPECT_TRUE(
        contains(log, "(1 threads, " + std::to_string(kFitsMiB) + " MiB per device: --mem)"))
        << log;
    EXPECT_FALSE(contains(log, "refused a buffer")) << log;
}

TEST_F(MemLimitTooSmall, ModelThatDoesNotFitFailsWithAClearError) {
    const RunResult r = generate_on_rpc0(servers(), dir_ + "/none.png", dir_);
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "cannot allocate")) << r.describe();
    EXPECT_TRUE(contains(r.err, "RPC0")) << r.describe();
    const std::string log = w0_.log();
    EXPECT_TRUE(contains(log, "refused a buffer of")) << log;
    EXPECT_TRUE(contains(log, "limit 64.00 MiB (--mem)")) << log;
    EXPECT_EQ(kill(w0_.pid(), 0), 0) << "the worker must survive a client's failed allocation";
    EXPECT_TRUE(rpc_test::port_accepts(w0_.port()));
}

}  // namespace
