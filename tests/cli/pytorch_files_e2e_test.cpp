// PyTorch files end to end, written here from the safetensors fixtures (tests/support/
// torch_writer.h; never committed): an SD1 Lightning .ckpt draws the same image as its
// .safetensors; -M info names its family; -M convert turns it into GGUF and safetensors files
// with the same tensors; a BasicSR .pth upscales as its .safetensors does; a kohya .ckpt LoRA
// and an A1111 .pt embedding act as their safetensors twins.
#include <gtest/gtest.h>

#include <cstring>

#include "../golden/e2e_support.h"
#include "../io/io_test_util.h"
#include "../support/torch_writer.h"
#include "io/checkpoint_file.h"
#include "io/mapped_file.h"
#include "io/tensor_index.h"

namespace ggdiff::e2e {
namespace {

using ggdiff::testing::TorchTensor;

std::string storage_type(DType t) {
    switch (t) {
        case DType::F32:
            return "FloatStorage";
        case DType::F16:
            return "HalfStorage";
        case DType::BF16:
            return "BFloat16Storage";
        case DType::F64:
            return "DoubleStorage";
        case DType::I64:
            return "LongStorage";
        case DType::I32:
            return "IntStorage";
        default:
            return "";
    }
}

// The tensors of a safetensors file as a torch state dict under `wrap` ("state_dict/" for a
// Lightning .ckpt, "params_ema/" for BasicSR), their bytes read from the file as it is written.
std::vector<TorchTensor> torch_tensors_of(const std::string& path, const std::string& wrap) {
    std::vector<TorchTensor> out;
    auto map = MappedFile::open(path);
    EXPECT_TRUE(map.ok()) << path;
    if (!map.ok()) return out;
    auto h = read_safetensors_header(**map);
    EXPECT_TRUE(h.ok()) << h.status().message();
    if (!h.ok()) return out;
    for (const StoredTensor& s : h->tensors) {
        TorchTensor t;
        t.name = wrap + s.name;
        t.storage_type = storage_type(s.dtype);
        EXPECT_FALSE(t.storage_type.empty()) << s.name;
        t.shape = s.shape;
        t.file = path;
        t.file_offset = s.offset;
        t.file_bytes = s.nbytes;
        out.push_back(t);
    }
    return out;
}

std::string write_torch_copy(const std::string& src, const std::string& dst,
                             const std::string& wrap) {
    testing::write_torch_zip_file(dst, torch_tensors_of(src, wrap));
    return dst;
}

// The Lightning-layout .ckpt of the SD1 fixture, written into `dir`.
std::string sd1_ckpt(const std::string& dir) {
    return write_torch_copy(fixture_path(), dir + "/sd1_mc32.ckpt", "state_dict/");
}

std::vector<std::string> sd1_request(const std::string& model, const std::string& out,
                                     const std::string& prompt = "a red circle") {
    return {"-m",
            model,
            "-p",
            prompt,
            "-W",
            "64",
            "-H",
            "64",
            "--steps",
            "2",
            "--cfg-scale",
            "1",
            "--sampling-method",
            "euler",
            "-s",
            "5",
            "-o",
            out};
}

void expect_same_image(const std::string& a, const std::string& b) {
    const ImageDiff d = compare_images(a, b);
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_EQ(d.max_abs, 0) << a << " vs " << b << ": mean " << d.mean_abs;
}

TEST(PytorchFiles, CkptDrawsTheSameImageAsSafetensors) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    RunResult st = run_ggdiff(sd1_request(fixture_path(), dir + "/st.png"), dir, 300);
    ASSERT_TRUE(st.succeeded()) << st.describe();
    RunResult ck = run_ggdiff(sd1_request(sd1_ckpt(dir), dir + "/ckpt.png"), dir, 300);
    ASSERT_TRUE(ck.succeeded()) << ck.describe();
    EXPECT_TRUE(contains(ck.err + ck.out, "(pytorch")) << ck.describe();
    expect_same_image(dir + "/ckpt.png", dir + "/st.png");
}

TEST(PytorchFiles, InfoAndConvertToGgufAndSafetensors) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    const std::string ckpt = sd1_ckpt(dir);
    const RunResult info = run_ggdiff({"-M", "info", "-m", ckpt}, dir, 120);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "sd1")) << info.describe();

    TensorIndex original;
    ASSERT_TRUE(original.add(fixture_path()).ok());
    for (const char* ext : {".gguf", ".safetensors"}) {
        SCOPED_TRACE(ext);
        const std::string out = dir + "/converted" + ext;
        const RunResult conv = run_ggdiff({"-M", "convert", "-m", ckpt, "-o", out}, dir, 600);
        ASSERT_TRUE(conv.succeeded()) << conv.describe();
        TensorIndex back;
        ASSERT_TRUE(back.add(out).ok());
        size_t compared = 0;
        for (const TensorInfo& t : original.tensors()) {
            if (t.name.rfind("model_ema.", 0) == 0) continue;
            const TensorInfo* b = back.find(t.name);
            ASSERT_NE(b, nullptr) << t.name;
            ASSERT_EQ(b->shape, t.shape) << t.name;
            if (b->dtype != t.dtype || b->nbytes != t.nbytes) continue;  // 1-D tensors go F32
            EXPECT_EQ(std::memcmp(back.raw(*b), original.raw(t), t.nbytes), 0) << t.name;
            ++compared;
        }
        EXPECT_GT(compared, original.size() / 2);
    }
    // Quantized types are GGUF's alone.
    const RunResult q = run_ggdiff(
        {"-M", "convert", "-m", ckpt, "--type", "q8_0", "-o", dir + "/q.safetensors"}, dir, 120);
    EXPECT_TRUE(q.failed_cleanly()) << q.describe();
    EXPECT_TRUE(contains(q.err, "no quantized types")) << q.describe();
}

TEST(PytorchFiles, EsrganPthUpscalesAsItsSafetensors) {
    const std::string st =
        std::string(GGDIFF_BINARY_DIR) + "/fixtures/sd1_extras_esrgan_x2.safetensors";
    ASSERT_TRUE(fs::is_regular_file(st)) << "run through ctest: the fixture tests make it";
    const std::string dir = fresh_dir();
    const std::string pth = write_torch_copy(st, dir + "/RealESRGAN_x2.pth", "params_ema/");
    const std::string init = shared_dir() + "/golden/sd1_extras/plain.png";
    for (const std::string& model : {st, pth}) {
        const std::string out = dir + "/" + fs::path(model).extension().string().substr(1) + ".png";
        const RunResult r = run_ggdiff({"-M", "upscale", "-i", init, "--upscale-model", model, "-o",
                                        out, "--disable-image-metadata"},
                                       dir, 300);
        ASSERT_TRUE(r.succeeded()) << r.describe();
    }
    expect_same_image(dir + "/pth.png", dir + "/safetensors.png");
}

TEST(PytorchFiles, CkptLoraActsAsItsSafetensors) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string kohya =
        std::string(GGDIFF_BINARY_DIR) + "/fixtures/sd1_lora_loras/kohya.safetensors";
    ASSERT_TRUE(fs::is_regular_file(kohya)) << "run through ctest: the fixture tests make it";
    const std::string dir = fresh_dir();
    fs::create_directories(dir + "/st");
    fs::create_directories(dir + "/pt");
    fs::copy_file(kohya, dir + "/st/kohya.safetensors");
    write_torch_copy(kohya, dir + "/pt/kohya.ckpt", "");
    const std::string prompt = "a red circle<lora:kohya:1>";
    auto run_with = [&](const std::string& loras, const std::string& out) {
        std::vector<std::string> args = sd1_request(fixture_path(), out, prompt);
        args.insert(args.end(), {"--lora-model-dir", loras});
        return run_ggdiff(args, dir, 300);
    };
    RunResult a = run_with(dir + "/st", dir + "/st.png");
    ASSERT_TRUE(a.succeeded()) << a.describe();
    RunResult b = run_with(dir + "/pt", dir + "/pt.png");
    ASSERT_TRUE(b.succeeded()) << b.describe();
    expect_same_image(dir + "/pt.png", dir + "/st.png");
    // And the LoRA did act: without it the image differs.
    RunResult none = run_ggdiff(sd1_request(fixture_path(), dir + "/none.png"), dir, 300);
    ASSERT_TRUE(none.succeeded()) << none.describe();
    const ImageDiff d = compare_images(dir + "/none.png", dir + "/st.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_GT(d.mean_abs, 1.0);
}

TEST(PytorchFiles, A1111PtEmbeddingActsAsItsSafetensors) {
    ASSERT_TRUE(prerequisites_ok());
    const std::string dir = fresh_dir();
    fs::create_directories(dir + "/st");
    fs::create_directories(dir + "/pt");
    const std::vector<float> rows = testing::pattern(2 * 768, 9);
    testing::write_safetensors(dir + "/st/shiny.safetensors",
                               {{"emb_params", "F32", {2, 768}, testing::to_bytes(rows)}});
    TorchTensor token;
    token.name = "string_to_token/*";
    token.storage_type = "LongStorage";
    token.data = testing::le_bytes(265, 8);
    TorchTensor param;
    param.name = "string_to_param/*";
    param.storage_type = "FloatStorage";
    param.shape = {2, 768};
    param.data = testing::to_bytes(rows);
    testing::write_bytes(dir + "/pt/shiny.pt", testing::torch_zip({token, param}));
    for (const char* kind : {"st", "pt"}) {
        std::vector<std::string> args =
            sd1_request(fixture_path(), dir + "/" + kind + ".png", "a shiny circle");
        args.insert(args.end(), {"--embd-dir", dir + "/" + kind});
        const RunResult r = run_ggdiff(args, dir, 300);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        EXPECT_TRUE(contains(r.err + r.out, "embedding 'shiny': 2 token(s)")) << r.describe();
    }
    expect_same_image(dir + "/pt.png", dir + "/st.png");
}

}  // namespace
}  // namespace ggdiff::e2e
