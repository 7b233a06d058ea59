#include <gtest/gtest.h>

#include "io/checkpoint_file.h"
#include "io/mapped_file.h"
#include "io/tensor_index.h"
#include "io_test_util.h"

namespace ggdiff {
namespace {

using namespace ggdiff::testing;

TEST(Safetensors, IndexesEveryDtypeAndMetadata) {
    const std::string dir = test_dir("st_dtypes");
    std::vector<FakeTensor> ts = {
        f32_tensor("a.f32", {2, 3}),
        f16_tensor("b.f16", {4}),
        {"c.f64", "F64", {2}, to_bytes(std::vector<double>{1.5, -2.25})},
        {"d.bf16", "BF16", {2}, to_bytes(std::vector<uint16_t>{0x3F80, 0xC000})},  // 1, -2
        {"e.i64", "I64", {1, 3}, to_bytes(std::vector<int64_t>{0, 1, 76})},
        {"f.i32", "I32", {1}, to_bytes(std::vector<int32_t>{-7})},
        {"g.i16", "I16", {1}, to_bytes(std::vector<int16_t>{300})},
        {"h.i8", "I8", {1}, to_bytes(std::vector<int8_t>{-3})},
        {"i.u8", "U8", {1}, to_bytes(std::vector<uint8_t>{200})},
        {"j.bool", "BOOL", {2}, to_bytes(std::vector<uint8_t>{1, 0})},
        {"k.e4m3", "F8_E4M3", {2}, to_bytes(std::vector<uint8_t>{0x38, 0xC0})},  // 1, -2
        {"l.e5m2", "F8_E5M2", {2}, to_bytes(std::vector<uint8_t>{0x3C, 0xC0})},  // 1, -2
        {"m.scalar", "F32", {}, to_bytes(std::vector<float>{42.0f})},
        {"n.empty", "F32", {0, 5}, ""},
    };
    const std::string path = dir + "/all.safetensors";
    write_safetensors(path, ts, {{"format", "pt"}, {"note", "hello"}});

    TensorIndex ix;
    ASSERT_TRUE(ix.add(path).ok());
    ASSERT_EQ(ix.size(), ts.size());
    EXPECT_EQ(ix.metadata().at("note"), "hello");
    EXPECT_EQ(ix.files().size(), 1u);

    const TensorInfo* a = ix.find("a.f32");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->dtype, DType::F32);
    EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(a->ne(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(a->nbytes, 24u);
    EXPECT_EQ(a->ggml_type, GGML_TYPE_F32);
    std::vector<float> v;
    ASSERT_TRUE(ix.read_f32(*a, v).ok());
    EXPECT_EQ(v, pattern(6));

    auto expect_values = [&](const char* name, std::vector<float> want) {
        SCOPED_TRACE(name);
        const TensorInfo* t = ix.find(name);
        ASSERT_NE(t, nullptr);
        std::vector<float> got;
        ASSERT_TRUE(ix.read_f32(*t, got).ok());
        EXPECT_EQ(got, want);
    };
    expect_values("c.f64", {1.5f, -2.25f});
    expect_values("d.bf16", {1.0f, -2.0f});
    expect_values("e.i64", {0, 1, 76});
    expect_values("f.i32", {-7});
    expect_values("g.i16", {300});
    expect_values("h.i8", {-3});
    expect_values("i.u8", {200});
    expect_values("j.bool", {1, 0});
    expect_values("k.e4m3", {1.0f, -2.0f});
    expect_values("l.e5m2", {1.0f, -2.0f});
    expect_values("m.scalar", {42.0f});
    expect_values("n.empty", {});

    EXPECT_EQ(ix.find("k.e4m3")->ggml_type, -1);
    EXPECT_EQ(ix.find("m.scalar")->ne(), (std::vector<int64_t>{1}));
    // raw() points at the stored bytes.
    EXPECT_EQ(std::memcmp(ix.raw(*ix.find("b.f16")), ts[1].data.data(), 8), 0);
}

TEST(Safetensors, KeepsFileOrderAndAbsoluteOffsets) {
    const std::string dir = test_dir("st_order");
    const std::string path = dir + "/m.safetensors";
    write_safetensors(path, {f32_tensor("z", {2}), f32_tensor("a", {3})});
    auto map = MappedFile::open(path);
    ASSERT_TRUE(map.ok());
    auto h = read_safetensors_header(**map);
    ASSERT_TRUE(h.ok()) << h.status().message();
    ASSERT_EQ(h->tensors.size(), 2u);
    EXPECT_EQ(h->tensors[0].name, "z");
    EXPECT_EQ(h->tensors[1].offset, h->tensors[0].offset + 8);
    EXPECT_EQ((*map)->size(), h->tensors[1].offset + 12);
}

TEST(Safetensors, LaterRoleFileReplacesItsPrefix) {
    const std::string dir = test_dir("st_replace");
    write_safetensors(dir + "/full.safetensors",
                      {f32_tensor("model.diffusion_model.out.2.weight", {4, 4}),
                       f32_tensor("first_stage_model.decoder.conv_in.weight", {2, 2}, 1),
                       f32_tensor("first_stage_model.decoder.stale.weight", {2}, 1)});
    write_safetensors(dir + "/vae.safetensors", {f32_tensor("decoder.conv_in.weight", {2, 2}, 9)});
    TensorIndex ix;
    ASSERT_TRUE(ix.add(dir + "/full.safetensors").ok());
    ASSERT_TRUE(ix.add(dir + "/vae.safetensors", prefix_for_role("vae")).ok());
    EXPECT_EQ(ix.size(), 2u);
    EXPECT_FALSE(ix.has("first_stage_model.decoder.stale.weight"));
    const TensorInfo* t = ix.find("first_stage_model.decoder.conv_in.weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->file, 1u);
    EXPECT_EQ(t->source_name, "decoder.conv_in.weight");
    std::vector<float> v;
    ASSERT_TRUE(ix.read_f32(*t, v).ok());
    EXPECT_EQ(v, pattern(4, 9));
}

TEST(Safetensors, FailedAddLeavesIndexUnchanged) {
    const std::string dir = test_dir("st_atomic");
    write_safetensors(dir + "/ok.safetensors", {f32_tensor("a", {2})});
    write_bytes(dir + "/bad.safetensors", "garbage!garbage!");
    TensorIndex ix;
    ASSERT_TRUE(ix.add(dir + "/ok.safetensors").ok());
    EXPECT_FALSE(ix.add(dir + "/bad.safetensors").ok());
    EXPECT_EQ(ix.size(), 1u);
    EXPECT_EQ(ix.files().size(), 1u);
}

TEST(Safetensors, CollidingCanonicalNamesAreAnError) {
    const std::string dir = test_dir("st_collide");
    write_safetensors(
        dir + "/x.safetensors",
        {f32_tensor("cond_stage_model.model.ln_final.weight", {4}),
         f32_tensor("cond_stage_model.transformer.text_model.final_layer_norm.weight", {4})});
    TensorIndex ix;
    Status st = ix.add(dir + "/x.safetensors");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("both map to"), std::string::npos) << st.message();
}

TEST(Safetensors, RolePrefixes) {
    EXPECT_EQ(prefix_for_role("model"), "");
    EXPECT_EQ(prefix_for_role("diffusion-model"), "model.diffusion_model.");
    EXPECT_EQ(prefix_for_role("Diffusion_Model"), "model.diffusion_model.");
    EXPECT_EQ(prefix_for_role("vae"), "first_stage_model.");
    EXPECT_EQ(prefix_for_role("clip_l"), "text_encoders.clip_l.");
    EXPECT_EQ(prefix_for_role("clip-g"), "text_encoders.clip_g.");
    EXPECT_EQ(prefix_for_role("t5xxl"), "text_encoders.t5xxl.");
    EXPECT_EQ(prefix_for_role("llm"), "text_encoders.llm.");
    EXPECT_EQ(component_of("model.diffusion_model.x"), Component::Diffusion);
    EXPECT_EQ(component_of("cond_stage_model.transformer.x"), Component::TextEncoder);
    EXPECT_EQ(component_of("conditioner.embedders.0.x"), Component::TextEncoder);
    EXPECT_EQ(component_of("text_encoders.t5xxl.shared.weight"), Component::TextEncoder);
    EXPECT_EQ(component_of("first_stage_model.decoder.x"), Component::Vae);
    EXPECT_EQ(component_of("model_ema.decay"), Component::Other);
}

}  // namespace
}  // namespace ggdiff
