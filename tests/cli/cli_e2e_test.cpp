// The ggdiff CLI end to end: help and version, flag and value errors, bad inputs (missing
// files, broken checkpoints), -M info / convert / metadata, --list-devices, output naming.
// Every run is the real binary as a child process; an error case must exit non-zero by
// itself (no signal, no hang) with a message naming what is wrong.
#include <gtest/gtest.h>

#include <sys/file.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "../golden/e2e_support.h"

namespace ggdiff::e2e {
namespace {

// The golden euler case (its reference is ../shared/golden/sd1_mc32/euler.png).
const std::vector<std::string> kEulerCase = {
    "-p",    "a photograph of an astronaut riding a horse",
    "-W",    "64",
    "-H",    "64",
    "--steps", "4",
    "--sampling-method", "euler",
    "--cfg-scale", "7",
    "-s",    "42"};

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// A small, fast generation request (used where the image itself does not matter).
std::vector<std::string> quick_request() {
    return {"-p", "a red cube", "-W", "64", "-H", "64", "--steps", "1", "--sampling-method",
            "euler", "-s", "5"};
}

// The error exit every bad input must give: non-zero status, no crash, no hang, an "error"
// line on stderr, and nothing that looks like an abort or a sanitizer report.
void expect_clean_error(const RunResult& r) {
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(lower(r.err), "error")) << r.describe();
    for (const char* bad : {"terminate called", "Aborted", "Segmentation fault", "AddressSanitizer",
                            "core dumped", "GGML_ASSERT"}) {
        EXPECT_FALSE(contains(r.err, bad)) << bad << "\n" << r.describe();
    }
}

// `flag` appears in the help text as a flag (not as part of a longer one).
bool help_lists(const std::string& help, const std::string& flag) {
    size_t pos = 0;
    while ((pos = help.find(flag, pos)) != std::string::npos) {
        const bool start_ok = pos == 0 || help[pos - 1] == ' ' || help[pos - 1] == ',' ||
                              help[pos - 1] == '\n';
        const size_t end = pos + flag.size();
        const bool end_ok = end == help.size() || help[end] == ' ' || help[end] == ',' ||
                            help[end] == '=' || help[end] == '\n';
        if (start_ok && end_ok) return true;
        pos = end;
    }
    return false;
}

// ---------------------------------------------------------------------------------------------
// safetensors surgery on the fixture: same header with one change, data section left as
// zeros in a sparse file (the checks under test are structural; no data is copied).

struct SafetensorsHeader {
    nlohmann::ordered_json json;
    uint64_t data_bytes = 0;  // size of the data section in the source file
};

SafetensorsHeader read_header(const std::string& path) {
    SafetensorsHeader h;
    std::ifstream in(path, std::ios::binary);
    uint8_t len_bytes[8] = {};
    in.read(reinterpret_cast<char*>(len_bytes), 8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
    std::string text(n, '\0');
    in.read(text.data(), static_cast<std::streamsize>(n));
    h.json = nlohmann::ordered_json::parse(text);
    h.data_bytes = fs::file_size(path) - 8 - n;
    return h;
}

// Writes `header` and a data section of `data_bytes` zero bytes (sparse).
void write_checkpoint(const std::string& path, const nlohmann::ordered_json& header,
                      uint64_t data_bytes) {
    std::string text = header.dump();
    while (text.size() % 8 != 0) text += ' ';
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        uint64_t n = text.size();
        for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
    }
    fs::resize_file(path, 8 + text.size() + data_bytes);
}

size_t tensor_count(const SafetensorsHeader& h) {
    size_t n = 0;
    for (auto it = h.json.begin(); it != h.json.end(); ++it)
        if (it.key() != "__metadata__") ++n;
    return n;
}

// ---------------------------------------------------------------------------------------------
// One `-b 2` generation shared by the tests that only read its outputs. Each ctest test is
// its own process, so it is cached on disk under a lock and reused while the binary and the
// fixture are unchanged.

const std::vector<std::string> kBatchRequest = {
    "-p", "a lighthouse at dusk, oil painting", "-n", "blurry, low quality",
    "-W", "64", "-H", "64", "--steps", "2", "--sampling-method", "euler_a",
    "--cfg-scale", "6.5", "-s", "1234", "-b", "2"};

std::string file_stamp(const std::string& path) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return "none";
    return std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
}

struct SharedBatch {
    std::string dir;
    std::string log;  // what the generating run said (or why it failed)
    bool ok = false;
};

const SharedBatch& shared_batch() {
    static SharedBatch batch;
    static bool done = false;
    if (done) return batch;
    done = true;
    batch.dir = std::string(GGDIFF_TEST_TMP) + "/shared_batch";
    fs::create_directories(GGDIFF_TEST_TMP);
    const std::string lock_path = std::string(GGDIFF_TEST_TMP) + "/shared_batch.lock";
    const int fd = open(lock_path.c_str(), O_CREAT | O_RDWR, 0644);
    if (fd >= 0) flock(fd, LOCK_EX);
    std::string key = file_stamp(binary_path()) + "|" + file_stamp(fixture_path());
    for (const auto& a : kBatchRequest) key += "|" + a;
    const std::string key_path = batch.dir + "/key";
    if (read_text(key_path) == key && fs::exists(batch.dir + "/out.png") &&
        fs::exists(batch.dir + "/out_1.png")) {
        batch.ok = true;
        batch.log = read_text(batch.dir + "/log");
    } else {
        std::error_code ec;
        fs::remove_all(batch.dir, ec);
        fs::create_directories(batch.dir);
        const RunResult r = run_ggdiff(
            concat(concat(model_args(), kBatchRequest), {"-o", batch.dir + "/out.png"}),
            batch.dir + "/logs");
        batch.log = r.describe();
        batch.ok = r.succeeded();
        std::ofstream(batch.dir + "/log") << batch.log;
        if (batch.ok) std::ofstream(key_path) << key;
    }
    if (fd >= 0) {
        flock(fd, LOCK_UN);
        close(fd);
    }
    return batch;
}

// ---------------------------------------------------------------------------------------------
// Help, version, flag errors (no model needed)

TEST(CliHelp, ExitsZeroAndListsFlags) {
    const std::string dir = fresh_dir();
    for (const char* flag : {"--help", "-h"}) {
        const RunResult r = run_ggdiff({flag}, dir, 30);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        EXPECT_TRUE(contains(r.out, "ggdiff")) << r.out;
        for (const char* f :
             {"-m", "--model", "--diffusion-model", "--vae", "--clip_l", "--t5xxl", "--llm",
              "-p", "--prompt", "-n", "--negative-prompt", "-W", "-H", "--steps", "--cfg-scale",
              "--sampling-method", "--scheduler", "-s", "--seed", "-b", "-i", "--strength",
              "--clip-skip", "--rng", "-o", "--output", "-t", "--backend", "--params-backend",
              "--split-mode", "--auto-fit", "--max-vram", "--list-devices", "--rpc-servers",
              "--vae-tiling", "--lora-model-dir", "-v", "-M", "--mode", "--tokenizer", "--type",
              "--image", "--metadata-format", "--version"}) {
            EXPECT_TRUE(help_lists(r.out, f)) << flag << " does not list " << f;
        }
    }
}

TEST(CliHelp, Version) {
    const RunResult r = run_ggdiff({"--version"}, fresh_dir(), 30);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(std::regex_search(r.out, std::regex("^ggdiff [0-9]+\\.[0-9]+\\.[0-9]+")))
        << r.out;
}

TEST(CliErrors, UnknownFlagIsNamed) {
    const RunResult r = run_ggdiff({"-p", "x", "--bogus-flag", "3"}, fresh_dir(), 30);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, "--bogus-flag")) << r.describe();
}

TEST(CliErrors, ZeroStepsIsNamed) {
    const RunResult r = run_ggdiff(
        concat(model_args(), {"-p", "x", "-W", "64", "-H", "64", "--steps", "0"}), fresh_dir(),
        60);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, "--steps")) << r.describe();
}

TEST(CliErrors, NonNumericAndUnknownValuesAreNamed) {
    const std::string dir = fresh_dir();
    struct Case {
        std::vector<std::string> args;
        std::vector<std::string> must_mention;
    };
    const std::vector<Case> cases = {
        {{"--steps", "abc"}, {"--steps", "abc"}},
        {{"--sampling-method", "no_such_sampler"}, {"no_such_sampler"}},
        {{"--scheduler", "no_such_schedule"}, {"no_such_schedule"}},
        {{"-W", "-64"}, {"-64"}},
    };
    for (const Case& c : cases) {
        const RunResult r =
            run_ggdiff(concat(concat(model_args(), {"-p", "x"}), c.args), dir, 60);
        expect_clean_error(r);
        for (const auto& m : c.must_mention)
            EXPECT_TRUE(contains(r.err, m)) << "should mention " << m << "\n" << r.describe();
    }
}

TEST(CliErrors, SizeNotMultipleOf8) {
    const std::string dir = fresh_dir();
    for (const auto& [w, h, bad] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"65", "64", "65"}, {"64", "36", "36"}}) {
        const RunResult r = run_ggdiff(
            concat(model_args(), {"-p", "x", "-W", w, "-H", h, "--steps", "1", "-o",
                                  dir + "/out.png"}),
            dir, 120);
        expect_clean_error(r);
        EXPECT_TRUE(contains(r.err, bad)) << r.describe();
        EXPECT_TRUE(contains(r.err, "multiple")) << r.describe();
        EXPECT_FALSE(fs::exists(dir + "/out.png"));
    }
}

// ---------------------------------------------------------------------------------------------
// Missing and unreadable inputs

TEST(CliInputs, MissingInitImage) {
    const std::string dir = fresh_dir();
    const std::string missing = dir + "/no_such_init.png";
    const RunResult r = run_ggdiff(
        concat(concat(model_args(), quick_request()), {"-i", missing, "-o", dir + "/out.png"}),
        dir, 120);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, missing)) << r.describe();
    EXPECT_FALSE(fs::exists(dir + "/out.png"));
}

TEST(CliInputs, UnreadableTokenizer) {
    const std::string dir = fresh_dir();
    const std::string missing = dir + "/no_such_tokenizer";
    const RunResult r = run_ggdiff(concat({"-m", fixture_path(), "--tokenizer", missing},
                                          concat(quick_request(), {"-o", dir + "/out.png"})),
                                   dir, 120);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, missing)) << r.describe();
    EXPECT_TRUE(contains(r.err, "--tokenizer")) << r.describe();
    EXPECT_FALSE(fs::exists(dir + "/out.png"));
}

TEST(CliInputs, MissingModelFile) {
    const std::string dir = fresh_dir();
    const std::string missing = dir + "/no_such_model.safetensors";
    const RunResult r =
        run_ggdiff(concat({"-m", missing, "--tokenizer", merges_path()}, quick_request()), dir,
                   60);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, missing)) << r.describe();
}

// ---------------------------------------------------------------------------------------------
// Broken checkpoints derived from the fixture

class CliCheckpoint : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(prerequisites_ok());
        dir_ = fresh_dir();
        header_ = read_header(fixture_path());
    }
    RunResult generate_from(const std::string& model) {
        return run_ggdiff(concat({"-m", model, "--tokenizer", merges_path()},
                                 concat(quick_request(), {"-o", dir_ + "/out.png"})),
                          dir_, 180);
    }
    std::string dir_;
    SafetensorsHeader header_;
};

TEST_F(CliCheckpoint, MissingTensorIsNamed) {
    const std::string name = "model.diffusion_model.out.2.weight";
    ASSERT_TRUE(header_.json.contains(name));
    header_.json.erase(name);
    const std::string path = dir_ + "/missing_tensor.safetensors";
    write_checkpoint(path, header_.json, header_.data_bytes);
    const RunResult r = generate_from(path);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, name)) << r.describe();
    EXPECT_TRUE(contains(lower(r.err), "missing")) << r.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/out.png"));
}

TEST_F(CliCheckpoint, MissingTextEncoderTensorIsNamed) {
    const std::string name =
        "cond_stage_model.transformer.text_model.encoder.layers.3.mlp.fc1.weight";
    ASSERT_TRUE(header_.json.contains(name));
    header_.json.erase(name);
    const std::string path = dir_ + "/missing_te_tensor.safetensors";
    write_checkpoint(path, header_.json, header_.data_bytes);
    const RunResult r = generate_from(path);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, name)) << r.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/out.png"));
}

TEST_F(CliCheckpoint, WrongShapeIsNamed) {
    // Same element count, different shape: the file stays valid, the model must refuse it.
    const std::string name = "model.diffusion_model.middle_block.0.in_layers.2.weight";
    ASSERT_TRUE(header_.json.contains(name));
    auto& shape = header_.json[name]["shape"];
    ASSERT_EQ(shape.size(), 4u);
    const int64_t kh = shape[2].get<int64_t>(), kw = shape[3].get<int64_t>();
    shape[2] = kh * kw;
    shape[3] = 1;
    const std::string path = dir_ + "/wrong_shape.safetensors";
    write_checkpoint(path, header_.json, header_.data_bytes);
    const RunResult r = generate_from(path);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, name)) << r.describe();
    EXPECT_TRUE(contains(lower(r.err), "shape")) << r.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/out.png"));
}

TEST_F(CliCheckpoint, WrongTextEncoderShapeIsNamed) {
    // [3072, 768] -> [768, 3072]: same element count, transposed.
    const std::string name =
        "cond_stage_model.transformer.text_model.encoder.layers.3.mlp.fc1.weight";
    ASSERT_TRUE(header_.json.contains(name));
    auto& shape = header_.json[name]["shape"];
    ASSERT_EQ(shape.size(), 2u);
    const auto a = shape[0], b = shape[1];
    ASSERT_NE(a, b);
    shape[0] = b;
    shape[1] = a;
    const std::string path = dir_ + "/wrong_te_shape.safetensors";
    write_checkpoint(path, header_.json, header_.data_bytes);
    const RunResult r = generate_from(path);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, name)) << r.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/out.png"));
}

TEST_F(CliCheckpoint, WrongVaeShapeIsNamed) {
    const std::string name = "first_stage_model.decoder.conv_out.weight";
    ASSERT_TRUE(header_.json.contains(name));
    auto& shape = header_.json[name]["shape"];
    ASSERT_EQ(shape.size(), 4u);
    // [3, C, 3, 3] -> [C, 3, 3, 3]: same bytes, transposed roles.
    const auto a = shape[0], b = shape[1];
    shape[0] = b;
    shape[1] = a;
    const std::string path = dir_ + "/wrong_vae_shape.safetensors";
    write_checkpoint(path, header_.json, header_.data_bytes);
    const RunResult r = generate_from(path);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, name)) << r.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/out.png"));
}

TEST_F(CliCheckpoint, TruncatedDataSection) {
    const std::string path = dir_ + "/truncated.safetensors";
    write_checkpoint(path, header_.json, header_.data_bytes / 2);
    const RunResult r = generate_from(path);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, path)) << r.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/out.png"));
    // -M info and -M convert refuse it the same way.
    const RunResult info = run_ggdiff({"-M", "info", "-m", path}, dir_, 60);
    expect_clean_error(info);
    EXPECT_TRUE(contains(info.err, path)) << info.describe();
    const RunResult conv =
        run_ggdiff({"-M", "convert", "-m", path, "-o", dir_ + "/x.gguf"}, dir_, 60);
    expect_clean_error(conv);
    EXPECT_FALSE(fs::exists(dir_ + "/x.gguf"));
}

TEST_F(CliCheckpoint, TruncatedHeaderAndEmptyFile) {
    // The fixture's first 5000 bytes: a header length that runs past the end of the file.
    const std::string cut = dir_ + "/cut_header.safetensors";
    {
        std::ifstream in(fixture_path(), std::ios::binary);
        std::string bytes(5000, '\0');
        in.read(bytes.data(), 5000);
        std::ofstream(cut, std::ios::binary).write(bytes.data(), 5000);
    }
    const std::string empty = dir_ + "/empty.safetensors";
    std::ofstream(empty, std::ios::binary).close();
    for (const std::string& path : {cut, empty}) {
        const RunResult r = generate_from(path);
        expect_clean_error(r);
        EXPECT_TRUE(contains(r.err, path)) << r.describe();
        EXPECT_FALSE(fs::exists(dir_ + "/out.png"));
    }
}

// ---------------------------------------------------------------------------------------------
// -M info, -M convert

TEST(CliInfo, FixtureSummary) {
    ASSERT_TRUE(prerequisites_ok());
    const SafetensorsHeader h = read_header(fixture_path());
    const RunResult r = run_ggdiff({"-M", "info", "-m", fixture_path()}, fresh_dir(), 60);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(std::regex_search(r.out, std::regex("tensors:\\s+" +
                                                    std::to_string(tensor_count(h)) + "\\b")))
        << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("family:\\s+sd1\\b"))) << r.out;
    EXPECT_TRUE(contains(r.out, "F16=" + std::to_string(tensor_count(h)))) << r.out;
    for (const char* part : {"diffusion", "text encoders", "vae"})
        EXPECT_TRUE(contains(r.out, part)) << r.out;
}

// Converts without --type (keeps F16) and generates the golden euler case from the GGUF:
// the same image as from the safetensors file, within the golden tolerance.
TEST(CliConvert, F16GgufReproducesGolden) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const std::string gguf = dir + "/sd1_f16.gguf";
    const RunResult conv = run_ggdiff({"-M", "convert", "-m", fixture_path(), "-o", gguf}, dir);
    ASSERT_TRUE(conv.succeeded()) << conv.describe();
    ASSERT_TRUE(fs::is_regular_file(gguf));

    const SafetensorsHeader h = read_header(fixture_path());
    const RunResult info = run_ggdiff({"-M", "info", "-m", gguf}, dir, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(std::regex_search(info.out, std::regex("family:\\s+sd1\\b"))) << info.out;
    EXPECT_TRUE(contains(info.out, "F16=" + std::to_string(tensor_count(h)))) << info.out;

    const RunResult gen =
        run_ggdiff(concat({"-m", gguf, "--tokenizer", merges_path()},
                          concat(kEulerCase, {"-o", dir + "/out.png"})),
                   dir);
    ASSERT_TRUE(gen.succeeded()) << gen.describe();
    const ImageDiff d = compare_images(dir + "/out.png", golden_dir() + "/euler.png");
    ASSERT_TRUE(d.ok) << d.error;
    std::printf("[ cli      ] f16 gguf euler vs golden: mean_abs_diff %.3f max_abs_diff %d\n",
                d.mean_abs, d.max_abs);
    EXPECT_LE(d.mean_abs, manifest_tolerance());
    if (!HasFailure()) fs::remove(gguf);  // 400+ MB; kept only to debug a failure
}

// q8_0 conversion: -M info reports the quantized types, and generating from the GGUF with
// no --type gives an image close to the F16 reference (quantization moves it a little).
TEST(CliConvert, Q8GgufInfoAndGenerate) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const std::string gguf = dir + "/sd1_q8_0.gguf";
    const RunResult conv = run_ggdiff(
        {"-M", "convert", "-m", fixture_path(), "--type", "q8_0", "-o", gguf}, dir);
    ASSERT_TRUE(conv.succeeded()) << conv.describe();
    ASSERT_TRUE(fs::is_regular_file(gguf));
    EXPECT_LT(fs::file_size(gguf), fs::file_size(fixture_path()));

    const SafetensorsHeader h = read_header(fixture_path());
    const RunResult info = run_ggdiff({"-M", "info", "-m", gguf}, dir, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(std::regex_search(info.out, std::regex("family:\\s+sd1\\b"))) << info.out;
    EXPECT_TRUE(std::regex_search(
        info.out, std::regex("tensors:\\s+" + std::to_string(tensor_count(h)) + "\\b")))
        << info.out;
    EXPECT_TRUE(contains(lower(info.out), "q8_0=")) << info.out;

    const RunResult gen =
        run_ggdiff(concat({"-m", gguf, "--tokenizer", merges_path()},
                          concat(kEulerCase, {"-o", dir + "/out.png"})),
                   dir);
    ASSERT_TRUE(gen.succeeded()) << gen.describe();
    const ImageDiff d = compare_images(dir + "/out.png", golden_dir() + "/euler.png");
    ASSERT_TRUE(d.ok) << d.error;
    std::printf("[ cli      ] q8_0 gguf euler vs golden: mean_abs_diff %.3f max_abs_diff %d\n",
                d.mean_abs, d.max_abs);
    EXPECT_LE(d.mean_abs, 10.0) << "q8_0 image far from the F16 reference";
    if (!HasFailure()) fs::remove(gguf);
}

TEST(CliConvert, BadTypeIsNamed) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const RunResult r = run_ggdiff(
        {"-M", "convert", "-m", fixture_path(), "--type", "q9_9", "-o", dir + "/x.gguf"}, dir,
        60);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, "q9_9")) << r.describe();
    EXPECT_FALSE(fs::exists(dir + "/x.gguf"));
}

// ---------------------------------------------------------------------------------------------
// Outputs: batch naming, metadata read back through -M metadata

TEST(CliOutput, BatchNaming) {
    ASSERT_TRUE(prerequisites_ok());
    const SharedBatch& b = shared_batch();
    ASSERT_TRUE(b.ok) << b.log;
    EXPECT_TRUE(fs::is_regular_file(b.dir + "/out.png")) << b.log;
    EXPECT_TRUE(fs::is_regular_file(b.dir + "/out_1.png")) << b.log;
    EXPECT_FALSE(fs::exists(b.dir + "/out_0.png"));
    EXPECT_FALSE(fs::exists(b.dir + "/out_2.png"));
    // Two different images (seeds 1234 and 1235), each 64x64.
    const ImageDiff d = compare_images(b.dir + "/out.png", b.dir + "/out_1.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_GT(d.mean_abs, 1.0) << "batch images are (nearly) identical";
    auto img = read_image(b.dir + "/out_1.png");
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, 64);
    EXPECT_EQ(img->height, 64);
}

TEST(CliMetadata, TextFormat) {
    ASSERT_TRUE(prerequisites_ok());
    const SharedBatch& b = shared_batch();
    ASSERT_TRUE(b.ok) << b.log;
    const std::string dir = fresh_dir();
    const RunResult r = run_ggdiff({"-M", "metadata", "--image", b.dir + "/out_1.png"}, dir, 30);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_EQ(r.out.rfind("a lighthouse at dusk, oil painting\n", 0), 0u) << r.out;
    EXPECT_TRUE(contains(r.out, "Negative prompt: blurry, low quality")) << r.out;
    EXPECT_TRUE(contains(r.out, "Seed: 1235")) << r.out;
    EXPECT_TRUE(contains(r.out, "Steps: 2")) << r.out;
    EXPECT_TRUE(contains(r.out, "Sampler: Euler a")) << r.out;
    EXPECT_TRUE(contains(r.out, "Size: 64x64")) << r.out;
    EXPECT_TRUE(contains(r.out, "CFG scale: 6.5")) << r.out;
    // The same text as the library reads from the file.
    auto params = read_image_parameters(b.dir + "/out_1.png");
    ASSERT_TRUE(params.ok()) << params.status().message();
    EXPECT_TRUE(contains(r.out, *params));
}

TEST(CliMetadata, JsonFormat) {
    ASSERT_TRUE(prerequisites_ok());
    const SharedBatch& b = shared_batch();
    ASSERT_TRUE(b.ok) << b.log;
    const std::string dir = fresh_dir();
    const RunResult r = run_ggdiff(
        {"-M", "metadata", "--image", b.dir + "/out.png", "--metadata-format", "json"}, dir, 30);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << r.out;
    EXPECT_EQ(j.value("prompt", ""), "a lighthouse at dusk, oil painting") << r.out;
    EXPECT_EQ(j.value("negative_prompt", ""), "blurry, low quality") << r.out;
    EXPECT_EQ(j.value("seed", int64_t{0}), 1234) << r.out;
    EXPECT_EQ(j.value("steps", 0), 2) << r.out;
    EXPECT_EQ(j.value("width", 0), 64) << r.out;
    EXPECT_EQ(j.value("height", 0), 64) << r.out;
    EXPECT_EQ(j.value("sampler_name", ""), "Euler a") << r.out;
    EXPECT_DOUBLE_EQ(j.value("cfg_scale", 0.0), 6.5) << r.out;
}

TEST(CliMetadata, BadInputs) {
    const std::string dir = fresh_dir();
    // No such image.
    const std::string missing = dir + "/no_such_image.png";
    RunResult r = run_ggdiff({"-M", "metadata", "--image", missing}, dir, 30);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, missing)) << r.describe();
    // Not an image at all.
    const std::string text = dir + "/not_an_image.png";
    std::ofstream(text) << "hello, this is not a PNG\n";
    r = run_ggdiff({"-M", "metadata", "--image", text}, dir, 30);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, text)) << r.describe();
    // Unknown format.
    r = run_ggdiff({"-M", "metadata", "--image", golden_dir() + "/euler.png",
                    "--metadata-format", "yaml"},
                   dir, 30);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, "yaml")) << r.describe();
}

// Images written by other tools (here stable-diffusion.cpp's reference outputs) read back too.
TEST(CliMetadata, ReadsReferenceImages) {
    const RunResult r = run_ggdiff({"-M", "metadata", "--image",
                                    golden_dir() + "/dpmpp2m_karras.png", "--metadata-format",
                                    "json"},
                                   fresh_dir(), 30);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << r.out;
    EXPECT_EQ(j.value("prompt", ""), "a red cube on a wooden table");
    EXPECT_EQ(j.value("negative_prompt", ""), "blurry, low quality");
    EXPECT_EQ(j.value("seed", int64_t{0}), 7);
    EXPECT_EQ(j.value("steps", 0), 6);
}

TEST(CliOutput, MissingOutputDirectoryFailsCleanly) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const std::string out_dir = dir + "/no_such_dir/sub";
    const RunResult r = run_ggdiff(
        concat(concat(model_args(), quick_request()), {"-o", out_dir + "/out.png"}), dir);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, out_dir)) << r.describe();
    EXPECT_FALSE(fs::exists(dir + "/no_such_dir"));
}

// ---------------------------------------------------------------------------------------------
// Devices

TEST(CliDevices, ListDevices) {
    const RunResult r = run_ggdiff({"--list-devices"}, fresh_dir(), 60);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    bool cpu = false;
    std::istringstream lines(r.out);
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
        if (line.empty()) continue;
        ++n;
        const size_t tab = line.find('\t');
        EXPECT_NE(tab, std::string::npos) << "not name<TAB>description: '" << line << "'";
        EXPECT_GT(tab, 0u) << line;
        if (line.rfind("CPU\t", 0) == 0) cpu = true;
    }
    EXPECT_GE(n, 1);
    EXPECT_TRUE(cpu) << "no CPU<TAB>... line in:\n" << r.out;
}

TEST(CliDevices, UnknownBackendDeviceIsNamedBeforeLoading) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const RunResult r = run_ggdiff(
        concat(concat(model_args(), quick_request()),
               {"--backend", "diffusion=NOSUCHDEV0", "-o", dir + "/out.png"}),
        dir, 120);
    expect_clean_error(r);
    EXPECT_TRUE(contains(r.err, "NOSUCHDEV0")) << r.describe();
    EXPECT_FALSE(fs::exists(dir + "/out.png"));
    EXPECT_LT(r.seconds, 30.0) << "a bad device spec should be rejected before any work";
}

}  // namespace
}  // namespace ggdiff::e2e
