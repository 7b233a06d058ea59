#pragma once
// Scratch folders for tests. Each test gets a fresh folder of its own; when the test passes the
// folder goes away again, so a full run does not pile up gigabytes of converted checkpoints and
// copies (CI's disk is finite). A failing test keeps its folder to look into.

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace ggdiff::scratch {

class RemoveWhenPassed : public ::testing::EmptyTestEventListener {
  public:
    void add(const std::string& dir) {
        std::lock_guard<std::mutex> lock(mu_);
        dirs_.push_back(dir);
    }
    void OnTestEnd(const ::testing::TestInfo& info) override {
        std::vector<std::string> dirs;
        {
            std::lock_guard<std::mutex> lock(mu_);
            dirs.swap(dirs_);
        }
        if (!info.result()->Passed()) return;
        for (const auto& d : dirs) {
            std::error_code ec;
            std::filesystem::remove_all(d, ec);
        }
    }

  private:
    std::mutex mu_;
    std::vector<std::string> dirs_;
};

// The listener, appended to GoogleTest's once (GoogleTest owns it from then on).
inline RemoveWhenPassed& listener() {
    static RemoveWhenPassed* l = [] {
        auto* made = new RemoveWhenPassed;
        ::testing::UnitTest::GetInstance()->listeners().Append(made);
        return made;
    }();
    return *l;
}

// Empties (or makes) `dir` and returns it. Made inside a test, it is removed when that test
// passes; made outside one (suite set-up, a cache shared by several tests) it stays.
inline std::string fresh(const std::string& dir) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir);
    if (::testing::UnitTest::GetInstance()->current_test_info() != nullptr) listener().add(dir);
    return dir;
}

}  // namespace ggdiff::scratch
