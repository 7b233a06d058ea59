// Issue 9's hostile checkpoints, each built here from its description: every one gives a
// clear error (or a correct result) quickly, with no abort, stack overflow or undefined
// behaviour (the sanitizer build runs these too).
#include <gguf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>

#include <chrono>

#include "core/log.h"
#include "core/safe_text.h"
#include "io/checkpoint_file.h"
#include "io/gguf_writer.h"
#include "io/tensor_index.h"
#include "io_test_util.h"

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

#ifdef GGDIFF_SANITIZE
constexpr double kSlowdown = 10;  // ASan/UBSan builds run several times slower
#else
constexpr double kSlowdown = 1;
#endif

// CPU time of this process: what the work costs, whatever else the machine is doing.
double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_since(double t0) {
    return cpu_now() - t0;
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

// One line, no raw control bytes.
bool printable_one_line(const std::string& s) {
    for (unsigned char c : s) {
        if (c < 0x20 || c == 0x7f) return false;
    }
    return true;
}

Status add_file(const std::string& path, const std::string& bytes) {
    write_bytes(path, bytes);
    TensorIndex ix;
    return ix.add(path);
}

const std::string kOneTensor = R"("a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]})";

TEST(HostileFiles, EmptyMetadataKeyIsAnError) {
    const std::string dir = test_dir("hostile_empty_key");
    const std::string path = dir + "/m.safetensors";
    const Status st = add_file(
        path, safetensors_file(R"({"__metadata__": {"": "x"}, )" + kOneTensor + "}", "abcd"));
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), "metadata key is empty")) << st.message();
    EXPECT_TRUE(contains(st.message(), path)) << st.message();
}

TEST(HostileFiles, NulAndControlBytesInTensorNamesAreErrors) {
    const std::string dir = test_dir("hostile_nul");
    const std::string data(8, '\0');
    Status st = add_file(dir + "/nul.safetensors",
                         safetensors_file(R"({"a\u0000x": {"dtype": "F32", "shape": [1],
                                               "data_offsets": [0, 4]},
                                              "a\u0000y": {"dtype": "F32", "shape": [1],
                                               "data_offsets": [4, 8]}})",
                                          data));
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), R"('a\x00x' contains a control character)")) << st.message();
    EXPECT_TRUE(printable_one_line(st.message()));

    st = add_file(dir + "/esc.safetensors",
                  safetensors_file(R"({"a\u001b[31mred\nx": {"dtype": "F32", "shape": [1],
                                        "data_offsets": [0, 4]}})",
                                   data.substr(0, 4)));
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), R"(a\x1b[31mred\nx)")) << st.message();
    EXPECT_TRUE(printable_one_line(st.message()));

    st = add_file(dir + "/latin1.safetensors",
                  safetensors_file("{\"caf\xe9\": {\"dtype\": \"F32\", \"shape\": [1], "
                                   "\"data_offsets\": [0, 4]}}",
                                   data.substr(0, 4)));
    ASSERT_FALSE(st.ok());  // not even JSON
    EXPECT_TRUE(printable_one_line(st.message()));
}

TEST(HostileFiles, DeeplyNestedMetadataIsRefusedWithoutRecursion) {
    const std::string dir = test_dir("hostile_nested");
    const int depth = 100000;
    const std::string header = R"({"__metadata__": {"k": )" + std::string(depth, '[') +
                               std::string(depth, ']') + "}, " + kOneTensor + "}";
    ASSERT_GT(header.size(), 200000u);
    const double t0 = cpu_now();
    const Status st = add_file(dir + "/deep.safetensors", safetensors_file(header, "abcd"));
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), "deeper than 32 levels")) << st.message();
    EXPECT_LT(seconds_since(t0), 1.0 * kSlowdown);

    // Nesting within the limit is kept (as JSON text).
    const std::string ok_header =
        R"({"__metadata__": {"k": [[["x"]]], "s": "v"}, )" + kOneTensor + "}";
    write_bytes(dir + "/ok.safetensors", safetensors_file(ok_header, "abcd"));
    TensorIndex ix;
    ASSERT_TRUE(ix.add(dir + "/ok.safetensors").ok());
    EXPECT_EQ(ix.metadata().at("k"), R"([[["x"]]])");
    EXPECT_EQ(ix.metadata().at("s"), "v");
}

TEST(HostileFiles, DuplicateTensorKeyIsAnError) {
    const std::string dir = test_dir("hostile_dup");
    const Status st =
        add_file(dir + "/dup.safetensors",
                 safetensors_file("{" + kOneTensor + ", " + kOneTensor + "}", "abcd"));
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), "'a' twice")) << st.message();
}

TEST(HostileFiles, FiftyThousandTinyTensorsIndexAndConvertQuickly) {
    const std::string dir = test_dir("hostile_many");
    const int n = 50000;
    std::string header = "{";
    for (int i = 0; i < n; ++i) {
        header +=
            std::string(i ? ", " : "") + string_format(
                                             "\"t%05d\": {\"dtype\": \"F32\", \"shape\": [1], "
                                             "\"data_offsets\": [%d, %d]}",
                                             i, 4 * i, 4 * i + 4);
    }
    header += "}";
    ASSERT_GT(header.size(), 3000000u);
    write_bytes(dir + "/many.safetensors", safetensors_file(header, std::string(4 * n, '\0')));

    double t0 = cpu_now();
    TensorIndex ix;
    ASSERT_TRUE(ix.add(dir + "/many.safetensors").ok());
    EXPECT_LT(seconds_since(t0), 1.0 * kSlowdown);
    ASSERT_EQ(ix.size(), static_cast<size_t>(n));
    EXPECT_EQ(ix.tensors().front().name, "t00000");  // file order
    EXPECT_EQ(ix.tensors().back().name, "t49999");

    t0 = cpu_now();
    ASSERT_TRUE(convert_to_gguf(ix, dir + "/many.gguf", -1).ok());
    TensorIndex back;
    ASSERT_TRUE(back.add(dir + "/many.gguf").ok());
    EXPECT_LT(seconds_since(t0), 2.0 * kSlowdown);
    EXPECT_EQ(back.size(), static_cast<size_t>(n));
}

// A GGUF with one F32 tensor "w" of `ne` and the given string-array KVs, built byte by byte.
std::string tiny_gguf(const std::vector<int64_t>& ne,
                      const std::vector<std::pair<std::string, std::vector<std::string>>>& arrays) {
    std::string b = "GGUF";
    auto u32 = [&](uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
    auto u64 = [&](uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); };
    auto str = [&](const std::string& s) {
        u64(s.size());
        b += s;
    };
    u32(3);
    u64(1);
    u64(arrays.size());
    for (const auto& [key, values] : arrays) {
        str(key);
        u32(9);  // array
        u32(8);  // of strings
        u64(values.size());
        for (const std::string& v : values) str(v);
    }
    str("w");
    u32(static_cast<uint32_t>(ne.size()));
    int64_t n = 1;
    for (int64_t d : ne) u64(static_cast<uint64_t>(d)), n *= d;
    u32(0);  // F32
    u64(0);
    b.resize((b.size() + 31) / 32 * 32, '\0');
    return b + std::string(static_cast<size_t>(n) * 4, '\x01');
}

TEST(HostileFiles, HugeGgufShapeTableEntryIsIgnoredWithoutOverflow) {
    const std::string dir = test_dir("hostile_gguf_shapes");
    for (const std::string& shape :
         {std::string("999999999999999,999999999999999"), std::string("999999999999999,0,5"),
          std::string("1,2,3,4,5,6,7,8,9,10"), std::string("4,x"), std::string(",")}) {
        SCOPED_TRACE(shape);
        write_bytes(dir + "/s.gguf", tiny_gguf({4}, {{"ggdiff.tensor_shapes", {shape}}}));
        TensorIndex ix;
        const Status st = ix.add(dir + "/s.gguf");
        ASSERT_TRUE(st.ok()) << st.message();
        EXPECT_EQ(ix.find("w")->shape, (std::vector<int64_t>{4}));
    }
    // A table entry with as many elements is applied.
    write_bytes(dir + "/t.gguf", tiny_gguf({4}, {{"ggdiff.tensor_shapes", {"2,1,2"}}}));
    TensorIndex ix;
    ASSERT_TRUE(ix.add(dir + "/t.gguf").ok());
    EXPECT_EQ(ix.find("w")->shape, (std::vector<int64_t>{2, 1, 2}));
    // An invalid name table is ignored; an invalid stored name is an error.
    write_bytes(dir + "/n.gguf",
                tiny_gguf({4}, {{"ggdiff.tensor_names", {std::string("x\0y", 3)}}}));
    TensorIndex names;
    ASSERT_TRUE(names.add(dir + "/n.gguf").ok());
    EXPECT_NE(names.find("w"), nullptr);
}

TEST(HostileFiles, GgufDuplicatesAndBadCountsAreErrors) {
    const std::string dir = test_dir("hostile_gguf_dups");
    // The same key twice.
    std::string g = tiny_gguf({4}, {{"ggdiff.x", {"a"}}, {"ggdiff.x", {"b"}}});
    write_bytes(dir + "/k.gguf", g);
    TensorIndex ix;
    Status st = ix.add(dir + "/k.gguf");
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), "'ggdiff.x' appears twice")) << st.message();
    // Absurd tensor count.
    g = tiny_gguf({4}, {});
    const uint64_t huge = 1ull << 60;
    std::memcpy(&g[8], &huge, 8);
    write_bytes(dir + "/c.gguf", g);
    st = ix.add(dir + "/c.gguf");
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), "cannot fit")) << st.message();
    // An array count past the file.
    g = tiny_gguf({4}, {{"ggdiff.x", {"a"}}});
    const size_t count_at = 4 + 4 + 8 + 8 + 8 + 8 + 4 + 4;
    std::memcpy(&g[count_at], &huge, 8);
    write_bytes(dir + "/a.gguf", g);
    st = ix.add(dir + "/a.gguf");
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), "length")) << st.message();
}

TEST(HostileFiles, ShapesWithAZeroDimensionHaveNoElementsAndConvert) {
    const std::string dir = test_dir("hostile_zero_dim");
    write_bytes(dir + "/z.safetensors",
                safetensors_file(R"({"z": {"dtype": "F32", "shape": [281474976710656, 32768, 0],
                                         "data_offsets": [0, 0]},
                                   "e": {"dtype": "F16", "shape": [0], "data_offsets": [0, 0]}})",
                                 ""));
    TensorIndex ix;
    const Status st = ix.add(dir + "/z.safetensors");
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(ix.find("z")->numel(), 0);
    EXPECT_EQ(ix.find("e")->numel(), 0);
    std::vector<float> v;
    EXPECT_TRUE(ix.read_f32(*ix.find("e"), v).ok());
    EXPECT_TRUE(v.empty());
    ASSERT_TRUE(convert_to_gguf(ix, dir + "/z.gguf", -1).ok());  // memcpy of 0 bytes, no UB
    TensorIndex back;
    ASSERT_TRUE(back.add(dir + "/z.gguf").ok());
    EXPECT_EQ(back.find("z")->shape, (std::vector<int64_t>{281474976710656, 32768, 0}));
}

TEST(HostileFiles, OtherKindsOfFilesAreNamed) {
    const std::string dir = test_dir("hostile_kinds");
    const std::pair<std::string, const char*> cases[] = {
        {std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16), "this is a PNG image, not a checkpoint"},
        {"\xff\xd8\xff\xe0 JFIF", "JPEG image"},
        {std::string("RIFF\0\0\0\0WEBPVP8 ", 16), "WebP image"},
        {std::string("PK\x03\x04", 4) + "archive/data.pkl", "zip archive"},
        {std::string("\x80\x02}q\0", 5), "Python pickle"},
        {"version https://git-lfs.github.com/spec/v1\noid sha256:0", "Git LFS pointer"},
        {"  {\"_class_name\": \"UNet2DConditionModel\"}", "JSON file"},
        {"<!DOCTYPE html><html>", "HTML"},
        {"hello world, this is text", "it starts with 68 65 6c 6c 6f 20 77 6f \"hello wo\""},
    };
    for (const auto& [bytes, expect] : cases) {
        SCOPED_TRACE(expect);
        const Status st = add_file(dir + "/x.safetensors", bytes);
        ASSERT_FALSE(st.ok());
        EXPECT_TRUE(contains(st.message(), expect)) << st.message();
    }
}

// A safetensors header of 0x0580 = 1408 bytes: its length starts 80 05 like a pickle of
// protocol 5, and it is read as the safetensors file it is (the T5 fixture of sd3_tiny in
// diffusers names has this length).
TEST(HostileFiles, SafetensorsWhoseLengthStartsLikeAPickleIsRead) {
    const std::string dir = test_dir("hostile_pickle_like_length");
    for (uint8_t protocol : {2, 5}) {
        std::string header = R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})";
        const size_t length = 0x80 + 256u * protocol;
        header += std::string(length - header.size(), ' ');
        std::string bytes(8, '\0');
        for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((length >> (8 * i)) & 0xff);
        ASSERT_EQ(static_cast<uint8_t>(bytes[0]), 0x80);
        ASSERT_EQ(static_cast<uint8_t>(bytes[1]), protocol);
        bytes += header + std::string(4, '\0');
        SCOPED_TRACE(length);
        const Status st = add_file(dir + "/x.safetensors", bytes);
        EXPECT_TRUE(st.ok()) << st.message();
    }
}

TEST(HostileFiles, ConvertRefusesDevicesFoldersAndDanglingLinksBeforeReading) {
    const std::string dir = test_dir("hostile_convert_out");
    write_safetensors(dir + "/in.safetensors", {f32_tensor("w", {2, 2})});
    TensorIndex ix;
    ASSERT_TRUE(ix.add(dir + "/in.safetensors").ok());

    Status st = convert_to_gguf(ix, "/dev/full", -1);
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), "character device")) << st.message();
    struct stat sb;
    ASSERT_EQ(stat("/dev/full", &sb), 0);
    EXPECT_TRUE(S_ISCHR(sb.st_mode));

    ASSERT_EQ(symlink("/dev/null", (dir + "/null.gguf").c_str()), 0);
    st = convert_to_gguf(ix, dir + "/null.gguf", -1);
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), "symbolic link to a character device")) << st.message();
    ASSERT_EQ(lstat((dir + "/null.gguf").c_str(), &sb), 0);
    EXPECT_TRUE(S_ISLNK(sb.st_mode));

    ASSERT_EQ(symlink("nowhere/x.gguf", (dir + "/dangling.gguf").c_str()), 0);
    st = convert_to_gguf(ix, dir + "/dangling.gguf", -1);
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), "symbolic link")) << st.message();

    st = convert_to_gguf(ix, dir, -1);
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), "is a folder")) << st.message();

    // A link to a regular file is followed: the file is replaced, the link stays.
    write_bytes(dir + "/real.gguf", "old");
    ASSERT_EQ(symlink("real.gguf", (dir + "/link.gguf").c_str()), 0);
    ASSERT_TRUE(convert_to_gguf(ix, dir + "/link.gguf", -1).ok());
    ASSERT_EQ(lstat((dir + "/link.gguf").c_str(), &sb), 0);
    EXPECT_TRUE(S_ISLNK(sb.st_mode));
    TensorIndex back;
    ASSERT_TRUE(back.add(dir + "/real.gguf").ok());
    EXPECT_NE(back.find("w"), nullptr);
}

// A sharded component's index is read with the same bounds as a header: nesting and size.
TEST(HostileFiles, DeepShardIndexIsRefused) {
    const std::string dir = test_dir("hostile_deep_index");
    write_bytes(dir + "/model_index.json", R"({"_class_name": "StableDiffusionPipeline"})");
    make_dirs(dir + "/unet");
    const std::string deep(100000, '[');
    write_bytes(dir + "/unet/diffusion_pytorch_model.safetensors.index.json",
                "{\"weight_map\": {\"a\": " + deep + std::string(deep.size(), ']') + "}}");
    TensorIndex ix;
    const double t0 = cpu_now();
    const Status st = ix.add(dir);
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), "nests deeper than 16")) << st.message();
    EXPECT_TRUE(printable_one_line(st.message())) << st.message();
    EXPECT_LT(seconds_since(t0), 1.0 * kSlowdown);
}

// The GGUF files convert writes are read by ggml's own reader too (other tools use it).
TEST(HostileFiles, ConvertedGgufReadsWithGgml) {
    const std::string dir = test_dir("hostile_ggml_compat");
    const std::string long_name(80, 'n');
    write_safetensors(dir + "/in.safetensors",
                      {f32_tensor("a.weight", {4, 8}), f16_tensor("b.bias", {8}),
                       f32_tensor(long_name, {2, 3, 1, 2, 2})},
                      {{"note", std::string("multi\nline")}});
    TensorIndex ix;
    ASSERT_TRUE(ix.add(dir + "/in.safetensors").ok());
    ASSERT_TRUE(convert_to_gguf(ix, dir + "/out.gguf", -1).ok());
    gguf_init_params p{};
    p.no_alloc = true;
    gguf_context* ctx = gguf_init_from_file((dir + "/out.gguf").c_str(), p);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(gguf_get_n_tensors(ctx), 3);
    EXPECT_EQ(gguf_find_tensor(ctx, "a.weight"), 0);
    EXPECT_EQ(gguf_get_tensor_type(ctx, 1), GGML_TYPE_F16);  // stored type kept
    EXPECT_STREQ(gguf_get_tensor_name(ctx, 2), "ggdiff.t2");
    const int64_t note = gguf_find_key(ctx, "note");
    ASSERT_GE(note, 0);
    EXPECT_STREQ(gguf_get_val_str(ctx, note), "multi\nline");
    EXPECT_EQ(gguf_get_val_u32(ctx, gguf_find_key(ctx, "ggdiff.format_version")), 1u);
    gguf_free(ctx);
}

}  // namespace
}  // namespace ggdiff
