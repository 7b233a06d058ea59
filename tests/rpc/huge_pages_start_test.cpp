// The programs' start-up (apps/common/huge_pages_exec.h), seen on a running ggdiff-rpc: where
// the kernel's THP mode is "madvise", the worker restarts itself (same pid) with glibc's
// malloc asking for huge pages, keeps tunables the user set, leaves a user's own
// glibc.malloc.hugetlb alone, and GGDIFF_HUGE_PAGES=0 turns the restart off.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "rpc_test_util.h"

namespace {

std::string thp_mode() {
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    std::getline(in, line);
    const size_t open = line.find('['), close = line.find(']');
    return open == std::string::npos || close == std::string::npos
               ? ""
               : line.substr(open + 1, close - open - 1);
}

// The value of `name` in the environment of process `pid` ("<unset>" when absent).
std::string env_of(pid_t pid, const std::string& name) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string all = ss.str();
    size_t at = 0;
    while (at < all.size()) {
        const size_t end = all.find('\0', at);
        const std::string entry = all.substr(at, end == std::string::npos ? end : end - at);
        if (entry.rfind(name + "=", 0) == 0) return entry.substr(name.size() + 1);
        if (end == std::string::npos) break;
        at = end + 1;
    }
    return "<unset>";
}

// Starts a worker with the given variables set in this process (restored afterwards) and
// returns GLIBC_TUNABLES and GGDIFF_HUGE_PAGES as the running worker sees them.
std::pair<std::string, std::string> worker_env(const char* tunables, const char* huge_pages) {
    auto set = [](const char* name, const char* value) {
        if (value) {
            setenv(name, value, 1);
        } else {
            unsetenv(name);
        }
    };
    set("GLIBC_TUNABLES", tunables);
    set("GGDIFF_HUGE_PAGES", huge_pages);
    rpc_test::Worker w;
    std::string error;
    const bool started = w.start(&error);
    unsetenv("GLIBC_TUNABLES");
    unsetenv("GGDIFF_HUGE_PAGES");
    EXPECT_TRUE(started) << error;
    if (!started) return {"", ""};
    // The worker accepts connections only after the restart: its environment is final.
    auto got =
        std::make_pair(env_of(w.pid(), "GLIBC_TUNABLES"), env_of(w.pid(), "GGDIFF_HUGE_PAGES"));
    w.stop();
    return got;
}

TEST(HugePagesStart, WorkerRestartsAskingForHugePagesUnlessToldNot) {
    if (thp_mode() != "madvise") {
        GTEST_SKIP() << "the kernel's THP mode is \"" << thp_mode()
                     << "\", not madvise: no restart is due";
    }
    EXPECT_EQ(worker_env(nullptr, nullptr),
              std::make_pair(std::string("glibc.malloc.hugetlb=1"), std::string("1")));
    EXPECT_EQ(worker_env("glibc.malloc.check=0", nullptr),
              std::make_pair(std::string("glibc.malloc.check=0:glibc.malloc.hugetlb=1"),
                             std::string("1")));
    EXPECT_EQ(worker_env("glibc.malloc.hugetlb=0", nullptr),
              std::make_pair(std::string("glibc.malloc.hugetlb=0"), std::string("<unset>")));
    EXPECT_EQ(worker_env(nullptr, "0"), std::make_pair(std::string("<unset>"), std::string("0")));
}

}  // namespace
