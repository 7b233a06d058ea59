// Output targets: what may be written, what is refused, and atomic replacement.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "core/output_file.h"
#include "core/safe_text.h"

namespace ggdiff {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
    const std::string dir = std::string(GGDIFF_TEST_TMP) + "/" + name;
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir);
    return dir;
}

std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

bool has(const Status& st, const std::string& part) {
    return st.message().find(part) != std::string::npos;
}

std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

TEST(OutputTarget, AcceptsNewAndRegularFiles) {
    const std::string dir = fresh_dir("target_ok");
    EXPECT_TRUE(check_output_target(dir + "/new.png").ok());
    std::ofstream(dir + "/old.png") << "x";
    auto t = resolve_output_target(dir + "/old.png");
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(*t, dir + "/old.png");
}

TEST(OutputTarget, RefusesWhatIsNotAFile) {
    const std::string dir = fresh_dir("target_refused");
    fs::create_directories(dir + "/folder.png");
    ASSERT_EQ(mkfifo((dir + "/fifo.png").c_str(), 0600), 0);
    const std::pair<std::string, std::string> cases[] = {
        {dir + "/folder.png", "is a folder"},
        {dir + "/fifo.png", "is a FIFO"},
        {"/dev/full", "is a character device"},
        {dir + "/", "does not name a file"},
        {dir + "/..", "does not name a file"},
        {"", "does not name a file"},
        {dir + "/missing/x.png", "cannot be used (No such file or directory)"},
        {dir + "/folder.png/../x\n.png", ""},  // fine: a new file in an existing folder
    };
    for (const auto& [path, expect] : cases) {
        SCOPED_TRACE(escape_text(path));
        const Status st = check_output_target(path);
        if (expect.empty()) {
            EXPECT_TRUE(st.ok()) << st.message();
            continue;
        }
        ASSERT_FALSE(st.ok());
        EXPECT_TRUE(has(st, expect)) << st.message();
        EXPECT_EQ(st.message().find('\n'), std::string::npos);
    }
}

TEST(OutputTarget, FollowsLinksToFilesOnly) {
    const std::string dir = fresh_dir("target_links");
    fs::create_directories(dir + "/sub");
    std::ofstream(dir + "/sub/real.png") << "old";
    ASSERT_EQ(symlink("sub/real.png", (dir + "/link.png").c_str()), 0);
    ASSERT_EQ(symlink("link.png", (dir + "/link2.png").c_str()), 0);
    ASSERT_EQ(symlink("/dev/null", (dir + "/null.png").c_str()), 0);
    ASSERT_EQ(symlink("sub", (dir + "/dir.png").c_str()), 0);
    ASSERT_EQ(symlink("nowhere.png", (dir + "/dangling.png").c_str()), 0);
    ASSERT_EQ(symlink("loop.png", (dir + "/loop.png").c_str()), 0);

    auto t = resolve_output_target(dir + "/link2.png");
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(fs::path(*t), fs::canonical(dir + "/sub/real.png"));
    EXPECT_TRUE(has(check_output_target(dir + "/null.png"), "symbolic link to a character device"));
    EXPECT_TRUE(has(check_output_target(dir + "/dir.png"), "symbolic link to a folder"));
    EXPECT_TRUE(has(check_output_target(dir + "/dangling.png"), "symbolic link to nothing"));
    EXPECT_TRUE(has(check_output_target(dir + "/loop.png"), "symbolic link to nothing"));

    // Writing through the link replaces the file it points to; the links stay links.
    ASSERT_TRUE(write_file_atomic(dir + "/link2.png", "new", 3).ok());
    EXPECT_EQ(read(dir + "/sub/real.png"), "new");
    EXPECT_TRUE(fs::is_symlink(dir + "/link.png"));
    EXPECT_TRUE(fs::is_symlink(dir + "/link2.png"));
    EXPECT_EQ(entries(dir + "/sub"), std::vector<std::string>{"real.png"});
}

TEST(AtomicFile, UncommittedLeavesNothingAndCommittedReplaces) {
    const std::string dir = fresh_dir("atomic");
    std::ofstream(dir + "/out.bin") << "old";
    {
        auto f = AtomicFile::create(dir + "/out.bin");
        ASSERT_TRUE(f.ok());
        ASSERT_TRUE((*f)->write("partial", 7).ok());
    }  // dropped: no temporary file, old content kept
    EXPECT_EQ(entries(dir), std::vector<std::string>{"out.bin"});
    EXPECT_EQ(read(dir + "/out.bin"), "old");

    auto f = AtomicFile::create(dir + "/out.bin");
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->write("new ", 4).ok());
    ASSERT_TRUE((*f)->write("data", 4).ok());
    EXPECT_EQ((*f)->bytes_written(), 8u);
    ASSERT_TRUE((*f)->commit().ok());
    EXPECT_EQ(read(dir + "/out.bin"), "new data");
    EXPECT_EQ(entries(dir), std::vector<std::string>{"out.bin"});
}

// Long zero runs (a sparse checkpoint's zero blocks being converted) become holes: the file
// reads the same, its length counts them (a trailing one too) and they take no disk.
TEST(AtomicFile, ZeroRunsAreHoles) {
    const std::string dir = fresh_dir("holes");
    const std::vector<char> zeros(4 << 20, 0);
    auto f = AtomicFile::create(dir + "/sparse.bin");
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->write("head", 4).ok());
    ASSERT_TRUE((*f)->write(zeros.data(), zeros.size()).ok());
    ASSERT_TRUE((*f)->write("mid", 3).ok());
    ASSERT_TRUE((*f)->write(zeros.data(), zeros.size()).ok());  // trailing hole
    EXPECT_EQ((*f)->bytes_written(), 7u + 2 * zeros.size());
    ASSERT_TRUE((*f)->commit().ok());
    const std::string got = read(dir + "/sparse.bin");
    const std::string z(zeros.size(), '\0');
    EXPECT_EQ(got, "head" + z + "mid" + z);
    struct stat st;
    ASSERT_EQ(::stat((dir + "/sparse.bin").c_str(), &st), 0);
    EXPECT_EQ(static_cast<size_t>(st.st_size), got.size());
    EXPECT_LT(static_cast<size_t>(st.st_blocks) * 512, zeros.size());  // holes, not 8 MiB
}

TEST(AtomicFile, TargetThatBecomesAFolderIsNotReplaced) {
    const std::string dir = fresh_dir("atomic_race");
    auto f = AtomicFile::create(dir + "/out.bin");
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->write("x", 1).ok());
    fs::create_directories(dir + "/out.bin/inner");
    const Status st = (*f)->commit();
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(has(st, "became a folder")) << st.message();
    f = Status::Error("dropped");  // destroys the AtomicFile
    EXPECT_EQ(entries(dir), std::vector<std::string>{"out.bin"});
    EXPECT_TRUE(fs::is_directory(dir + "/out.bin/inner"));
}

}  // namespace
}  // namespace ggdiff
