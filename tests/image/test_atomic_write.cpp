// Atomic writes: a failed write leaves no temporary file and never a half image.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/file_io.h"
#include "image/image_io.h"
#include "test_helpers.h"

namespace ggdiff {
namespace {

using test::dir_entries;
using test::noise_image;

bool has_substr(const Status& st, const std::string& s) {
    return st.message().find(s) != std::string::npos;
}

TEST(AtomicWrite, IntoMissingDirectoryFailsAndCreatesNothing) {
    const std::string dir = test::fresh_tmp_dir();
    const Status st = write_image(dir + "/missing/sub/out.png", noise_image(8, 8, 3));
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(has_substr(st, "missing/sub")) << st.message();
    EXPECT_TRUE(has_substr(st, "No such file")) << st.message();
    EXPECT_TRUE(dir_entries(dir).empty());
}

TEST(AtomicWrite, UnknownExtensionIsNamed) {
    const std::string dir = test::fresh_tmp_dir();
    Status st = write_image(dir + "/out.bmp", noise_image(8, 8, 3));
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(has_substr(st, "'.bmp'")) << st.message();
    st = write_image(dir + "/noext", noise_image(8, 8, 3));
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(has_substr(st, "no file extension")) << st.message();
    EXPECT_TRUE(dir_entries(dir).empty());
}

TEST(AtomicWrite, FailedEncodeKeepsTheOldFile) {
    const std::string dir = test::fresh_tmp_dir();
    const std::string path = dir + "/out.png";
    ASSERT_TRUE(write_image(path, noise_image(8, 8, 3)).ok());
    const auto before = test::file_bytes(path);
    Image bad = noise_image(8, 8, 3);
    bad.pixels.resize(10);
    EXPECT_FALSE(write_image(path, bad).ok());
    EXPECT_EQ(test::file_bytes(path), before);
    EXPECT_EQ(dir_entries(dir), std::vector<std::string>{"out.png"});
}

TEST(AtomicWrite, FailingWriteKeepsTheOldFileAndRemovesTheTemporary) {
    const std::string dir = test::fresh_tmp_dir();
    const std::string path = dir + "/out.png";
    ASSERT_TRUE(write_image(path, noise_image(8, 8, 3)).ok());
    const auto before = test::file_bytes(path);

    // Cap the file size so that writing a large image fails part-way with EFBIG.
    struct rlimit old_limit;
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
    auto old_handler = signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old_limit;
    small.rlim_cur = 4096;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    const Status st = write_image(path, noise_image(256, 256, 3));
    setrlimit(RLIMIT_FSIZE, &old_limit);
    signal(SIGXFSZ, old_handler);

    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(has_substr(st, "out.png")) << st.message();
    EXPECT_EQ(test::file_bytes(path), before);
    EXPECT_EQ(dir_entries(dir), std::vector<std::string>{"out.png"});
}

TEST(AtomicWrite, TargetIsADirectory) {
    const std::string dir = test::fresh_tmp_dir();
    std::filesystem::create_directories(dir + "/taken.png/inner");
    const Status st = write_image(dir + "/taken.png", noise_image(8, 8, 3));
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(std::filesystem::is_directory(dir + "/taken.png/inner"));
    EXPECT_EQ(dir_entries(dir), std::vector<std::string>{"taken.png"});
}

TEST(AtomicWrite, ReadOnlyDirectory) {
    if (geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
    const std::string dir = test::fresh_tmp_dir();
    const std::string ro = dir + "/ro";
    std::filesystem::create_directories(ro);
    chmod(ro.c_str(), 0555);
    const Status st = write_image(ro + "/out.png", noise_image(8, 8, 3));
    chmod(ro.c_str(), 0755);
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(has_substr(st, "Permission denied")) << st.message();
    EXPECT_TRUE(dir_entries(ro).empty());
}

TEST(AtomicWrite, SuccessfulOverwriteReplacesContentWithUmaskPermissions) {
    const std::string dir = test::fresh_tmp_dir();
    const std::string path = dir + "/out.webp";
    ASSERT_TRUE(write_image(path, noise_image(8, 8, 3)).ok());
    const auto first = test::file_bytes(path);
    const mode_t old_mask = umask(022);
    ASSERT_TRUE(write_image(path, noise_image(16, 16, 3, 9)).ok());
    umask(old_mask);
    EXPECT_NE(test::file_bytes(path), first);
    EXPECT_EQ(dir_entries(dir), std::vector<std::string>{"out.webp"});
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u);
    auto back = read_image(path);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->width, 16);
}

TEST(AtomicWrite, RelativePathInCurrentDirectory) {
    const std::string dir = test::fresh_tmp_dir();
    const auto cwd = std::filesystem::current_path();
    std::filesystem::current_path(dir);
    const Status st = write_image("rel.jpg", noise_image(8, 8, 3));
    std::filesystem::current_path(cwd);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(dir_entries(dir), std::vector<std::string>{"rel.jpg"});
}

TEST(FileIo, WriteFileAtomicRawBytes) {
    const std::string dir = test::fresh_tmp_dir();
    const std::vector<uint8_t> data = {1, 2, 3};
    ASSERT_TRUE(write_file_atomic(dir + "/x.bin", data.data(), data.size()).ok());
    auto back = read_file_bytes(dir + "/x.bin", 100);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, data);
    auto too_big = read_file_bytes(dir + "/x.bin", 2);
    ASSERT_FALSE(too_big.ok());
    EXPECT_NE(too_big.status().message().find("too large"), std::string::npos);
    EXPECT_FALSE(write_file_atomic(dir + "/", data.data(), data.size()).ok());
}

}  // namespace
}  // namespace ggdiff
