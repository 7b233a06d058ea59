// LoRA on the LTX-2.3 DiT, end to end on the tiny recipe parts (tests/fixtures/ltx_recipe_*:
// video 64 wide, audio 32 wide, 2 blocks; see tests/cli/ltx_e2e_test.cpp), a one-frame 64x64
// -M vid_gen request written as a PNG: the same modules of both blocks (video self- and
// cross-attention, the video feed-forward, the audio-to-video attention's output) as ComfyUI
// names in kohya pairs ("diffusion_model.transformer_blocks.0.attn1.to_q.lora_up/lora_down" +
// ".alpha") and in PEFT pairs ("....lora_A/lora_B"), diffusers / PEFT names
// ("transformer.transformer_blocks.0.attn1.to_q.lora_A") and kohya names
// ("lora_unet_transformer_blocks_0_attn1_to_q") give the same image, which differs from the
// image without a LoRA; at weight 0 the image is the one without a LoRA; a LoRA on modules the
// DiT does not have is reported by name.
#include <gtest/gtest.h>

#include <algorithm>

#include "../golden/e2e_support.h"
#include "../io/io_test_util.h"
#include "../support/ltx_parts.h"
#include "lora_forms.h"

namespace ggdiff::e2e {
namespace {

using namespace lora_forms;

std::vector<std::string> model() {
    std::vector<std::string> a = {"-M", "vid_gen"};
    const std::vector<std::string> files = ltx_parts::part_args();
    a.insert(a.end(), files.begin(), files.end());
    return a;
}

std::vector<std::string> request() {
    return {"-p", "a red cat",      "-W", "64",    "-H", "64", "--steps", "2", "-s", "42", "-t",
            "2",  "--video-frames", "1",  "--fps", "16"};
}

struct Module {
    const char* name;
    Pair p;
};

// The fixture's widths: video 64, feed-forward 256, audio 32.
std::vector<Module> modules() {
    return {{"transformer_blocks.0.attn1.to_q", pair(64, 64, 41)},
            {"transformer_blocks.1.attn1.to_v", pair(64, 64, 42)},
            {"transformer_blocks.0.attn2.to_out.0", pair(64, 64, 43)},
            {"transformer_blocks.1.ff.net.0.proj", pair(64, 256, 44)},
            {"transformer_blocks.0.ff.net.2", pair(256, 64, 45)},
            {"transformer_blocks.1.audio_to_video_attn.to_out.0", pair(32, 64, 46)}};
}

class LoraLtx : public ::testing::Test {
  protected:
    void SetUp() override {
        const std::vector<std::string> m = model();
        for (size_t i = 3; i < m.size(); i += 2) {
            ASSERT_TRUE(std::filesystem::exists(m[i]))
                << "missing " << m[i] << " (run through ctest)";
        }
        dir_ = fresh_dir();
    }

    // One LoRA file dir/NAME.safetensors of `modules` named by `form`.
    void write(const std::string& name, const std::vector<Module>& mods,
               const std::function<void(std::vector<FakeTensor>&, const std::string&, const Pair&)>&
                   form) const {
        std::vector<FakeTensor> t;
        for (const Module& m : mods) form(t, m.name, m.p);
        ggdiff::testing::write_safetensors(dir_ + "/" + name + ".safetensors", t);
    }

    std::string dir_;
};

TEST_F(LoraLtx, ComfyPeftAndKohyaFormsGiveTheSameImage) {
    const std::vector<Module> mods = modules();
    write("comfy_kohya", mods, [](auto& t, const std::string& m, const Pair& p) {
        kohya(t, "diffusion_model." + m, p);
    });
    write("comfy_peft", mods,
          [](auto& t, const std::string& m, const Pair& p) { peft(t, "diffusion_model." + m, p); });
    write("diffusers", mods,
          [](auto& t, const std::string& m, const Pair& p) { peft(t, "transformer." + m, p); });
    write("kohya", mods, [](auto& t, const std::string& m, const Pair& p) {
        std::string k = "lora_unet_" + m;
        std::replace(k.begin(), k.end(), '.', '_');
        kohya(t, k, p);
    });
    expect_forms_agree(model(), request(), dir_,
                       {"comfy_kohya", "comfy_peft", "diffusers", "kohya"});
}

// <lora:comfy:0> is the image without a LoRA; <lora:comfy:1> is not.
TEST_F(LoraLtx, WeightZeroIsNoLora) {
    write("comfy", modules(),
          [](auto& t, const std::string& m, const Pair& p) { peft(t, "diffusion_model." + m, p); });
    auto run = [&](const std::string& tag, const std::string& out) {
        std::vector<std::string> args = model();
        args.insert(args.end(), {"--lora-model-dir", dir_, "-o", dir_ + "/" + out});
        std::vector<std::string> req = request();
        req[1] += tag;
        args.insert(args.end(), req.begin(), req.end());
        return run_ggdiff(args, dir_, 600);
    };
    const RunResult plain = run("", "plain.png");
    ASSERT_TRUE(plain.succeeded()) << plain.describe();
    const RunResult zero = run("<lora:comfy:0>", "zero.png");
    ASSERT_TRUE(zero.succeeded()) << zero.describe();
    const RunResult one = run("<lora:comfy:1>", "one.png");
    ASSERT_TRUE(one.succeeded()) << one.describe();
    const ImageDiff z = compare_images(dir_ + "/zero.png", dir_ + "/plain.png");
    ASSERT_TRUE(z.ok) << z.error;
    EXPECT_LE(z.mean_abs, 0.5) << "weight 0 changed the image, max " << z.max_abs;
    const ImageDiff o = compare_images(dir_ + "/one.png", dir_ + "/plain.png");
    ASSERT_TRUE(o.ok) << o.error;
    EXPECT_GT(o.mean_abs, 2.0) << "weight 1 changed nothing";
    std::printf("weight 0 vs none %.3f, weight 1 vs none %.3f\n", z.mean_abs, o.mean_abs);
}

// Modules the DiT does not have (a third block, a misspelt member) are reported by name; the
// module it has is applied.
TEST_F(LoraLtx, UnmatchedModulesAreReported) {
    const std::vector<Module> mods = {{"transformer_blocks.0.attn1.to_q", pair(64, 64, 41)},
                                      {"transformer_blocks.2.attn1.to_q", pair(64, 64, 42)},
                                      {"transformer_blocks.0.attn1.to_qq", pair(64, 64, 43)}};
    write("odd", mods,
          [](auto& t, const std::string& m, const Pair& p) { peft(t, "diffusion_model." + m, p); });
    const RunResult r = lora_forms::generate(model(), request(), dir_, "odd");
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err, "LoRA odd: 2 of its modules match no weight of this LTX-2 model"))
        << r.err;
    EXPECT_TRUE(contains(r.err, "diffusion_model.transformer_blocks.2.attn1.to_q.lora_A")) << r.err;
    EXPECT_TRUE(contains(r.err, "diffusion_model.transformer_blocks.0.attn1.to_qq.lora_A"))
        << r.err;
    EXPECT_TRUE(contains(r.err, "LoRA: 1 file(s), 1 updates merged")) << r.err;
}

}  // namespace
}  // namespace ggdiff::e2e
