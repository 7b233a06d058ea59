#include <gguf.h>
#include <gtest/gtest.h>

#include <cmath>

#include "io/gguf_writer.h"
#include "io/model_info.h"
#include "io/tensor_index.h"
#include "io/weight_type.h"
#include "io_test_util.h"

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

const std::string kLongName =
    "model.diffusion_model.output_blocks.11.1.transformer_blocks.0.attn1.to_out.0.weight";

std::vector<FakeTensor> sample_tensors(bool with_empty) {
    std::vector<FakeTensor> out = {
        f32_tensor(kLongName, {64, 64}, 1),
        f16_tensor("model.diffusion_model.out.2.bias", {4}, 2),
        f16_tensor("model.diffusion_model.input_blocks.0.0.weight", {32, 4, 3, 3}, 3),
        {"cond_stage_model.transformer.text_model.embeddings.position_ids",
         "I64",
         {1, 77},
         to_bytes(std::vector<int64_t>(77, 5))},
        f32_tensor("first_stage_model.decoder.mid.attn_1.q.weight", {8, 8, 1, 1}, 4),
        f16_tensor("video.conv3d.weight", {2, 3, 2, 2, 2}, 5),  // 5-D
        {"scalar", "F32", {}, to_bytes(std::vector<float>{3.0f})},
        {"f8", "F8_E4M3", {2, 2}, to_bytes(std::vector<uint8_t>{0x38, 0xC0, 0x00, 0x40})},
    };
    if (with_empty) out.push_back({"empty", "F32", {0, 4}, ""});
    return out;
}

TEST(Gguf, RoundTripKeepsNamesShapesAndValues) {
    // (The empty tensor sends the file through ggdiff's own header parser; the round trip
    // without it, through ggml's, is below.)
    const std::string dir = test_dir("gguf_roundtrip");
    write_safetensors(dir + "/in.safetensors", sample_tensors(true), {{"source", "unit test"}});
    TensorIndex in;
    ASSERT_TRUE(in.add(dir + "/in.safetensors").ok());

    size_t calls = 0;
    const std::string out_path = dir + "/out.gguf";
    Status st =
        convert_to_gguf(in, out_path, -1, [&](size_t done, size_t total, const std::string&) {
            ++calls;
            EXPECT_LE(done, total);
        });
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(calls, in.size());

    TensorIndex back;
    ASSERT_TRUE(back.add(out_path).ok());
    ASSERT_EQ(back.size(), in.size());
    EXPECT_EQ(back.metadata().at("source"), "unit test");
    EXPECT_EQ(back.metadata().at("ggdiff.family"), "unknown");
    for (const TensorInfo& a : in.tensors()) {
        SCOPED_TRACE(a.name);
        const TensorInfo* b = back.find(a.name);
        ASSERT_NE(b, nullptr);
        EXPECT_EQ(b->shape, a.shape);
        EXPECT_EQ(b->ggml_type, choose_weight_type(a, -1));
        std::vector<float> va, vb;
        ASSERT_TRUE(in.read_f32(a, va).ok());
        ASSERT_TRUE(back.read_f32(*b, vb).ok());
        EXPECT_EQ(va, vb);  // keep: exact (F8 widened to F16 losslessly)
    }
    EXPECT_EQ(back.find("f8")->dtype, DType::F16);
    EXPECT_EQ(back.find("empty")->shape, (std::vector<int64_t>{0, 4}));
    EXPECT_EQ(back.find(kLongName)->dtype, DType::F32);
    // No temporary file left behind.
    EXPECT_EQ(std::system(("ls " + dir + " | grep -q tmp").c_str()) == 0, false);
}

TEST(Gguf, QuantizedConversionFollowsTheRules) {
    const std::string dir = test_dir("gguf_q8");
    write_safetensors(dir + "/in.safetensors", sample_tensors(false));
    TensorIndex in;
    ASSERT_TRUE(in.add(dir + "/in.safetensors").ok());
    ASSERT_TRUE(convert_to_gguf(in, dir + "/q8.gguf", GGML_TYPE_Q8_0).ok());
    TensorIndex back;
    ASSERT_TRUE(back.add(dir + "/q8.gguf").ok());
    EXPECT_EQ(back.find(kLongName)->ggml_type, GGML_TYPE_Q8_0);
    EXPECT_EQ(back.find(kLongName)->dtype, DType::GGML);
    EXPECT_EQ(back.find("model.diffusion_model.out.2.bias")->ggml_type, GGML_TYPE_F32);
    EXPECT_EQ(back.find("model.diffusion_model.input_blocks.0.0.weight")->ggml_type, GGML_TYPE_F16);
    EXPECT_EQ(
        back.find("cond_stage_model.transformer.text_model.embeddings.position_ids")->ggml_type,
        GGML_TYPE_I64);
    EXPECT_EQ(back.find("first_stage_model.decoder.mid.attn_1.q.weight")->ggml_type, GGML_TYPE_F16);
    // Through ggml's reader: shapes come back exactly from ggdiff.tensor_shapes.
    for (const TensorInfo& t : in.tensors()) EXPECT_EQ(back.find(t.name)->shape, t.shape) << t.name;

    std::vector<float> a, b;
    ASSERT_TRUE(in.read_f32(*in.find(kLongName), a).ok());
    ASSERT_TRUE(back.read_f32(*back.find(kLongName), b).ok());
    double max_err = 0;
    for (size_t i = 0; i < a.size(); ++i)
        max_err = std::max(max_err, double(std::fabs(a[i] - b[i])));
    EXPECT_LT(max_err, 1.0 / 127 + 1e-3);  // q8_0: half a step of amax/127
    EXPECT_GT(max_err, 0.0);
}

TEST(Gguf, ConvertSkipsEmaAndFailsCleanly) {
    const std::string dir = test_dir("gguf_ema");
    write_safetensors(dir + "/in.safetensors",
                      {f32_tensor("model.diffusion_model.out.2.weight", {4, 4}),
                       f32_tensor("model_ema.diffusion_modelout2weight", {4, 4}),
                       {"model_ema.decay", "F32", {}, to_bytes(std::vector<float>{0.999f})}});
    TensorIndex in;
    ASSERT_TRUE(in.add(dir + "/in.safetensors").ok());
    ASSERT_TRUE(convert_to_gguf(in, dir + "/out.gguf", GGML_TYPE_F16).ok());
    TensorIndex back;
    ASSERT_TRUE(back.add(dir + "/out.gguf").ok());
    EXPECT_EQ(back.size(), 1u);
    EXPECT_EQ(back.find("model.diffusion_model.out.2.weight")->ggml_type, GGML_TYPE_F16);

    // Unwritable destination: an error, and nothing left behind.
    Status st = convert_to_gguf(in, dir + "/no/such/dir/out.gguf", -1);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("cannot create"), std::string::npos) << st.message();
    EXPECT_FALSE(convert_to_gguf(TensorIndex(), dir + "/empty.gguf", -1).ok());
}

// A GGUF written by another tool (ggml names, quantized data, no ggdiff tables).
TEST(Gguf, ReadsForeignQuantizedFiles) {
    const std::string dir = test_dir("gguf_foreign");
    const int64_t ne0 = 256, ne1 = 4;
    std::vector<float> src = pattern(ne0 * ne1, 7);
    std::vector<uint8_t> q(ggml_row_size(GGML_TYPE_Q4_K, ne0) * ne1);
    ggml_quantize_chunk(GGML_TYPE_Q4_K, src.data(), q.data(), 0, ne1, ne0, nullptr);

    ggml_init_params p{};
    p.mem_size = 4 * ggml_tensor_overhead();
    p.no_alloc = true;
    ggml_context* ctx = ggml_init(p);
    ggml_tensor* t = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_K, ne0, ne1);
    ggml_set_name(t, "double_blocks.0.img_attn.qkv.weight");
    t->data = q.data();
    ggml_tensor* b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    ggml_set_name(b, "double_blocks.0.img_attn.qkv.bias");
    std::vector<float> bias = {1, 2, 3};
    b->data = bias.data();
    gguf_context* g = gguf_init_empty();
    gguf_set_val_str(g, "general.name", "foreign");
    gguf_set_val_u32(g, "some.count", 7);
    gguf_add_tensor(g, t);
    gguf_add_tensor(g, b);
    const std::string path = dir + "/flux.gguf";
    ASSERT_TRUE(gguf_write_to_file(g, path.c_str(), false));
    gguf_free(g);
    ggml_free(ctx);

    TensorIndex ix;
    ASSERT_TRUE(ix.add(path, prefix_for_role("diffusion-model")).ok());
    const TensorInfo* w = ix.find("model.diffusion_model.double_blocks.0.img_attn.qkv.weight");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->dtype, DType::GGML);
    EXPECT_EQ(w->ggml_type, GGML_TYPE_Q4_K);
    EXPECT_EQ(w->shape, (std::vector<int64_t>{ne1, ne0}));
    EXPECT_EQ(w->nbytes, q.size());
    EXPECT_EQ(std::memcmp(ix.raw(*w), q.data(), q.size()), 0);
    EXPECT_EQ(ix.metadata().at("general.name"), "foreign");
    EXPECT_EQ(ix.metadata().at("some.count"), "7");

    std::vector<float> got;
    ASSERT_TRUE(ix.read_f32(*w, got).ok());
    double max_err = 0;
    for (size_t i = 0; i < got.size(); ++i)
        max_err = std::max(max_err, double(std::fabs(got[i] - src[i])));
    EXPECT_LT(max_err, 0.1);
    ASSERT_TRUE(
        ix.read_f32(*ix.find("model.diffusion_model.double_blocks.0.img_attn.qkv.bias"), got).ok());
    EXPECT_EQ(got, bias);
}

}  // namespace
}  // namespace ggdiff

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

// A GGUF as written by tools with a larger name limit (stable-diffusion.cpp): built by
// hand, since ggml's writer truncates names.
class HandGguf {
  public:
    void kv_str(const std::string& k, const std::string& v) {
        ++n_kv_;
        str(kv_, k);
        u32(kv_, 8);
        str(kv_, v);
    }
    void kv_u32_array(const std::string& k, const std::vector<uint32_t>& v) {
        ++n_kv_;
        str(kv_, k);
        u32(kv_, 9);
        u32(kv_, 4);
        u64(kv_, v.size());
        for (uint32_t x : v) u32(kv_, x);
    }
    void tensor(const std::string& name, std::vector<int64_t> ne, int type,
                const std::string& data) {
        ++n_t_;
        str(info_, name);
        u32(info_, static_cast<uint32_t>(ne.size()));
        for (int64_t d : ne) u64(info_, static_cast<uint64_t>(d));
        u32(info_, static_cast<uint32_t>(type));
        u64(info_, data_.size());
        data_ += data;
        data_.resize((data_.size() + 31) / 32 * 32, '\0');
    }
    std::string bytes() const {
        std::string out = "GGUF";
        u32(out, 3);
        u64(out, n_t_);
        u64(out, n_kv_);
        out += kv_ + info_;
        out.resize((out.size() + 31) / 32 * 32, '\0');
        return out + data_;
    }

  private:
    static void u32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
    static void u64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }
    static void str(std::string& s, const std::string& v) {
        u64(s, v.size());
        s += v;
    }
    std::string kv_, info_, data_;
    uint64_t n_kv_ = 0, n_t_ = 0;
};

TEST(Gguf, ReadsLongNamesFromOtherTools) {
    const std::string dir = test_dir("gguf_long");
    const std::string w_name = kLongName;
    std::vector<float> w = pattern(2 * 64, 3);
    std::vector<uint8_t> q(ggml_row_size(GGML_TYPE_Q8_0, 64) * 2);
    ggml_quantize_chunk(GGML_TYPE_Q8_0, w.data(), q.data(), 0, 2, 64, nullptr);
    std::vector<float> bias = {0.5f, -1.0f, 2.0f};
    HandGguf g;
    g.kv_str("general.name", "sd.cpp style");
    g.kv_u32_array("some.array", {1, 2, 3});
    g.tensor(w_name, {64, 2}, GGML_TYPE_Q8_0, std::string(q.begin(), q.end()));
    g.tensor("model.diffusion_model.output_blocks.11.1.transformer_blocks.0.attn1.to_out.0.bias",
             {3}, GGML_TYPE_F32, to_bytes(bias));
    const std::string bytes = g.bytes();
    const std::string path = dir + "/sdcpp.gguf";
    write_bytes(path, bytes);

    TensorIndex ix;
    Status st = ix.add(path);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(ix.size(), 2u);
    EXPECT_EQ(ix.metadata().at("general.name"), "sd.cpp style");
    const TensorInfo* t = ix.find(w_name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 64}));
    EXPECT_EQ(t->ggml_type, GGML_TYPE_Q8_0);
    std::vector<float> got;
    ASSERT_TRUE(ix.read_f32(*t, got).ok());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], w[i], 1.0 / 127 + 1e-3);
    ASSERT_TRUE(ix.read_f32(*ix.find("model.diffusion_model.output_blocks.11.1.transformer_blocks."
                                     "0.attn1.to_out.0.bias"),
                            got)
                    .ok());
    EXPECT_EQ(got, bias);

    // Truncated in the data, and in the tensor infos: clear errors.
    for (size_t cut : {bytes.size() - 24, size_t(120)}) {
        SCOPED_TRACE(cut);
        write_bytes(path, bytes.substr(0, cut));
        TensorIndex bad;
        EXPECT_FALSE(bad.add(path).ok());
    }
}

}  // namespace
}  // namespace ggdiff
