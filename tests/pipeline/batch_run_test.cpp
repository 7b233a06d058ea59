// BatchRun: progress relayed one call at a time (per item with one replica, one bar over the
// batch with several), images handed on in item order whatever order the items finish in,
// and the first failure or cancel stopping every replica.
#include "pipeline/batch_run.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace ggdiff {
namespace {

struct Call {
    std::string phase;
    int step, total;
};

GeneratedImage image(int64_t seed) {
    GeneratedImage g;
    g.seed = seed;
    g.infotext = "seed " + std::to_string(seed);
    return g;
}

TEST(BatchRun, OneReplicaReportsEachItem) {
    std::vector<Call> calls;
    ProgressFn progress = [&](const std::string& p, int s, int t, double) {
        calls.push_back({p, s, t});
        return true;
    };
    ImageFn none;
    BatchRun run(progress, none, 2, false);
    EXPECT_TRUE(run.phase("text", 1, 1, 0.1));
    EXPECT_TRUE(run.sampling_step(0, 1, 3, 0.1));
    EXPECT_TRUE(run.sampling_step(1, 3, 3, 0.3));
    ASSERT_EQ(calls.size(), 3u);
    EXPECT_EQ(calls[0].phase, "text");
    EXPECT_EQ(calls[1].phase, "sampling 1/2");
    EXPECT_EQ(calls[2].phase, "sampling 2/2");
    EXPECT_EQ(calls[2].step, 3);
    EXPECT_EQ(calls[2].total, 3);

    BatchRun single(progress, none, 1, false);
    calls.clear();
    EXPECT_TRUE(single.sampling_step(0, 2, 4, 0.1));
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].phase, "sampling");
}

TEST(BatchRun, ReplicasShareOneSamplingBar) {
    std::vector<Call> calls;
    ProgressFn progress = [&](const std::string& p, int s, int t, double) {
        calls.push_back({p, s, t});
        return true;
    };
    ImageFn none;
    BatchRun run(progress, none, 4, true);
    // A preparation phase is reported once (each replica runs it); every decode is.
    EXPECT_TRUE(run.phase("text", 1, 1, 0.1));
    EXPECT_TRUE(run.phase("text", 1, 1, 0.1));
    EXPECT_TRUE(run.sampling_step(1, 1, 2, 0.1));
    EXPECT_TRUE(run.sampling_step(0, 1, 2, 0.1));
    EXPECT_TRUE(run.phase("decode", 1, 1, 0.1));
    ASSERT_EQ(calls.size(), 4u);
    EXPECT_EQ(calls[0].phase, "text");
    EXPECT_EQ(calls[1].phase, "sampling");
    EXPECT_EQ(calls[1].step, 1);
    EXPECT_EQ(calls[1].total, 8);  // 4 items x 2 steps
    EXPECT_EQ(calls[2].phase, "sampling");
    EXPECT_EQ(calls[2].step, 2);
    EXPECT_EQ(calls[3].phase, "decode");
}

TEST(BatchRun, ImagesInItemOrderFromAnyThread) {
    std::vector<int64_t> seen;
    ProgressFn none;
    ImageFn on_image = [&](const GeneratedImage& g) { seen.push_back(g.seed); };
    BatchRun run(none, on_image, 6, true);
    // Two replicas finishing their items (0,2,4 and 1,3,5) in a scrambled global order.
    run.finish_item(1, {image(43)});
    EXPECT_TRUE(seen.empty());  // item 0 is not done
    std::thread a([&] {
        run.finish_item(0, {image(42)});
        run.finish_item(2, {image(44)});
        run.finish_item(4, {image(46)});
    });
    std::thread b([&] {
        run.finish_item(3, {image(45)});
        run.finish_item(5, {image(47)});
    });
    a.join();
    b.join();
    EXPECT_EQ(seen, (std::vector<int64_t>{42, 43, 44, 45, 46, 47}));
    const std::vector<GeneratedImage> images = run.take_images();
    ASSERT_EQ(images.size(), 6u);
    for (size_t i = 0; i < images.size(); ++i) EXPECT_EQ(images[i].seed, 42 + int64_t(i));
}

TEST(BatchRun, SeveralImagesPerItemStayTogether) {
    std::vector<std::string> seen;
    ProgressFn none;
    ImageFn on_image = [&](const GeneratedImage& g) { seen.push_back(g.infotext); };
    BatchRun run(none, on_image, 2, true);
    GeneratedImage a = image(8), b = image(8), c = image(9), d = image(9);
    a.infotext = "8a", b.infotext = "8b", c.infotext = "9a", d.infotext = "9b";
    run.finish_item(1, {c, d});
    run.finish_item(0, {a, b});
    EXPECT_EQ(seen, (std::vector<std::string>{"8a", "8b", "9a", "9b"}));
}

TEST(BatchRun, FirstFailureWinsAndLaterItemsAreNotHandedOn) {
    std::vector<int64_t> seen;
    ProgressFn none;
    ImageFn on_image = [&](const GeneratedImage& g) { seen.push_back(g.seed); };
    BatchRun run(none, on_image, 4, true);
    EXPECT_FALSE(run.stopped());
    run.finish_item(2, {image(44)});
    run.fail(Status::Error("data parallel replica on RPC1: VAE decode: out of memory"));
    run.fail(Status::Error("cancelled"));  // another replica giving up: dropped
    EXPECT_TRUE(run.stopped());
    EXPECT_EQ(run.status().message(), "data parallel replica on RPC1: VAE decode: out of memory");
    // Item 0 finished after the failure: still handed on (item 1 never comes, so 2 is not).
    run.finish_item(0, {image(42)});
    EXPECT_EQ(seen, (std::vector<int64_t>{42}));
    // Progress stops every replica.
    EXPECT_FALSE(run.sampling_step(0, 1, 4, 0.1));
    EXPECT_FALSE(run.phase("text", 1, 1, 0.1));
}

TEST(BatchRun, CancelFromProgressStopsAllReplicas) {
    std::atomic<int> calls{0};
    ProgressFn progress = [&](const std::string&, int, int, double) { return ++calls < 3; };
    ImageFn none;
    BatchRun run(progress, none, 2, true);
    EXPECT_TRUE(run.sampling_step(0, 1, 5, 0.1));
    EXPECT_TRUE(run.sampling_step(1, 1, 5, 0.1));
    EXPECT_FALSE(run.sampling_step(0, 2, 5, 0.2));  // the caller said stop
    EXPECT_TRUE(run.stopped());
    EXPECT_EQ(run.status().message(), "cancelled");
    EXPECT_FALSE(run.sampling_step(1, 2, 5, 0.2));
    EXPECT_EQ(calls.load(), 3);  // nothing relayed after the cancel
}

TEST(BatchRun, ConcurrentProgressCallsDoNotOverlap) {
    std::atomic<int> inside{0};
    std::atomic<bool> overlapped{false};
    int last_step = 0;
    bool ordered = true;
    ProgressFn progress = [&](const std::string&, int step, int, double) {
        if (inside.fetch_add(1) != 0) overlapped = true;
        ordered = ordered && step == last_step + 1;
        last_step = step;
        std::this_thread::yield();
        inside.fetch_sub(1);
        return true;
    };
    ImageFn none;
    BatchRun run(progress, none, 4, true);
    std::vector<std::thread> threads;
    for (int item = 0; item < 4; ++item) {
        threads.emplace_back([&run, item] {
            for (int s = 1; s <= 50; ++s) run.sampling_step(item, s, 50, 0.01 * s);
        });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_FALSE(overlapped.load());
    EXPECT_TRUE(ordered);  // one bar: 1, 2, ..., 200
    EXPECT_EQ(last_step, 200);
}

}  // namespace
}  // namespace ggdiff
