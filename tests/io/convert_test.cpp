#include <gtest/gtest.h>

#include <cmath>

#include "io/tensor_convert.h"
#include "io/tensor_index.h"
#include "io/weight_type.h"
#include "io_test_util.h"

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

TensorInfo info(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::F32) {
    TensorInfo t;
    t.name = name;
    t.shape = std::move(shape);
    t.dtype = dtype;
    t.ggml_type = dtype_to_ggml(dtype);
    uint64_t n = 0;
    stored_nbytes(dtype, t.ggml_type, t.shape, &n);
    t.nbytes = n;
    return t;
}

// Converts F32 data to `type` and back; returns the max abs error.
double round_trip_error(int type, const std::vector<float>& src, int64_t ne0) {
    TensorInfo t = info("w", {static_cast<int64_t>(src.size()) / ne0, ne0});
    std::vector<uint8_t> packed(weight_nbytes(t, type));
    EXPECT_TRUE(
        convert_tensor(t, reinterpret_cast<const uint8_t*>(src.data()), type, packed.data()).ok());
    TensorInfo q = t;
    q.dtype = dtype_from_ggml(type);
    q.ggml_type = type;
    q.nbytes = packed.size();
    std::vector<float> back(src.size());
    EXPECT_TRUE(convert_tensor(q, packed.data(), GGML_TYPE_F32, back.data()).ok());
    double e = 0;
    for (size_t i = 0; i < src.size(); ++i) e = std::max(e, double(std::fabs(src[i] - back[i])));
    return e;
}

TEST(Convert, ErrorsWithinTypeBounds) {
    const std::vector<float> src = pattern(1 << 16, 3);  // values in [-1, 1); many chunks
    EXPECT_EQ(round_trip_error(GGML_TYPE_F32, src, 256), 0.0);
    EXPECT_LE(round_trip_error(GGML_TYPE_F16, src, 256), std::ldexp(1.0, -11));
    EXPECT_LE(round_trip_error(GGML_TYPE_BF16, src, 256), std::ldexp(1.0, -8));
    EXPECT_LE(round_trip_error(GGML_TYPE_Q8_0, src, 256), 1.0 / 127 + 1e-3);
    EXPECT_LE(round_trip_error(GGML_TYPE_Q4_0, src, 256), 1.0 / 7 + 1e-2);
    EXPECT_LE(round_trip_error(GGML_TYPE_Q4_K, src, 256), 0.15);
    EXPECT_LE(round_trip_error(GGML_TYPE_Q6_K, src, 256), 0.05);
    EXPECT_GT(round_trip_error(GGML_TYPE_Q2_K, src, 256), 0.0);
}

TEST(Convert, StoredFloatTypesWiden) {
    // BF16 stored -> F16 target goes through F32.
    std::vector<uint16_t> bf = {0x3F80, 0xBF00, 0x4040};  // 1, -0.5, 3
    TensorInfo t = info("w", {3}, DType::BF16);
    std::vector<ggml_fp16_t> out(3);
    ASSERT_TRUE(
        convert_tensor(t, reinterpret_cast<const uint8_t*>(bf.data()), GGML_TYPE_F16, out.data())
            .ok());
    EXPECT_EQ(ggml_fp16_to_fp32(out[0]), 1.0f);
    EXPECT_EQ(ggml_fp16_to_fp32(out[1]), -0.5f);
    EXPECT_EQ(ggml_fp16_to_fp32(out[2]), 3.0f);
}

TEST(Convert, Float8Decoding) {
    EXPECT_EQ(f8_e4m3_to_f32(0x38), 1.0f);
    EXPECT_EQ(f8_e4m3_to_f32(0x7E), 448.0f);
    EXPECT_EQ(f8_e4m3_to_f32(0xFE), -448.0f);
    EXPECT_EQ(f8_e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
    EXPECT_TRUE(std::isnan(f8_e4m3_to_f32(0x7F)));
    EXPECT_EQ(f8_e5m2_to_f32(0x3C), 1.0f);
    EXPECT_EQ(f8_e5m2_to_f32(0x7B), 57344.0f);
    EXPECT_EQ(f8_e5m2_to_f32(0x01), std::ldexp(1.0f, -16));
    EXPECT_TRUE(std::isinf(f8_e5m2_to_f32(0x7C)));
    EXPECT_TRUE(std::isnan(f8_e5m2_to_f32(0x7D)));
}

TEST(Convert, ClearErrors) {
    std::vector<float> src(3 * 100, 0.5f);
    TensorInfo t = info("odd", {3, 100});
    std::vector<uint8_t> dst(4096);
    Status st =
        convert_tensor(t, reinterpret_cast<const uint8_t*>(src.data()), GGML_TYPE_Q8_0, dst.data());
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("not a multiple of the q8_0 block size 32"), std::string::npos)
        << st.message();

    std::vector<int32_t> ints(64, 1);
    TensorInfo i = info("ids", {2, 32}, DType::I32);
    st = convert_tensor(i, reinterpret_cast<const uint8_t*>(ints.data()), GGML_TYPE_Q8_0,
                        dst.data());
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("integer tensor cannot be quantized"), std::string::npos);
    EXPECT_FALSE(convert_tensor(i, reinterpret_cast<const uint8_t*>(ints.data()), GGML_TYPE_IQ2_XXS,
                                dst.data())
                     .ok());
}

TEST(WeightType, ParseNames) {
    EXPECT_EQ(*parse_weight_type("f16"), GGML_TYPE_F16);
    EXPECT_EQ(*parse_weight_type("F32"), GGML_TYPE_F32);
    EXPECT_EQ(*parse_weight_type("BF16"), GGML_TYPE_BF16);
    EXPECT_EQ(*parse_weight_type("q4_K"), GGML_TYPE_Q4_K);
    EXPECT_EQ(*parse_weight_type("Q4_k"), GGML_TYPE_Q4_K);
    EXPECT_EQ(*parse_weight_type("q8_0"), GGML_TYPE_Q8_0);
    for (const char* n : {"q5_0", "q5_1", "q4_0", "q4_1", "q5_K", "q6_K", "q3_K", "q2_K"}) {
        EXPECT_TRUE(parse_weight_type(n).ok()) << n;
    }
    auto bad = parse_weight_type("q7");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("unknown weight type 'q7'"), std::string::npos);
    EXPECT_NE(bad.status().message().find("q4_K"), std::string::npos);
}

TEST(WeightType, Rules) {
    const int q4k = GGML_TYPE_Q4_K;
    const std::string d = "model.diffusion_model.";
    EXPECT_EQ(choose_weight_type(info(d + "x.proj.weight", {512, 512}), q4k), q4k);
    EXPECT_EQ(choose_weight_type(info(d + "x.proj.bias", {512}), q4k), GGML_TYPE_F32);
    EXPECT_EQ(choose_weight_type(info(d + "x.proj.bias", {512}), GGML_TYPE_F16), GGML_TYPE_F32);
    EXPECT_EQ(choose_weight_type(info(d + "x.norm.weight", {512, 2}), q4k), GGML_TYPE_F16);
    EXPECT_EQ(choose_weight_type(info(d + "norm_out.linear.weight", {512, 512}), q4k), q4k);
    EXPECT_EQ(choose_weight_type(info(d + "small.weight", {16, 32}), GGML_TYPE_Q8_0),
              GGML_TYPE_F16);
    EXPECT_EQ(choose_weight_type(info(d + "odd.weight", {64, 320}), q4k), GGML_TYPE_F16);
    EXPECT_EQ(choose_weight_type(info(d + "odd.weight", {64, 320}), GGML_TYPE_Q8_0),
              GGML_TYPE_Q8_0);
    EXPECT_EQ(choose_weight_type(info(d + "conv.weight", {320, 320, 3, 3}), q4k), GGML_TYPE_F16);
    EXPECT_EQ(choose_weight_type(info(d + "linear.weight", {320, 320}), GGML_TYPE_BF16),
              GGML_TYPE_BF16);
    EXPECT_EQ(
        choose_weight_type(info("first_stage_model.decoder.mid.attn_1.q.weight", {512, 512}), q4k),
        GGML_TYPE_F16);
    const std::string te = "cond_stage_model.transformer.text_model.embeddings.";
    EXPECT_EQ(choose_weight_type(info(te + "token_embedding.weight", {49408, 768}), q4k),
              GGML_TYPE_Q8_0);
    EXPECT_EQ(choose_weight_type(info(te + "token_embedding.weight", {49408, 768}), GGML_TYPE_Q4_0),
              GGML_TYPE_Q4_0);
    EXPECT_EQ(choose_weight_type(info(te + "position_embedding.weight", {77, 768}), q4k),
              GGML_TYPE_F16);
    EXPECT_EQ(choose_weight_type(info(te + "position_ids", {1, 77}, DType::I64), q4k),
              GGML_TYPE_I64);
    // Keep.
    EXPECT_EQ(choose_weight_type(info("a", {4, 4}, DType::BF16), -1), GGML_TYPE_BF16);
    EXPECT_EQ(choose_weight_type(info("a", {4, 4}, DType::F8_E4M3), -1), GGML_TYPE_F16);
    EXPECT_EQ(choose_weight_type(info("a", {4}, DType::F64), -1), GGML_TYPE_F32);
    EXPECT_EQ(choose_weight_type(info("a", {4}, DType::BOOL), -1), GGML_TYPE_F32);
    TensorInfo q = info("a", {4, 256});
    q.dtype = DType::GGML;
    q.ggml_type = GGML_TYPE_Q5_K;
    EXPECT_EQ(choose_weight_type(q, -1), GGML_TYPE_Q5_K);
}

}  // namespace
}  // namespace ggdiff
