// Every malformed file gives a clear error naming the file and the problem; none crashes.
#include <gguf.h>
#include <gtest/gtest.h>

#include "io/tensor_index.h"
#include "io_test_util.h"

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

struct CorruptCase {
    const char* name;
    std::string bytes;   // file content (ignored for the directory case)
    const char* expect;  // substring of the error message
};

std::string good_header(const std::string& dtype = "F32", const std::string& shape = "[2, 2]",
                        const std::string& offsets = "[0, 16]") {
    return R"({"w": {"dtype": ")" + dtype + R"(", "shape": )" + shape + R"(, "data_offsets": )" +
           offsets + "}}";
}

std::string with_length(uint64_t n, const std::string& rest) {
    return std::string(reinterpret_cast<const char*>(&n), 8) + rest;
}

std::vector<CorruptCase> cases() {
    const std::string data16(16, '\x01');
    const std::string two = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})";
    return {
        {"empty", "", "empty file"},
        {"shorter_than_length", "abc", "truncated"},
        {"length_past_eof", with_length(1000, "{}"), "past the end of the file"},
        {"absurd_length", with_length(1ull << 40, "{}"), "exceeds the 100 MiB limit"},
        {"bad_json", safetensors_file("{\"w\": [", data16), "not valid JSON"},
        {"not_an_object", safetensors_file("[1, 2]", ""), "not a JSON object"},
        {"unknown_dtype", safetensors_file(good_header("F4"), data16), "unknown dtype 'F4'"},
        {"missing_dtype",
         safetensors_file(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", data16), "'dtype'"},
        {"negative_shape", safetensors_file(good_header("F32", "[-2, 2]"), data16),
         "non-negative integers"},
        {"offsets_out_of_range",
         safetensors_file(good_header("F32", "[2, 2]", "[0, 16]"), "12345678"),
         "run past the data section"},
        {"offsets_reversed", safetensors_file(good_header("F32", "[0]", "[8, 4]"), data16),
         "begin > end"},
        {"overlapping", safetensors_file(two, data16), "overlapping"},
        {"shape_size_mismatch", safetensors_file(good_header("F32", "[3, 2]"), data16),
         "needs 24 bytes but data_offsets span 16"},
        {"truncated_data", safetensors_file(good_header(), data16).substr(0, 40), "past"},
        {"bad_metadata", safetensors_file(R"({"__metadata__": 5})", ""), "__metadata__"},
        {"gguf_truncated_magic", "GGUF\x03", "truncated GGUF"},
        {"gguf_garbage", "GGUF" + std::string(200, '\xff'), "GGUF"},
    };
}

TEST(CorruptFiles, EachGivesAClearError) {
    const std::string dir = test_dir("corrupt");
    for (const CorruptCase& c : cases()) {
        SCOPED_TRACE(c.name);
        const std::string path = dir + "/" + c.name + ".safetensors";
        write_bytes(path, c.bytes);
        TensorIndex ix;
        Status st = ix.add(path);
        ASSERT_FALSE(st.ok());
        EXPECT_NE(st.message().find(c.expect), std::string::npos) << st.message();
        EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
        EXPECT_EQ(ix.size(), 0u);
    }
}

TEST(CorruptFiles, MissingFileAndPlainDirectory) {
    const std::string dir = test_dir("corrupt_dir");
    TensorIndex ix;
    Status st = ix.add(dir + "/nope.safetensors");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("No such file"), std::string::npos) << st.message();

    make_dirs(dir + "/folder");
    st = ix.add(dir + "/folder");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("directory"), std::string::npos) << st.message();
}

// A valid GGUF cut short inside its data, and inside its header.
TEST(CorruptFiles, TruncatedGguf) {
    const std::string dir = test_dir("corrupt_gguf");
    gguf_context* g = gguf_init_empty();
    ggml_init_params p{};
    p.mem_size = 4 * ggml_tensor_overhead();
    p.no_alloc = true;
    ggml_context* ctx = ggml_init(p);
    ggml_tensor* t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 64);
    ggml_set_name(t, "w");
    std::vector<float> data(64 * 64, 1.0f);
    t->data = data.data();
    gguf_add_tensor(g, t);
    const std::string full = dir + "/full.gguf";
    ASSERT_TRUE(gguf_write_to_file(g, full.c_str(), false));
    gguf_free(g);
    ggml_free(ctx);

    const std::string bytes = read_bytes(full);
    TensorIndex ok;
    ASSERT_TRUE(ok.add(full).ok());
    for (size_t cut : {bytes.size() - 100, size_t(60), size_t(30)}) {
        SCOPED_TRACE(cut);
        const std::string path = dir + "/cut.gguf";
        write_bytes(path, bytes.substr(0, cut));
        TensorIndex ix;
        Status st = ix.add(path);
        ASSERT_FALSE(st.ok());
        EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
    }
}

}  // namespace
}  // namespace ggdiff

#include <random>

#include "io/gguf_writer.h"

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

// Random byte flips and cuts of valid files: every add() returns, and whatever indexes
// can be read in full (no out-of-range access).
TEST(CorruptFiles, RandomMutationsNeverCrash) {
    const std::string dir = test_dir("fuzz");
    write_safetensors(dir + "/base.safetensors",
                      {f32_tensor("a.weight", {4, 8}),
                       f16_tensor("b.bias", {8}),
                       {"c", "I64", {1, 3}, to_bytes(std::vector<int64_t>{1, 2, 3})}},
                      {{"k", "v"}});
    TensorIndex base;
    ASSERT_TRUE(base.add(dir + "/base.safetensors").ok());
    ASSERT_TRUE(convert_to_gguf(base, dir + "/base.gguf", -1).ok());

    std::mt19937 rng(1234);
    int accepted = 0;
    for (const char* file : {"/base.safetensors", "/base.gguf"}) {
        const std::string bytes = read_bytes(dir + file);
        for (int iter = 0; iter < 400; ++iter) {
            std::string m = bytes;
            const int kind = iter % 3;
            if (kind == 2) {
                m.resize(rng() % m.size());
            } else {
                const int flips = 1 + static_cast<int>(rng() % 4);
                // Bias flips towards the header, where the structure is.
                const size_t range = kind == 0 ? std::min<size_t>(m.size(), 256) : m.size();
                for (int f = 0; f < flips; ++f) m[rng() % range] = static_cast<char>(rng());
            }
            const std::string path = dir + "/mutant" + (file + 5);
            write_bytes(path, m);
            TensorIndex ix;
            if (!ix.add(path).ok()) continue;
            ++accepted;
            for (const TensorInfo& t : ix.tensors()) {
                std::vector<float> v;
                (void)ix.read_f32(t, v);
            }
        }
    }
    EXPECT_GT(accepted, 0);  // some flips land in data and stay valid
}

}  // namespace
}  // namespace ggdiff
