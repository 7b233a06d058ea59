// Issue 9's reproducers through the ggdiff binary: each hostile input gives a one-line error
// (or, where the input is legal, the right output) in under a second of CPU time, with no
// crash, hang or sanitizer report, and nothing outside the requested output is touched.
// The inputs are built here from their descriptions (the large ones cannot be committed).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <zlib.h>

#include "../golden/e2e_support.h"

namespace {

using namespace ggdiff::e2e;

#ifdef GGDIFF_SANITIZE
constexpr double kSlowdown = 5;  // only for the cases that succeed with large inputs
#else
constexpr double kSlowdown = 1;
#endif

struct Timed {
    RunResult run;
    double cpu_seconds = 0;  // user + system time of the child: robust to a busy machine
};

// Runs ggdiff like run_ggdiff, and measures the child's CPU time with wait4().
Timed run_timed(const std::vector<std::string>& args, const std::string& dir, int timeout_s = 60) {
    Timed t;
    t.run.args = args;
    const std::string out_path = dir + "/stdout.txt", err_path = dir + "/stderr.txt";
    std::vector<std::string> store{binary_path()};
    store.insert(store.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : store) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    const auto start = std::chrono::steady_clock::now();
    const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        t.run.spawn_failed = true;
        return t;
    }
    int status = 0;
    struct rusage ru {};
    for (;;) {
        const pid_t w = wait4(pid, &status, WNOHANG, &ru);
        if (w == pid) break;
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(timeout_s)) {
            t.run.timed_out = true;
            kill(pid, SIGKILL);
            wait4(pid, &status, 0, &ru);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    t.run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (WIFEXITED(status)) t.run.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) t.run.term_signal = WTERMSIG(status);
    t.cpu_seconds = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                    ru.ru_stime.tv_usec / 1e6;
    t.run.out = read_text(out_path);
    t.run.err = read_text(err_path);
    return t;
}

// Exactly one line on stderr, "error: ..." holding `expect`, with no raw control byte; a clean
// non-zero exit in under a second of CPU time.
void expect_one_line_error(const Timed& t, const std::string& expect) {
    const RunResult& r = t.run;
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line:\n" << r.err;
    for (unsigned char c : r.err.substr(0, r.err.size() - 1)) {
        EXPECT_TRUE(c >= 0x20 && c != 0x7f) << "raw control byte " << int(c) << " in: " << r.err;
    }
    EXPECT_TRUE(contains(r.err, expect)) << r.err;
    EXPECT_LT(t.cpu_seconds, 1.0) << r.describe();
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string safetensors(const std::string& header, const std::string& data) {
    const uint64_t n = header.size();
    return std::string(reinterpret_cast<const char*>(&n), 8) + header + data;
}

const std::string kOneTensor = R"("a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]})";

std::string png_chunk(const std::string& type, const std::string& data) {
    std::string c;
    const auto n = static_cast<uint32_t>(data.size());
    for (int s = 24; s >= 0; s -= 8) c += static_cast<char>(n >> s);
    const std::string body = type + data;
    const auto crc = static_cast<uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())));
    c += body;
    for (int s = 24; s >= 0; s -= 8) c += static_cast<char>(crc >> s);
    return c;
}

// A 1x1 RGB PNG with the given extra chunk before IDAT.
std::string png_with(const std::string& extra_chunk) {
    const std::string ihdr("\0\0\0\1\0\0\0\1\x08\x02\0\0\0", 13);
    const std::string raw(4, '\0');
    uLongf len = compressBound(raw.size());
    std::string idat(len, '\0');
    compress(reinterpret_cast<Bytef*>(&idat[0]), &len, reinterpret_cast<const Bytef*>(raw.data()),
             raw.size());
    idat.resize(len);
    return "\x89PNG\r\n\x1a\n" + png_chunk("IHDR", ihdr) + extra_chunk + png_chunk("IDAT", idat) +
           png_chunk("IEND", "");
}

TEST(Hardening, ConvertWithAnEmptyMetadataKey) {
    const std::string dir = fresh_dir();
    write_file(dir + "/m.safetensors",
               safetensors(R"({"__metadata__": {"": "x"}, )" + kOneTensor + "}", "abcd"));
    const Timed t =
        run_timed({"-M", "convert", "-m", dir + "/m.safetensors", "-o", dir + "/out.gguf"}, dir);
    expect_one_line_error(t, "metadata key is empty");
    EXPECT_FALSE(fs::exists(dir + "/out.gguf"));
}

TEST(Hardening, ConvertWithNulInTensorNames) {
    const std::string dir = fresh_dir();
    write_file(dir + "/m.safetensors",
               safetensors(R"({"a\u0000x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                               "a\u0000y": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                           std::string(8, '\0')));
    const Timed t =
        run_timed({"-M", "convert", "-m", dir + "/m.safetensors", "-o", dir + "/out.gguf"}, dir);
    expect_one_line_error(t, R"(tensor name 'a\x00x' contains a control character)");
}

TEST(Hardening, InfoWithDeeplyNestedMetadata) {
    const std::string dir = fresh_dir();
    const int depth = 100000;
    write_file(dir + "/m.safetensors",
               safetensors(R"({"__metadata__": {"k": )" + std::string(depth, '[') +
                               std::string(depth, ']') + "}, " + kOneTensor + "}",
                           "abcd"));
    const Timed t = run_timed({"-M", "info", "-m", dir + "/m.safetensors"}, dir);
    expect_one_line_error(t, "nests JSON deeper than 32 levels");
}

TEST(Hardening, MetadataJsonOfALongWordRun) {
    const std::string dir = fresh_dir();
    const std::string text = "a prompt\nSteps: 1, " + std::string(256 * 1024, 'a');
    write_file(dir + "/p.png", png_with(png_chunk("tEXt", std::string("parameters\0", 11) + text)));
    const Timed t =
        run_timed({"-M", "metadata", "--image", dir + "/p.png", "--metadata-format", "json"}, dir);
    EXPECT_TRUE(t.run.succeeded()) << t.run.describe();
    EXPECT_TRUE(contains(t.run.out, "\"infotext\"")) << t.run.out.substr(0, 200);
    EXPECT_LT(t.cpu_seconds, 1.0);
}

TEST(Hardening, FiftyThousandTinyTensors) {
    const std::string dir = fresh_dir();
    const int n = 50000;
    std::string header = "{";
    for (int i = 0; i < n; ++i) {
        char entry[128];
        std::snprintf(
            entry, sizeof entry,
            "%s\"t%05d\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [%d, %d]}",
            i ? ", " : "", i, 4 * i, 4 * i + 4);
        header += entry;
    }
    write_file(dir + "/m.safetensors", safetensors(header + "}", std::string(4 * n, '\0')));
    Timed t = run_timed({"-M", "info", "-m", dir + "/m.safetensors"}, dir);
    EXPECT_TRUE(t.run.succeeded()) << t.run.describe();
    EXPECT_TRUE(contains(t.run.out, "tensors:     50000")) << t.run.out;
    EXPECT_LT(t.cpu_seconds, 1.0 * kSlowdown);
    t = run_timed({"-M", "convert", "-m", dir + "/m.safetensors", "-o", dir + "/m.gguf"}, dir);
    EXPECT_TRUE(t.run.succeeded()) << t.run.describe();
    EXPECT_LT(t.cpu_seconds, 2.0 * kSlowdown);
    t = run_timed({"-M", "info", "-m", dir + "/m.gguf"}, dir);
    EXPECT_TRUE(t.run.succeeded()) << t.run.describe();
    EXPECT_TRUE(contains(t.run.out, "tensors:     50000")) << t.run.out;
    EXPECT_LT(t.cpu_seconds, 1.0 * kSlowdown);
}

TEST(Hardening, HugeShapesAndEmptyTensorsConvertWithoutUndefinedBehaviour) {
    // (The sanitizer build turns any signed overflow or memcpy(nullptr) into a failure.)
    const std::string dir = fresh_dir();
    write_file(dir + "/m.safetensors",
               safetensors(R"({"z": {"dtype": "F32", "shape": [281474976710656, 32768, 0],
                                     "data_offsets": [0, 0]},
                               "e": {"dtype": "F16", "shape": [0], "data_offsets": [0, 0]}})",
                           ""));
    Timed t =
        run_timed({"-M", "convert", "-m", dir + "/m.safetensors", "-o", dir + "/m.gguf"}, dir);
    EXPECT_TRUE(t.run.succeeded()) << t.run.describe();
    t = run_timed({"-M", "info", "-m", dir + "/m.gguf"}, dir);
    EXPECT_TRUE(t.run.succeeded()) << t.run.describe();

    // A GGUF whose ggdiff.tensor_shapes entry overflows int64 when multiplied out.
    std::string g = "GGUF";
    auto u32 = [&](uint32_t v) { g.append(reinterpret_cast<const char*>(&v), 4); };
    auto u64 = [&](uint64_t v) { g.append(reinterpret_cast<const char*>(&v), 8); };
    auto str = [&](const std::string& s) { u64(s.size()), g += s; };
    u32(3), u64(1), u64(1);
    str("ggdiff.tensor_shapes"), u32(9), u32(8), u64(1), str("999999999999999,999999999999999");
    str("w"), u32(1), u64(4), u32(0), u64(0);
    g.resize((g.size() + 31) / 32 * 32, '\0');
    write_file(dir + "/s.gguf", g + std::string(16, '\1'));
    t = run_timed({"-M", "info", "-m", dir + "/s.gguf"}, dir);
    EXPECT_TRUE(t.run.succeeded()) << t.run.describe();
}

TEST(Hardening, MegabytePromptFile) {
    const std::string dir = fresh_dir();
    std::string prompt;
    while (prompt.size() < (1u << 20)) prompt += "a lighthouse at dusk, ";
    write_file(dir + "/prompt.txt", prompt);
    // Refused while the command line is read: no model is opened.
    Timed t = run_timed({"-m", dir + "/none.safetensors", "--prompt-file", dir + "/prompt.txt",
                         "-o", dir + "/out.png"},
                        dir);
    expect_one_line_error(t, "the prompt is too long");
    t = run_timed({"-m", dir + "/none.safetensors", "--negative-prompt-file", "/dev/zero", "-p",
                   "x", "-o", dir + "/out.png"},
                  dir);
    expect_one_line_error(t, "'/dev/zero': the prompt is too long: more than 1048576 bytes");
    // Under the file limit, the library's prompt limit speaks.
    write_file(dir + "/short.txt", std::string(20000, 'a'));
    t = run_timed({"-m", dir + "/none.safetensors", "--prompt-file", dir + "/short.txt", "-o",
                   dir + "/out.png"},
                  dir);
    expect_one_line_error(t, "the prompt is too long: 20000 bytes (the limit is 16384 bytes)");
}

TEST(Hardening, ManyBreaksArePromptWindowsOverTheLimit) {
    if (!prerequisites_ok()) GTEST_SKIP() << "fixture or python/numpy missing";
    const std::string dir = fresh_dir();
    std::string prompt;
    for (int i = 0; i < 40; ++i) prompt += "a cat BREAK ";
    std::vector<std::string> args = model_args();
    args.insert(args.end(),
                {"-p", prompt, "-W", "64", "-H", "64", "--steps", "1", "-o", dir + "/out.png"});
    const Timed t = run_timed(args, dir);
    EXPECT_TRUE(t.run.failed_cleanly()) << t.run.describe();
    EXPECT_TRUE(contains(t.run.err, "error: the prompt is too long: 80 tokens in 40 windows"))
        << t.run.err;
    EXPECT_FALSE(contains(t.run.err, "sampling")) << t.run.err;
    EXPECT_FALSE(fs::exists(dir + "/out.png"));
}

TEST(Hardening, ConvertNeverWritesThroughDevicesOrLinks) {
    const std::string dir = fresh_dir();
    write_file(dir + "/m.safetensors", safetensors("{" + kOneTensor + "}", "abcd"));
    Timed t = run_timed({"-M", "convert", "-m", dir + "/m.safetensors", "-o", "/dev/full"}, dir);
    expect_one_line_error(t, "'/dev/full' is a character device");
    struct stat st;
    ASSERT_EQ(stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));

    ASSERT_EQ(symlink("/dev/null", (dir + "/x.png").c_str()), 0);
    std::vector<std::string> args = {"-m", dir + "/m.safetensors", "-p", "x", "-o", dir + "/x.png"};
    t = run_timed(args, dir);
    expect_one_line_error(t, "is a symbolic link to a character device");
    ASSERT_EQ(lstat((dir + "/x.png").c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode));
    ASSERT_EQ(stat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// Bad -o targets are refused before the model is even opened (so certainly before any compute).
TEST(Hardening, BadOutputTargetsAreRefusedUpFront) {
    if (!prerequisites_ok()) GTEST_SKIP() << "fixture or python/numpy missing";
    const std::string dir = fresh_dir();
    fs::create_directories(dir + "/taken.png");
    const std::pair<std::string, std::string> cases[] = {
        {dir + "/out.xyz", "unknown image file extension '.xyz'"},
        {dir + "/taken.png", "is a folder"},
        {"/dev/full", "no file extension"},
        {dir + "/missing/out.png", "cannot be used (No such file or directory)"},
    };
    for (const auto& [out, expect] : cases) {
        SCOPED_TRACE(out);
        std::vector<std::string> args = model_args();
        args.insert(args.end(), {"-p", "x", "-W", "64", "-H", "64", "--steps", "1", "-o", out});
        const Timed t = run_timed(args, dir);
        expect_one_line_error(t, expect);
    }
    // The second image of a batch counts too.
    fs::create_directories(dir + "/b_1.png");
    std::vector<std::string> args = model_args();
    args.insert(args.end(), {"-p", "x", "-W", "64", "-H", "64", "--steps", "1", "-b", "2", "-o",
                             dir + "/b.png"});
    const Timed t = run_timed(args, dir);
    expect_one_line_error(t, "b_1.png' is a folder");
    EXPECT_FALSE(fs::exists(dir + "/b.png"));
}

// Qwen Image Layered writes one file per layer: each is checked once the model is known,
// before any compute.
TEST(Hardening, EveryLayerOutputIsCheckedBeforeGenerating) {
    const std::string dit =
        std::string(GGDIFF_BINARY_DIR) + "/fixtures/qwen_layered_tiny_dit.safetensors";
    if (!fs::is_regular_file(dit)) GTEST_SKIP() << "the Qwen fixtures are made by ctest";
    const std::string dir = fresh_dir();
    fs::create_directories(dir + "/l_2.png");
    std::vector<std::string> args = {
        "--diffusion-model",
        dit,
        "--llm",
        std::string(GGDIFF_BINARY_DIR) + "/fixtures/qwen_tiny_llm.safetensors",
        "--vae",
        std::string(GGDIFF_BINARY_DIR) + "/fixtures/qwen_layered_vae.safetensors",
        "--llm-tokenizer",
        shared_dir() + "/data/qwen2_synthetic",
        "-p",
        "x",
        "-W",
        "64",
        "-H",
        "64",
        "--steps",
        "1",
        "--qwen-image-layers",
        "2",
        "-o",
        dir + "/l.png"};
    const Timed t = run_timed(args, dir);
    EXPECT_TRUE(t.run.failed_cleanly()) << t.run.describe();
    EXPECT_TRUE(contains(t.run.err, "l_2.png' is a folder")) << t.run.err;
    EXPECT_FALSE(contains(t.run.err, "sampling")) << t.run.err;
    EXPECT_FALSE(fs::exists(dir + "/l.png"));
    EXPECT_FALSE(fs::exists(dir + "/l_1.png"));
}

TEST(Hardening, MessagesNameOtherFilesAndEscapeControlBytes) {
    const std::string dir = fresh_dir();
    write_file(dir + "/image.png", png_with(""));
    Timed t = run_timed({"-M", "info", "-m", dir + "/image.png"}, dir);
    expect_one_line_error(t, "this is a PNG image, not a checkpoint");

    write_file(dir + "/esc.safetensors",
               safetensors(R"({"\u001b[2J\u001b[31mevil\nline": {"dtype": "F32", "shape": [1],
                                "data_offsets": [0, 4]}})",
                           "abcd"));
    t = run_timed({"-M", "info", "-m", dir + "/esc.safetensors"}, dir);
    expect_one_line_error(t, R"('\x1b[2J\x1b[31mevil\nline')");

    write_file(dir + "/itxt.png", png_with(png_chunk("iTXt", std::string("parameters\0\1", 12))));
    t = run_timed({"-M", "metadata", "--image", dir + "/itxt.png"}, dir);
    expect_one_line_error(t, "PNG iTXt chunk: ");

    // A control sequence in the parameters text is shown escaped, not sent to the terminal.
    write_file(dir + "/ansi.png",
               png_with(png_chunk("tEXt", std::string("parameters\0", 11) + "\x1b[2Jhi")));
    t = run_timed({"-M", "metadata", "--image", dir + "/ansi.png"}, dir);
    EXPECT_TRUE(t.run.succeeded()) << t.run.describe();
    EXPECT_EQ(t.run.out.rfind("\\x1b[2Jhi\n", 0), 0u) << t.run.out;
    EXPECT_EQ(t.run.out.find('\x1b'), std::string::npos);
}

}  // namespace
