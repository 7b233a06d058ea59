// The family registry is the one identity of a family: `ggdiff -M info` names it and
// `ggdiff -M convert` writes that name, for every golden fixture set in ../shared/golden (and
// in tests/golden) and for every registered family; files of no family are "unknown" with what
// was looked for; a family ggdiff recognises but cannot run stops before loading.
//
// The fixtures are written here as sparse safetensors files (the real tensor list: names,
// shapes and F16 type; the data a hole of zeros, so a 2.7 GB list costs no disk): -M info reads
// headers only. For -M convert, which reads every byte, each tensor keeps its name and inner
// dimensions and gets an outermost dimension of 1 (3 where it holds fused q, k, v): what
// detection reads, the names and the context width of attn2.to_k, survives.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../golden/e2e_support.h"
#include "../support/wan_vae_diffusers.h"
#include "families/registry.h"
#include "ggdiff.h"
#include "io/tensor_index.h"

namespace ggdiff {
namespace {

namespace fs = std::filesystem;
using e2e::run_ggdiff;
using e2e::RunResult;

// The family each golden set's model is: "<suite>" or "<suite>/<model key>". A new golden set
// fails the test until it is named here.
const std::map<std::string, std::string> kGoldenFamilies = {
    {"sd1_mc32", "sd1"},
    {"sd1_extras/sd1", "sd1"},
    {"sd1_extras/sd1+esrgan_x2", "sd1"},
    {"sd1_extras/sd1+esrgan_x4_old", "sd1"},
    {"sd1_lora", "sd1"},
    {"vae_tiling", "sd1"},  // tests/golden: tiled decodes of sd1_mc32 recorded with the reference
    {"sd1_inpaint", "sd1"},
    {"sd1_control", "sd1"},
    {"sdxl_tiny", "sdxl"},
    {"photomaker_tiny/v1", "sdxl"},  // tests/golden: SDXL with a PhotoMaker v1 (--photo-maker)
    {"photomaker_tiny/v2", "sdxl"},  // and a v2
    {"flux_tiny", "flux"},
    {"kontext_tiny", "flux"},  // Kontext is a FLUX.1 checkpoint: nothing in the file differs
    {"qwen_tiny/Q", "qwen_image"},
    {"qwen_tiny/L", "qwen_image_layered"},
    {"qwen_edit_tiny", "qwen_image"},  // the edit models share Qwen Image's DiT
    {"zimage_tiny", "z_image"},
    {"sd3_tiny", "sd3"},
    {"sd3_lora", "sd3"},  // tests/golden
    {"chroma_tiny", "chroma"},
    {"chroma_radiance_tiny/V", "chroma_radiance"},  // tests/golden
    {"chroma_radiance_tiny/X", "chroma_radiance"},
    {"flux2_tiny", "flux2"},
    {"wan_tiny", "wan"},
    {"wan_moe", "wan"},      // tests/golden: a high-noise expert as well
    {"wan_vace", "wan"},     // tests/golden: VACE blocks
    {"wan_i2v", "wan"},      // tests/golden: image-to-video (img_emb)
    {"flow_sde/F", "flux"},  // tests/golden
    {"flow_sde/Q", "qwen_image"},
    {"flux_slg", "flux"},              // tests/golden
    {"pulid_tiny/id1", "flux"},        // tests/golden: with PuLID-FLUX (--pulid-weights)
    {"pulid_tiny/id2", "flux"},        // another identity
    {"qwen_edit_2511", "qwen_image"},  // tests/golden
    {"dit_circular/F", "flux"},        // tests/golden
    {"dit_circular/Z", "z_image"},
    {"dit_circular/Q", "qwen_image"},
    {"dit_circular/C", "chroma"},
    {"dit_circular/K", "flux2"},
    {"dit_circular/S", "sd3"},
    {"ovis_tiny/O", "ovis_image"},  // tests/golden: FLUX.1 blocks with SwiGLU MLPs
    {"longcat_tiny/E", "longcat"},  // tests/golden: LongCat-Image-Edit (an LLM with a vision tower)
    {"longcat_tiny/L", "longcat"},  // tests/golden: FLUX.1's layout with a 3584-wide txt_in
    {"anima_tiny/A", "anima"},      // tests/golden: Cosmos-Predict2 DiT + LLM adapter
    {"ernie_tiny", "ernie_image"},  // tests/golden: shared-adaLN DiT, Ministral 3 text
    {"hidream_o1", "hidream_o1"},   // tests/golden: a Qwen3-VL LLM as the DiT, on pixels
    {"minit2i_tiny", "minit2i"},    // tests/golden: a pixel-space DiT on T5 states
    {"krea2_tiny", "krea2"},        // tests/golden: single-stream DiT on stacked LLM states
    {"sefi_tiny", "sefi_image"},    // tests/golden: FLUX.2 DiT with a dual timestep embedding
    {"boogu_tiny/T", "boogu_image"},  // tests/golden: double/single-stream DiT on Qwen3-VL states
    {"boogu_tiny/V", "boogu_image"},  // with an LLM that has a Qwen3-VL vision tower
    {"pid_tiny", "pid"},   // tests/golden: pixel-space DiT on Gemma 2 states and a FLUX VAE latent
    {"pid_flux2", "pid"},  // tests/golden: the PiD variant on a FLUX.2 VAE latent
    {"ideogram4_tiny/D", "ideogram4"},  // tests/golden: 4608-wide DiT on 13 Qwen3-VL states
    {"ideogram4_tiny/U", "ideogram4"},  // with its unconditional DiT
    {"lens_tiny", "lens"},              // tests/golden: MMDiT on four stacked GPT-OSS states (GGUF)
    {"ltx_tiny", "ltx2"},  // tests/golden: audio-video DiT, embeddings connectors, Gemma 3 (GGUF)
    {"ltx_tiny_cfg", "ltx2"},   // ltx_tiny's CFG case with a negative prompt
    {"ltx_i2v", "ltx2"},        // ltx_tiny with an x32 VAE encoder, for -i
    {"ltx_flf2v", "ltx2"},      // the same for --end-img
    {"ltx_lora", "ltx2"},       // ltx_tiny with a ComfyUI-named LoRA
    {"ltx_hires/t2v", "ltx2"},  // ltx_tiny and its latent upscalers (--hires)
    {"ltx_hires/i2v", "ltx2"},  // the same with the x32 VAE encoder
};

// The part flags -M info and -M convert read (others, e.g. --upscale-model, are left out).
const std::set<std::string> kPartFlags = {"-m",       "--diffusion-model", "--vae", "--clip_l",
                                          "--clip_g", "--t5xxl",           "--llm", "--taesd"};

struct TensorLine {
    std::string name;
    std::vector<int64_t> shape;
};

std::vector<TensorLine> read_tensor_list(const std::string& path) {
    std::vector<TensorLine> out;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        const size_t hash = line.find('#');
        if (hash != std::string::npos) line.resize(hash);
        std::istringstream ls(line);
        TensorLine t;
        std::string shape;
        if (!(ls >> t.name >> shape)) continue;
        if (shape != "-") {
            std::stringstream ss(shape);
            std::string d;
            while (std::getline(ss, d, ',')) t.shape.push_back(std::stoll(d));
        }
        out.push_back(t);
    }
    return out;
}

// A safetensors file of F16 tensors whose data is a hole (or, with `outer_one`, each tensor's
// outermost dimension cut to 1 or 3 and the data written).
void write_fixture(const std::string& list, const std::string& out, bool outer_one) {
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    uint64_t off = 0;
    for (TensorLine t : read_tensor_list(list)) {
        // 3 where the dimension holds fused q, k, v (open_clip's in_proj), which the reader
        // splits in three.
        if (outer_one && !t.shape.empty()) t.shape[0] = t.shape[0] % 3 == 0 ? 3 : 1;
        uint64_t n = 2;
        for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
        h[t.name] = {{"dtype", "F16"}, {"shape", t.shape}, {"data_offsets", {off, off + n}}};
        off += n;
    }
    ASSERT_GT(off, 0u) << list;
    const std::string header = h.dump();
    const uint64_t len = header.size();
    {
        std::ofstream f(out, std::ios::binary);
        f.write(reinterpret_cast<const char*>(&len), 8);
        f.write(header.data(), static_cast<std::streamsize>(header.size()));
        if (outer_one) {
            const std::string zeros(off, '\0');
            f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
        }
    }
    if (!outer_one) {
        ASSERT_EQ(truncate(out.c_str(), static_cast<off_t>(8 + len + off)), 0);
    }
}

struct FixtureSet {
    std::string label;                                       // "qwen_tiny/Q"
    std::vector<std::pair<std::string, std::string>> files;  // (flag, tensor list path)
};

// "shared/fixtures/x" -> its path; "tests/fixtures/x" (this repository's lists) -> its path.
std::string shared_path(const std::string& rel) {
    if (rel.rfind("tests/", 0) == 0) return std::string(GGDIFF_SOURCE_DIR) + "/" + rel;
    return e2e::shared_dir() + "/" + rel.substr(rel.find('/') + 1);
}

void add_files(const nlohmann::json& list, FixtureSet& set) {
    for (const auto& f : list) {
        const std::string flag = f.value("flag", "-m");
        if (kPartFlags.count(flag)) set.files.emplace_back(flag, shared_path(f["tensors"]));
    }
}

// Every model of every golden manifest (../shared/golden/*/ and tests/golden/*/).
std::vector<FixtureSet> golden_sets() {
    std::vector<FixtureSet> sets;
    std::vector<fs::path> manifests;
    for (const std::string& root :
         {e2e::shared_dir() + "/golden", std::string(GGDIFF_SOURCE_DIR) + "/tests/golden"}) {
        if (!fs::is_directory(root)) continue;
        for (const auto& d : fs::directory_iterator(root)) {
            if (fs::is_regular_file(d.path() / "manifest.json")) {
                manifests.push_back(d.path() / "manifest.json");
            }
        }
    }
    std::sort(manifests.begin(), manifests.end());
    for (const fs::path& m : manifests) {
        std::ifstream in(m);
        const nlohmann::json j = nlohmann::json::parse(in);
        const std::string suite = m.parent_path().filename().string();
        const nlohmann::json& fx = j["fixture"];
        if (fx.contains("models")) {
            for (const auto& [key, files] : fx["models"].items()) {
                FixtureSet s{suite + "/" + key, {}};
                add_files(files, s);
                // A set of no model part (an upscaler alone) names no family.
                if (!s.files.empty()) sets.push_back(s);
            }
        } else if (fx.contains("files")) {
            FixtureSet s{suite, {}};
            add_files(fx["files"], s);
            sets.push_back(s);
        } else if (fx.contains("tensors")) {
            sets.push_back({suite, {{"-m", shared_path(fx["tensors"])}}});
        }
    }
    return sets;
}

// Writes the set's files into `dir` and returns the arguments that name them.
std::vector<std::string> materialize(const FixtureSet& set, const std::string& dir,
                                     bool outer_one) {
    std::vector<std::string> args;
    for (const auto& [flag, list] : set.files) {
        const std::string out = dir + "/" + fs::path(list).stem().string() + ".safetensors";
        if (!fs::exists(out)) write_fixture(list, out, outer_one);
        args.push_back(flag);
        args.push_back(out);
    }
    return args;
}

std::string family_line(const std::string& info) {
    std::smatch m;
    static const std::regex re("family:\\s+([^\\n]*)");
    return std::regex_search(info, m, re) ? m[1].str() : "(no family line)";
}

struct Family {
    std::string id, name;
    bool supported;
};

std::vector<Family> registered() {
    char* text = nullptr;
    EXPECT_EQ(ggdiff_list_families(&text), 0) << ggdiff_last_error();
    std::vector<Family> out;
    for (const auto& f : nlohmann::json::parse(text ? text : "[]")) {
        out.push_back({f["id"], f["name"], f["supported"]});
    }
    std::free(text);
    return out;
}

const Family* find(const std::vector<Family>& all, const std::string& id) {
    for (const Family& f : all)
        if (f.id == id) return &f;
    return nullptr;
}

class FamilyWalk : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!fs::exists(e2e::binary_path())) GTEST_SKIP() << "no ggdiff binary";
        dir_ = e2e::fresh_dir();  // one folder per test: ctest runs them in parallel
    }
    std::string dir_;
};

// -M info on each golden set names the family the table says; the diffusion model alone,
// given bare as -m, is named the same (the family's own layout files it).
TEST_F(FamilyWalk, InfoNamesTheFamilyOfEveryGoldenSet) {
    const std::vector<Family> all = registered();
    const std::vector<FixtureSet> sets = golden_sets();
    ASSERT_GE(sets.size(), 10u);
    std::set<std::string> seen;
    for (const FixtureSet& set : sets) {
        SCOPED_TRACE(set.label);
        auto want = kGoldenFamilies.find(set.label);
        ASSERT_NE(want, kGoldenFamilies.end())
            << "golden set " << set.label << " is new: name its family in kGoldenFamilies";
        const Family* fam = find(all, want->second);
        ASSERT_NE(fam, nullptr) << want->second << " is not a registered family";
        seen.insert(fam->id);
        const std::string sparse = dir_ + "/sparse";
        fs::create_directories(sparse);
        std::vector<std::string> args = {"-M", "info"};
        const auto files = materialize(set, sparse, false);
        args.insert(args.end(), files.begin(), files.end());
        RunResult r = run_ggdiff(args, dir_ + "/logs");
        ASSERT_TRUE(r.succeeded()) << r.describe();
        const std::string line = family_line(r.out);
        EXPECT_TRUE(std::regex_search(
            line, std::regex("^" + fam->id + " \\(" +
                             std::regex_replace(fam->name, std::regex("[.()+/]"), "\\$&"))))
            << line;
        EXPECT_EQ(line.find("not supported yet") != std::string::npos, !fam->supported) << line;

        // The block segments the recipe declares for layer split are in its weights.
        const FamilyRecipe* recipe = family_by_id(fam->id);
        ASSERT_NE(recipe, nullptr);
        if (recipe->load) {
            ASSERT_FALSE(recipe->block_segments.empty()) << fam->id;
        }
        for (const std::string& seg : recipe->block_segments) {
            bool found = false;
            for (const auto& [flag, list] : set.files) {
                if (flag != "-m" && flag != "--diffusion-model") continue;
                for (const TensorLine& t : read_tensor_list(list)) {
                    found = found || t.name.find(seg + ".") != std::string::npos;
                }
            }
            EXPECT_TRUE(found) << fam->id << " declares block segment " << seg;
        }

        // The diffusion model on its own, bare, as a user downloads it.
        for (size_t i = 0; i + 1 < files.size(); i += 2) {
            if (files[i] != "--diffusion-model") continue;
            RunResult bare = run_ggdiff({"-M", "info", "-m", files[i + 1]}, dir_ + "/logs");
            ASSERT_TRUE(bare.succeeded()) << bare.describe();
            EXPECT_EQ(family_line(bare.out).substr(0, fam->id.size() + 1), fam->id + " ")
                << bare.out;
        }
    }
    // Z-Image among them (the family the old detector missed).
    EXPECT_TRUE(seen.count("z_image"));
}

// A diffusers WanPipeline folder, given as -m: -M info names wan and counts the VAE, whose
// vae/ is in diffusers AutoencoderKLWan names (the Wan 2.1 VAE of the wan_tiny set, renamed).
// The transformer/ and text_encoder/ hold the set's DiT and umT5 as they are.
TEST_F(FamilyWalk, InfoNamesWanOfADiffusersPipelineFolder) {
    const std::string pipe = dir_ + "/wan_pipeline";
    for (const char* sub : {"transformer", "vae", "text_encoder"}) {
        fs::create_directories(pipe + "/" + sub);
    }
    std::ofstream(pipe + "/model_index.json") << R"({"_class_name": "WanPipeline"})";
    // The VAE's tensor list in diffusers names.
    const std::string renamed = dir_ + "/wan_vae_diffusers.tensors";
    {
        std::ofstream out(renamed);
        for (const TensorLine& t :
             read_tensor_list(shared_path("shared/fixtures/qwen_vae.tensors"))) {
            std::string dims;
            for (int64_t d : t.shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
            out << wan_vae_test::to_diffusers(t.name) << " " << dims << "\n";
        }
    }
    write_fixture(shared_path("shared/fixtures/wan_1_3b_dit.tensors"),
                  pipe + "/transformer/diffusion_pytorch_model.safetensors", false);
    write_fixture(renamed, pipe + "/vae/diffusion_pytorch_model.safetensors", false);
    write_fixture(shared_path("shared/fixtures/wan_umt5.tensors"),
                  pipe + "/text_encoder/model.safetensors", false);
    RunResult r = run_ggdiff({"-M", "info", "-m", pipe}, dir_ + "/logs");
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_EQ(family_line(r.out).substr(0, 4), "wan ") << r.out;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, std::regex("\\n  vae +([^\\n]*)"))) << r.out;
    EXPECT_NE(m[1].str().rfind("0 ", 0), 0u) << r.out;
    // The log says the VAE was renamed to the original names.
    EXPECT_NE((r.out + r.err).find("diffusers Wan VAE renamed"), std::string::npos) << r.err;
}

// -M convert writes the registry's id as ggdiff.family, for every golden set.
TEST_F(FamilyWalk, ConvertWritesTheFamilyOfEveryGoldenSet) {
    for (const FixtureSet& set : golden_sets()) {
        SCOPED_TRACE(set.label);
        auto want = kGoldenFamilies.find(set.label);
        ASSERT_NE(want, kGoldenFamilies.end()) << set.label;
        const std::string small = dir_ + "/outer1";
        fs::create_directories(small);
        const std::string out =
            dir_ + "/" + std::regex_replace(set.label, std::regex("[/+]"), "_") + ".gguf";
        std::vector<std::string> args = {"-M", "convert"};
        const auto files = materialize(set, small, true);
        args.insert(args.end(), files.begin(), files.end());
        args.insert(args.end(), {"-o", out});
        RunResult r = run_ggdiff(args, dir_ + "/logs");
        ASSERT_TRUE(r.succeeded()) << r.describe();
        TensorIndex back;
        ASSERT_TRUE(back.add(out).ok());
        EXPECT_EQ(back.metadata().at("ggdiff.family"), want->second);
        fs::remove(out);
    }
}

// Every registered family is covered: by a golden set above, or by a variant of one made here
// (sd2: the SD1 fixture with a 1024-wide cross-attention context).
TEST_F(FamilyWalk, EveryRegisteredFamilyIsNamedByInfo) {
    std::set<std::string> covered;
    for (const auto& [set, family] : kGoldenFamilies) covered.insert(family);
    // SD2: SD1's layout with OpenCLIP ViT-H's 1024-wide context.
    {
        const std::string list = dir_ + "/sd2.tensors";
        std::ofstream out(list);
        for (const TensorLine& t :
             read_tensor_list(e2e::shared_dir() + "/fixtures/sd1_mc32.tensors")) {
            std::vector<int64_t> shape = t.shape;
            if (t.name.find("attn2.to_k.weight") != std::string::npos ||
                t.name.find("attn2.to_v.weight") != std::string::npos) {
                shape[1] = 1024;
            }
            out << t.name << " ";
            for (size_t i = 0; i < shape.size(); ++i) out << (i ? "," : "") << shape[i];
            out << (shape.empty() ? "-" : "") << "\n";
        }
        out.close();
        const std::string file = dir_ + "/sd2.safetensors";
        write_fixture(list, file, false);
        RunResult r = run_ggdiff({"-M", "info", "-m", file}, dir_ + "/logs");
        ASSERT_TRUE(r.succeeded()) << r.describe();
        EXPECT_EQ(family_line(r.out).substr(0, 4), "sd2 ") << r.out;
        covered.insert("sd2");
    }
    // LTX-2 (its golden set has yet to land): its DiT's signature tensors; generation with the
    // DiT alone stops before loading, naming the part file it needs (tests/cli/ltx_e2e_test.cpp
    // runs the whole model).
    {
        const std::string list = dir_ + "/ltx2.tensors";
        {
            std::ofstream out(list);
            out << "model.diffusion_model.adaln_single.emb.timestep_embedder.linear_1.bias 64\n"
                << "model.diffusion_model.patchify_proj.weight 64,16\n"
                << "model.diffusion_model.audio_patchify_proj.weight 32,128\n";
        }
        const std::string file = dir_ + "/ltx2.safetensors";
        write_fixture(list, file, false);
        RunResult r = run_ggdiff({"-M", "info", "-m", file}, dir_ + "/logs");
        ASSERT_TRUE(r.succeeded()) << r.describe();
        EXPECT_EQ(family_line(r.out).substr(0, 5), "ltx2 ") << r.out;
        RunResult g = run_ggdiff({"-m", file, "-p", "x", "-o", dir_ + "/x.png"}, dir_ + "/logs");
        EXPECT_TRUE(g.failed_cleanly()) << g.describe();
        EXPECT_TRUE(e2e::contains(g.err,
                                  "LTX-2 needs its text projections and embeddings "
                                  "connectors: pass --embeddings-connectors"))
            << g.describe();
        covered.insert("ltx2");
    }
    for (const Family& f : registered()) {
        EXPECT_TRUE(covered.count(f.id))
            << "registered family " << f.id
            << " has no fixture here: add a golden set or a variant to this test";
    }
}

// A file of no known family: "unknown", and every family's signature listed.
TEST_F(FamilyWalk, UnknownFilesSayWhatWasLookedFor) {
    const std::string list = dir_ + "/odd.tensors";
    {
        std::ofstream out(list);
        out << "encoder.layers.0.weight 8,8\nhead.bias 8\n";
    }
    const std::string file = dir_ + "/odd.safetensors";
    write_fixture(list, file, false);
    RunResult r = run_ggdiff({"-M", "info", "-m", file}, dir_ + "/logs");
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_EQ(family_line(r.out), "unknown") << r.out;
    EXPECT_NE(r.out.find("looked for:"), std::string::npos) << r.out;
    for (const Family& f : registered()) {
        EXPECT_TRUE(
            std::regex_search(r.out, std::regex("(looked for:|\\n)\\s+" + f.id + ": model\\.")))
            << f.id << " missing from:\n"
            << r.out;
    }
    // Generation refuses it with the same list.
    RunResult g = run_ggdiff({"-m", file, "-p", "x", "-o", dir_ + "/x.png"}, dir_ + "/logs");
    EXPECT_TRUE(g.failed_cleanly()) << g.describe();
    EXPECT_TRUE(e2e::contains(g.err, "cannot tell which model family")) << g.describe();
    EXPECT_TRUE(e2e::contains(g.err, "z_image: model.diffusion_model.cap_embedder"))
        << g.describe();
}

// A family that is recognised but not runnable stops before loading, naming itself.
TEST_F(FamilyWalk, DetectOnlyFamiliesFailBeforeLoading) {
    const std::vector<Family> all = registered();
    size_t checked = 0;
    for (const FixtureSet& set : golden_sets()) {
        auto want = kGoldenFamilies.find(set.label);
        if (want == kGoldenFamilies.end()) continue;
        const Family* fam = find(all, want->second);
        if (!fam || fam->supported) continue;
        SCOPED_TRACE(set.label);
        const std::string sparse = dir_ + "/sparse";
        fs::create_directories(sparse);
        std::vector<std::string> args = materialize(set, sparse, false);
        args.insert(args.end(), {"-p", "a cat", "-W", "64", "-H", "64", "-o", dir_ + "/x.png"});
        RunResult r = run_ggdiff(args, dir_ + "/logs", 60);
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        EXPECT_TRUE(
            e2e::contains(r.err, fam->id + " models (" + fam->name + ") are not supported yet"))
            << r.describe();
        EXPECT_FALSE(fs::exists(dir_ + "/x.png"));
        ++checked;
    }
    // Every family of a golden set runs today (Wan was the last detect-only one); a family
    // added as detect-only is walked above.
    EXPECT_EQ(checked, 0u);
}

}  // namespace
}  // namespace ggdiff
