// Tests of the ggdiff command-line parser (apps/cli/cli_options.*).
//
// The parser lives in the `ggdiff` binary's sources, which this suite cannot link, so it is
// compiled here directly (this file is its only translation unit in the suite).
#include "../../apps/cli/cli_options.cpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

namespace {

using ggdiff::Result;
using ggdiff::cli::CliAction;
using ggdiff::cli::CliOptions;
using ggdiff::cli::Mode;
using ggdiff::cli::parse_cli;

namespace fs = std::filesystem;

Result<CliOptions> parse(std::vector<std::string> args) {
    args.insert(args.begin(), "ggdiff");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    return parse_cli(static_cast<int>(argv.size()), argv.data());
}

// Parses and expects success; reports the parser's message otherwise.
CliOptions parse_ok(const std::vector<std::string>& args) {
    auto r = parse(args);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r.value() : CliOptions{};
}

// Parses and expects a failure; returns the message.
std::string parse_error(const std::vector<std::string>& args) {
    auto r = parse(args);
    EXPECT_FALSE(r.ok()) << "expected an error";
    return r.ok() ? std::string() : r.status().message();
}

fs::path tmp_dir() {
    fs::path dir = GGDIFF_TEST_TMP;
    fs::create_directories(dir);
    return dir;
}

fs::path write_file(const std::string& name, const std::string& text) {
    fs::path p = tmp_dir() / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
}

// A sensible value for every flag; nullopt for flags that take none. A flag in CLI_FLAGS.md
// (or added by ggdiff) without an entry here fails the test, so new flags get tested.
const std::map<std::string, std::optional<std::string>>& samples() {
    static const std::map<std::string, std::optional<std::string>> s = {
        {"--audio-vae", "audio_vae.safetensors"},
        {"--auto-fit", std::nullopt},
        {"--backend", "CPU"},
        {"--batch-count", "2"},
        {"--cache-mode", "easycache"},
        {"--cache-option", "threshold=0.25"},
        {"--canny", std::nullopt},
        {"--cfg-scale", "5.5"},
        {"--chroma-disable-dit-mask", std::nullopt},
        {"--chroma-enable-t5-mask", std::nullopt},
        {"--chroma-t5-mask-pad", "2"},
        {"--circular", std::nullopt},
        {"--circularx", std::nullopt},
        {"--circulary", std::nullopt},
        {"--clip-on-cpu", std::nullopt},
        {"--clip-skip", "2"},
        {"--clip_g", "clip_g.safetensors"},
        {"--clip_l", "clip_l.safetensors"},
        {"--clip_vision", "clip_vision.safetensors"},
        {"--color", std::nullopt},
        {"--control-image", "control.png"},
        {"--control-net-cpu", std::nullopt},
        {"--control-net", "control_net.safetensors"},
        {"--control-strength", "0.5"},
        {"--control-video", "frames"},
        {"--convert-name", std::nullopt},
        {"--diffusion-conv-direct", std::nullopt},
        {"--diffusion-fa", std::nullopt},
        {"--diffusion-model", "unet.safetensors"},
        {"--disable-auto-resize-ref-image", std::nullopt},
        {"--disable-image-metadata", std::nullopt},
        {"--eager-load", std::nullopt},
        {"--embd-dir", "embeddings"},
        {"--embeddings-connectors", "connectors.safetensors"},
        {"--end-img", "end.png"},
        {"--eta", "0.5"},
        {"--extra-sample-args", "a=1"},
        {"--extra-tiling-args", "temporal_tile_frames=2"},
        {"--fa", std::nullopt},
        {"--flow-shift", "3"},
        {"--force-sdxl-vae-conv-scale", std::nullopt},
        {"--fps", "24"},
        {"--guidance", "4"},
        {"--height", "256"},
        {"--help", std::nullopt},
        {"--high-noise-cfg-scale", "4"},
        {"--high-noise-diffusion-model", "high_noise.safetensors"},
        {"--high-noise-eta", "0.5"},
        {"--high-noise-guidance", "3"},
        {"--high-noise-img-cfg-scale", "2"},
        {"--high-noise-sampling-method", "euler"},
        {"--high-noise-skip-layer-end", "0.3"},
        {"--high-noise-skip-layer-start", "0.05"},
        {"--high-noise-skip-layers", "[7,8]"},
        {"--high-noise-slg-scale", "2.5"},
        {"--high-noise-steps", "4"},
        {"--hires-denoising-strength", "0.5"},
        {"--hires-height", "1024"},
        {"--hires-scale", "1.5"},
        {"--hires-sigmas", "1.0,0.5,0"},
        {"--hires-steps", "10"},
        {"--hires-upscale-tile-size", "256"},
        {"--hires-upscaler", "Latent"},
        {"--hires-upscalers-dir", "upscalers"},
        {"--hires-width", "1024"},
        {"--hires", std::nullopt},
        {"--image", "in.png"},
        {"--imat-in", "in.imatrix"},
        {"--imat-out", "out.imatrix"},
        {"--img-cfg-scale", "1.5"},
        {"--increase-ref-index", std::nullopt},
        {"--init-img", "init.png"},
        {"--list-devices", std::nullopt},
        {"--llm_vision", "mmproj.gguf"},
        {"--llm", "llm.gguf"},
        {"--lora-apply-mode", "at_runtime"},
        {"--lora-model-dir", "loras"},
        {"--mask", "mask.png"},
        {"--max-vram", "8"},
        {"--metadata-all", std::nullopt},
        {"--metadata-brief", std::nullopt},
        {"--metadata-format", "json"},
        {"--metadata-raw", std::nullopt},
        {"--mmap", std::nullopt},
        {"--mode", "img_gen"},
        {"--model", "other.safetensors"},
        {"--moe-boundary", "0.9"},
        {"--negative-prompt-file", "@negative.txt"},
        {"--negative-prompt", "blurry"},
        {"--offload-to-cpu", std::nullopt},
        {"--output-begin-idx", "0"},
        {"--output", "out.png"},
        {"--params-backend", "cpu"},
        {"--photo-maker", "photomaker.safetensors"},
        {"--pm-id-embed-path", "id_embed.bin"},
        {"--pm-id-images-dir", "ids"},
        {"--pm-style-strength", "30"},
        {"--prediction", "v"},
        {"--preview-interval", "2"},
        {"--preview-noisy", std::nullopt},
        {"--preview-path", "preview.png"},
        {"--preview", "tae"},
        {"--prompt-file", "@prompt.txt"},
        {"--prompt", "a cat"},
        {"--pulid-id-embedding", "pulid_id.bin"},
        {"--pulid-id-weight", "0.8"},
        {"--pulid-weights", "pulid.safetensors"},
        {"--qwen-image-layers", "4"},
        {"--qwen-image-zero-cond-t", std::nullopt},
        {"--qwen2vl_vision", "mmproj.gguf"},
        {"--qwen2vl", "qwen.gguf"},
        {"--ref-image", "ref.png"},
        {"--rng", "cpu"},
        {"--rpc-servers", "127.0.0.1:50052"},
        {"--sampler-rng", "std_default"},
        {"--sampling-method", "dpm++2m_sde"},
        {"--scheduler", "karras"},
        {"--scm-mask", "1,1,0,1"},
        {"--scm-policy", "static"},
        {"--seed", "7"},
        {"--sigmas", "14.61,7.8,3.5,0"},
        {"--skip-layer-end", "0.3"},
        {"--skip-layer-start", "0.05"},
        {"--skip-layers", "[7,8,9]"},
        {"--slg-scale", "2.5"},
        {"--split-mode", "row"},
        {"--steps", "4"},
        {"--stream-layers", std::nullopt},
        {"--strength", "0.6"},
        {"--t5xxl", "t5xxl.safetensors"},
        {"--tae", "taesd.safetensors"},
        {"--taesd-preview-only", std::nullopt},
        {"--taesd", "taesd.safetensors"},
        {"--temporal-tiling", std::nullopt},
        {"--tensor-type-rules", "^vae\\.=f16"},
        {"--threads", "2"},
        {"--timestep-shift", "250"},
        {"--type", "q8_0"},
        {"--uncond-diffusion-model", "uncond.safetensors"},
        {"--upscale-model", "esrgan.pth"},
        {"--upscale-repeats", "2"},
        {"--upscale-tile-size", "64"},
        {"--vace-strength", "0.5"},
        {"--vae-conv-direct", std::nullopt},
        {"--vae-format", "diffusers"},
        {"--vae-on-cpu", std::nullopt},
        {"--vae-relative-tile-size", "0.5x0.5"},
        {"--vae-tile-overlap", "0.25"},
        {"--vae-tile-size", "64x48"},
        {"--vae-tiling", std::nullopt},
        {"--vae", "vae.safetensors"},
        {"--verbose", std::nullopt},
        {"--video-frames", "9"},
        {"--width", "768"},
        // ggdiff additions
        {"--tokenizer", "merges.txt"},
        {"--llm-tokenizer", "qwen_tokenizer"},
        {"--fit-dry-run", std::nullopt},
        {"--version", std::nullopt},
    };
    return s;
}

// ggdiff's own flags, which CLI_FLAGS.md (sd-cli's set) does not list.
const std::set<std::string> kGgdiffAdditions = {"--tokenizer", "--fit-dry-run", "--version",
                                                "--llm-tokenizer"};

// Aliases recorded under another long name.
std::string main_name(const std::string& flag) {
    if (flag == "--tae") return "--taesd";
    if (flag == "--qwen2vl") return "--llm";
    if (flag == "--qwen2vl_vision") return "--llm_vision";
    return flag;
}

// The arguments for one flag with its sample value ("@name" = a temporary file).
std::vector<std::string> flag_args(const std::string& flag, const std::string& spelled) {
    auto it = samples().find(flag);
    if (it == samples().end()) return {};
    std::vector<std::string> args = {spelled};
    if (it->second) {
        std::string v = *it->second;
        if (!v.empty() && v[0] == '@') v = write_file(v.substr(1), "text from a file\n").string();
        args.push_back(v);
    }
    return args;
}

struct DocFlag {
    std::string long_name;
    std::string short_name;  // "" when none
};

std::vector<DocFlag> documented_flags() {
    std::ifstream in(GGDIFF_SHARED_DIR "/docs/CLI_FLAGS.md");
    EXPECT_TRUE(in.good()) << "cannot read " << GGDIFF_SHARED_DIR "/docs/CLI_FLAGS.md";
    std::vector<DocFlag> flags;
    std::regex line_re(R"(^- `(--[^`]+)`(?: \(`(-[^`]+)`\))?\s*$)");
    std::string line;
    while (std::getline(in, line)) {
        std::smatch m;
        if (std::regex_match(line, m, line_re)) flags.push_back({m[1].str(), m[2].str()});
    }
    return flags;
}

// Long flags shown by --help.
std::set<std::string> help_flags() {
    CliOptions o = parse_ok({"--help"});
    std::set<std::string> out;
    std::regex flag_re(R"(--[A-Za-z0-9][A-Za-z0-9_+-]*)");
    for (std::sregex_iterator it(o.help_text.begin(), o.help_text.end(), flag_re), end; it != end;
         ++it) {
        out.insert(it->str());
    }
    return out;
}

void expect_flag_parses(const std::string& long_name, const std::string& spelled) {
    SCOPED_TRACE(spelled);
    std::vector<std::string> tail = flag_args(long_name, spelled);
    ASSERT_FALSE(tail.empty()) << "no sample value for " << long_name
                               << " in the test's samples(); add one";
    std::vector<std::string> args = {"-m", "model.safetensors"};
    args.insert(args.end(), tail.begin(), tail.end());
    auto r = parse(args);
    ASSERT_TRUE(r.ok()) << spelled << ": " << r.status().message();
    if (long_name == "--help") {
        EXPECT_EQ(r->action, CliAction::help);
    } else if (long_name == "--version") {
        EXPECT_EQ(r->action, CliAction::version);
    } else {
        EXPECT_EQ(r->action, CliAction::run);
        EXPECT_TRUE(r->was_given(main_name(long_name))) << main_name(long_name);
    }
}

TEST(CliOptions, EveryDocumentedFlagParses) {
    std::vector<DocFlag> flags = documented_flags();
    ASSERT_GT(flags.size(), 150u);
    for (const DocFlag& f : flags) {
        expect_flag_parses(f.long_name, f.long_name);
        if (!f.short_name.empty()) expect_flag_parses(f.long_name, f.short_name);
        // --flag=value works too.
        auto s = samples().find(f.long_name);
        if (s != samples().end() && s->second && (*s->second)[0] != '@') {
            auto r = parse({"-m", "model.safetensors", f.long_name + "=" + *s->second});
            EXPECT_TRUE(r.ok()) << f.long_name << "=: " << r.status().message();
        }
    }
    for (const std::string& extra : kGgdiffAdditions) expect_flag_parses(extra, extra);
}

TEST(CliOptions, HelpListsExactlyTheKnownFlags) {
    std::set<std::string> documented = kGgdiffAdditions;
    for (const DocFlag& f : documented_flags()) documented.insert(f.long_name);
    std::set<std::string> shown = help_flags();
    for (const std::string& f : documented) {
        EXPECT_TRUE(shown.count(f)) << f << " is documented but missing from --help";
    }
    for (const std::string& f : shown) {
        EXPECT_TRUE(documented.count(f))
            << f << " is in --help but neither in CLI_FLAGS.md nor a known ggdiff addition";
    }
}

TEST(CliOptions, Defaults) {
    CliOptions o = parse_ok({"-m", "model.safetensors"});
    EXPECT_EQ(o.action, CliAction::run);
    EXPECT_EQ(o.mode, Mode::img_gen);
    EXPECT_EQ(o.model, "model.safetensors");
    EXPECT_EQ(o.models, std::vector<std::string>{"model.safetensors"});
    EXPECT_EQ(o.prompt, "");
    EXPECT_EQ(o.negative_prompt, "");
    EXPECT_EQ(o.width, 512);
    EXPECT_EQ(o.height, 512);
    EXPECT_EQ(o.steps, 20);
    EXPECT_FLOAT_EQ(o.cfg_scale, 7.0f);
    EXPECT_FALSE(o.img_cfg_scale.has_value());
    EXPECT_FLOAT_EQ(o.guidance, 3.5f);
    EXPECT_FALSE(o.eta.has_value());
    EXPECT_FALSE(o.flow_shift.has_value());
    EXPECT_EQ(o.sampling_method, "");
    EXPECT_EQ(o.scheduler, "");
    EXPECT_EQ(o.seed, 42);
    EXPECT_EQ(o.batch_count, 1);
    EXPECT_FLOAT_EQ(o.strength, 0.75f);
    EXPECT_EQ(o.clip_skip, -1);
    EXPECT_EQ(o.rng, "cuda");
    EXPECT_EQ(o.sampler_rng, "");
    EXPECT_EQ(o.output, "output.png");
    EXPECT_EQ(o.threads, -1);
    EXPECT_EQ(o.type, "");
    EXPECT_EQ(o.prediction, "");
    EXPECT_FALSE(o.vae_tiling);
    EXPECT_EQ(o.vae_tile_size_x, 32);
    EXPECT_EQ(o.vae_tile_size_y, 32);
    EXPECT_FLOAT_EQ(o.vae_tile_overlap, 0.5f);
    EXPECT_EQ(o.backend, "");
    EXPECT_EQ(o.params_backend, "");
    EXPECT_EQ(o.split_mode, "");
    EXPECT_EQ(o.max_vram, "");
    EXPECT_FALSE(o.auto_fit);
    EXPECT_FALSE(o.fit_dry_run);
    EXPECT_FALSE(o.list_devices);
    EXPECT_FALSE(o.verbose);
    EXPECT_EQ(o.metadata_format, "text");
    EXPECT_EQ(o.preview, "none");
    EXPECT_EQ(o.qwen_image_layers, 3);
    EXPECT_EQ(o.skip_layers, (std::vector<int>{7, 8, 9}));
    EXPECT_TRUE(o.sigmas.empty());
    EXPECT_EQ(o.lora_apply_mode, "auto");
    EXPECT_EQ(o.given.size(), 1u);  // only --model
    EXPECT_FALSE(o.was_given("--steps"));
    EXPECT_TRUE(ggdiff::cli::check_supported(o).ok());
    EXPECT_FALSE(o.help_text.empty());
    EXPECT_NE(o.version_text.find("ggdiff"), std::string::npos);
}

TEST(CliOptions, SdCliExampleCommandLine) {
    CliOptions o = parse_ok({"-m",
                             "model.safetensors",
                             "-p",
                             "prompt",
                             "-n",
                             "negative",
                             "-W",
                             "512",
                             "-H",
                             "512",
                             "--steps",
                             "20",
                             "--cfg-scale",
                             "7",
                             "--sampling-method",
                             "euler_a",
                             "-s",
                             "42",
                             "-b",
                             "2",
                             "-o",
                             "out.png"});
    EXPECT_EQ(o.model, "model.safetensors");
    EXPECT_EQ(o.prompt, "prompt");
    EXPECT_EQ(o.negative_prompt, "negative");
    EXPECT_EQ(o.width, 512);
    EXPECT_EQ(o.height, 512);
    EXPECT_EQ(o.steps, 20);
    EXPECT_FLOAT_EQ(o.cfg_scale, 7.0f);
    EXPECT_EQ(o.sampling_method, "euler_a");
    EXPECT_EQ(o.seed, 42);
    EXPECT_EQ(o.batch_count, 2);
    EXPECT_EQ(o.output, "out.png");
    EXPECT_TRUE(ggdiff::cli::check_supported(o).ok());
}

TEST(CliOptions, ShortForms) {
    CliOptions o =
        parse_ok({"-M",  "img_gen", "-m",  "a.gguf", "-p",       "p",  "-n",     "n",  "-W",
                  "640", "-H",      "384", "-s",     "-1",       "-b", "3",      "-o", "x.png",
                  "-t",  "4",       "-v",  "-i",     "init.png", "-r", "r1.png", "-r", "r2.png"});
    EXPECT_EQ(o.model, "a.gguf");
    EXPECT_EQ(o.prompt, "p");
    EXPECT_EQ(o.negative_prompt, "n");
    EXPECT_EQ(o.width, 640);
    EXPECT_EQ(o.height, 384);
    EXPECT_EQ(o.seed, -1);
    EXPECT_EQ(o.batch_count, 3);
    EXPECT_EQ(o.output, "x.png");
    EXPECT_EQ(o.threads, 4);
    EXPECT_TRUE(o.verbose);
    EXPECT_EQ(o.init_img, "init.png");
    EXPECT_EQ(o.ref_images, (std::vector<std::string>{"r1.png", "r2.png"}));
    EXPECT_EQ(parse_ok({"-h"}).action, CliAction::help);
}

TEST(CliOptions, ValuesAreStored) {
    CliOptions o = parse_ok({"-m",
                             "m.safetensors",
                             "--sampling-method",
                             "dpm++2m_sde",
                             "--scheduler",
                             "karras",
                             "--eta",
                             "0.25",
                             "--img-cfg-scale",
                             "1.5",
                             "--flow-shift",
                             "3",
                             "--rng",
                             "cpu",
                             "--sampler-rng",
                             "std_default",
                             "--type",
                             "q4_k",
                             "--prediction",
                             "v",
                             "--sigmas",
                             "[14.6, 7.8, 0]",
                             "--vae-tiling",
                             "--vae-tile-size",
                             "64",
                             "--vae-tile-overlap",
                             "0.25",
                             "--backend",
                             "diffusion=CUDA0&CUDA1,te=CPU",
                             "--params-backend",
                             "te=cpu",
                             "--split-mode",
                             "diffusion=row,te=layer",
                             "--max-vram",
                             "-1.5",
                             "--rpc-servers",
                             "h:1,h:2",
                             "--seed",
                             "9007199254740993",
                             "--clip-skip",
                             "2",
                             "--strength",
                             "0.6",
                             "--clip-on-cpu",
                             "--vae-on-cpu",
                             "--diffusion-fa",
                             "--fa",
                             "--mmap",
                             "--offload-to-cpu",
                             "--eager-load",
                             "--control-net-cpu",
                             "--tokenizer",
                             "tok/",
                             "--fit-dry-run"});
    EXPECT_EQ(o.sampling_method, "dpm++2m_sde");
    EXPECT_EQ(o.scheduler, "karras");
    EXPECT_FLOAT_EQ(o.eta.value_or(-1), 0.25f);
    EXPECT_FLOAT_EQ(o.img_cfg_scale.value_or(-1), 1.5f);
    EXPECT_FLOAT_EQ(o.flow_shift.value_or(-1), 3.0f);
    EXPECT_EQ(o.rng, "cpu");
    EXPECT_EQ(o.sampler_rng, "std_default");
    EXPECT_EQ(o.type, "q4_K");  // canonical spelling
    EXPECT_EQ(o.prediction, "v");
    EXPECT_EQ(o.sigmas, (std::vector<float>{14.6f, 7.8f, 0.0f}));
    EXPECT_TRUE(o.vae_tiling);
    EXPECT_EQ(o.vae_tile_size_x, 64);
    EXPECT_EQ(o.vae_tile_size_y, 64);
    EXPECT_FLOAT_EQ(o.vae_tile_overlap, 0.25f);
    EXPECT_EQ(o.backend, "diffusion=CUDA0&CUDA1,te=CPU");
    EXPECT_EQ(o.params_backend, "te=cpu");
    EXPECT_EQ(o.split_mode, "diffusion=row,te=layer");
    EXPECT_EQ(o.max_vram, "-1.5");
    EXPECT_EQ(o.rpc_servers, "h:1,h:2");
    EXPECT_EQ(o.seed, 9007199254740993LL);
    EXPECT_EQ(o.clip_skip, 2);
    EXPECT_FLOAT_EQ(o.strength, 0.6f);
    EXPECT_TRUE(o.clip_on_cpu && o.vae_on_cpu && o.control_net_cpu);
    EXPECT_TRUE(o.diffusion_fa && o.fa && o.mmap && o.offload_to_cpu && o.eager_load);
    EXPECT_EQ(o.tokenizer, "tok/");
    EXPECT_TRUE(o.fit_dry_run);
    // Harmless no-ops and implemented flags are recorded, not rejected.
    EXPECT_TRUE(ggdiff::cli::check_supported(o).ok()) << ggdiff::cli::check_supported(o).message();
}

TEST(CliOptions, ListAndPairValues) {
    CliOptions o =
        parse_ok({"-m", "m.gguf", "--skip-layers", "[1, 2]", "--high-noise-skip-layers", "3,4",
                  "--vae-relative-tile-size", "0.5x0.25", "--vae-tile-size", "32x48",
                  "--hires-sigmas", "2,1,0", "--imat-in", "a", "--imat-in", "b"});
    EXPECT_EQ(o.skip_layers, (std::vector<int>{1, 2}));
    EXPECT_EQ(o.high_noise_skip_layers, (std::vector<int>{3, 4}));
    EXPECT_FLOAT_EQ(o.vae_relative_tile_size_x, 0.5f);
    EXPECT_FLOAT_EQ(o.vae_relative_tile_size_y, 0.25f);
    EXPECT_EQ(o.vae_tile_size_x, 32);
    EXPECT_EQ(o.vae_tile_size_y, 48);
    EXPECT_EQ(o.hires_sigmas, (std::vector<float>{2, 1, 0}));
    EXPECT_EQ(o.imat_in, (std::vector<std::string>{"a", "b"}));
}

TEST(CliOptions, LastValueWins) {
    CliOptions o = parse_ok({"-m", "a.gguf", "--steps", "5", "--steps", "7", "-m", "b.gguf"});
    EXPECT_EQ(o.steps, 7);
    EXPECT_EQ(o.model, "b.gguf");
    EXPECT_EQ(o.models, (std::vector<std::string>{"a.gguf", "b.gguf"}));
    EXPECT_EQ(o.given.at("--steps"), "7");
}

TEST(CliOptions, AutoFitTakesAnOptionalOnOff) {
    EXPECT_TRUE(parse_ok({"-m", "m.gguf", "--auto-fit"}).auto_fit);
    EXPECT_TRUE(parse_ok({"-m", "m.gguf", "--auto-fit", "on"}).auto_fit);
    EXPECT_FALSE(parse_ok({"-m", "m.gguf", "--auto-fit", "off"}).auto_fit);
    EXPECT_FALSE(parse_ok({"-m", "m.gguf", "--auto-fit=off"}).auto_fit);
    EXPECT_TRUE(parse_ok({"--auto-fit", "-m", "m.gguf"}).auto_fit);
    std::string e = parse_error({"-m", "m.gguf", "--auto-fit", "maybe"});
    EXPECT_NE(e.find("--auto-fit"), std::string::npos) << e;
    EXPECT_NE(e.find("maybe"), std::string::npos) << e;
}

TEST(CliOptions, Modes) {
    EXPECT_EQ(parse_ok({"-M", "convert", "-m", "in.safetensors", "--type", "q8_0"}).output,
              "output.gguf");
    EXPECT_EQ(parse_ok({"-M", "convert", "-m", "in.safetensors", "-o", "x.gguf"}).output, "x.gguf");
    CliOptions info = parse_ok({"-M", "info", "-m", "a.safetensors", "-m", "b.gguf"});
    EXPECT_EQ(info.mode, Mode::info);
    EXPECT_EQ(info.models, (std::vector<std::string>{"a.safetensors", "b.gguf"}));
    CliOptions meta = parse_ok({"-M", "metadata", "--image", "x.png", "--metadata-format", "json"});
    EXPECT_EQ(meta.mode, Mode::metadata);
    EXPECT_EQ(meta.image, "x.png");
    EXPECT_EQ(meta.metadata_format, "json");
    EXPECT_EQ(parse_ok({"--mode", "vid_gen", "--diffusion-model", "wan.gguf"}).mode, Mode::vid_gen);
    EXPECT_EQ(parse_ok({"-M", "upscale", "--upscale-model", "x.pth", "-i", "a.png"}).mode,
              Mode::upscale);
    EXPECT_TRUE(parse_ok({"--list-devices"}).list_devices);  // needs no model
    EXPECT_EQ(parse_ok({"--version"}).action, CliAction::version);

    // Generating without a model is parsed: the CLI falls back to the built-in toy model
    // (tests/cli/default_model_test.cpp covers running it and the error when it is absent).
    CliOptions bare = parse_ok({"-p", "a cat"});
    EXPECT_EQ(bare.mode, Mode::img_gen);
    EXPECT_TRUE(bare.model.empty());
    std::string e = parse_error({"-M", "metadata"});
    EXPECT_NE(e.find("--image"), std::string::npos) << e;
    e = parse_error({"-M", "info"});
    EXPECT_NE(e.find("-m"), std::string::npos) << e;
    e = parse_error({"-M", "upscale", "-i", "a.png"});
    EXPECT_NE(e.find("--upscale-model"), std::string::npos) << e;
    e = parse_error({"-M", "bogus", "-m", "m.gguf"});
    EXPECT_NE(e.find("--mode"), std::string::npos) << e;
    EXPECT_NE(e.find("bogus"), std::string::npos) << e;
}

TEST(CliOptions, HelpShowsDescriptionsAndDefaults) {
    CliOptions o = parse_ok({"--help"});
    EXPECT_EQ(o.action, CliAction::help);
    const std::string& h = o.help_text;
    EXPECT_NE(h.find("--sampling-method"), std::string::npos);
    EXPECT_NE(h.find("euler_a_cfg_pp"), std::string::npos);
    EXPECT_NE(h.find("INT=20"), std::string::npos) << h;      // --steps default
    EXPECT_NE(h.find("FLOAT=7"), std::string::npos) << h;     // --cfg-scale default
    EXPECT_NE(h.find("output.png"), std::string::npos) << h;  // -o default
    EXPECT_NE(h.find("ggdiff -m model.safetensors"), std::string::npos) << h;
    // Help wins even after other flags.
    EXPECT_EQ(parse_ok({"-m", "m.gguf", "--steps", "5", "-h"}).action, CliAction::help);
}

TEST(CliOptions, UnknownFlagIsNamed) {
    std::string e = parse_error({"-m", "m.gguf", "--no-such-flag"});
    EXPECT_NE(e.find("--no-such-flag"), std::string::npos) << e;
    e = parse_error({"-m", "m.gguf", "--frobnicate", "3"});
    EXPECT_NE(e.find("--frobnicate"), std::string::npos) << e;
    e = parse_error({"-m", "m.gguf", "-Z"});
    EXPECT_NE(e.find("-Z"), std::string::npos) << e;
    e = parse_error({"-m", "m.gguf", "stray"});
    EXPECT_NE(e.find("stray"), std::string::npos) << e;
}

TEST(CliOptions, BadValuesAreNamed) {
    struct Case {
        std::vector<std::string> args;
        std::string flag;
        std::string value;
    };
    const std::vector<Case> cases = {
        {{"--steps", "0"}, "--steps", "0"},
        {{"--steps", "-3"}, "--steps", "-3"},
        {{"--sampling-method", "foo"}, "--sampling-method", "foo"},
        {{"--high-noise-sampling-method", "bar"}, "--high-noise-sampling-method", "bar"},
        {{"-W", "abc"}, "--width", "abc"},
        {{"-H", "0"}, "--height", "0"},
        {{"-W", "512.5"}, "--width", "512.5"},
        {{"-b", "0"}, "--batch-count", "0"},
        {{"--strength", "1.5"}, "--strength", "1.5"},
        {{"--strength", "-0.1"}, "--strength", "-0.1"},
        {{"--cfg-scale", "nan"}, "--cfg-scale", "nan"},
        {{"--cfg-scale", "x"}, "--cfg-scale", "x"},
        {{"--scheduler", "linear"}, "--scheduler", "linear"},
        {{"--rng", "gpu"}, "--rng", "gpu"},
        {{"--sampler-rng", "gpu"}, "--sampler-rng", "gpu"},
        {{"--type", "q9_0"}, "--type", "q9_0"},
        {{"--prediction", "x0"}, "--prediction", "x0"},
        {{"--split-mode", "diagonal"}, "--split-mode", "diagonal"},
        {{"--split-mode", "diffusion=tensor"}, "--split-mode", "tensor"},
        {{"--lora-apply-mode", "later"}, "--lora-apply-mode", "later"},
        {{"--preview", "png"}, "--preview", "png"},
        {{"--cache-mode", "fast"}, "--cache-mode", "fast"},
        {{"--scm-policy", "lazy"}, "--scm-policy", "lazy"},
        {{"--metadata-format", "xml"}, "--metadata-format", "xml"},
        {{"--sigmas", "1,a,0"}, "--sigmas", "1,a,0"},
        {{"--skip-layers", "[7,x]"}, "--skip-layers", "[7,x]"},
        {{"--vae-tile-size", "0x32"}, "--vae-tile-size", "0x32"},
        {{"--vae-tile-size", "big"}, "--vae-tile-size", "big"},
        {{"--vae-tile-overlap", "1"}, "--vae-tile-overlap", "1"},
        {{"--eta", "-1"}, "--eta", "-1"},
        {{"--qwen-image-layers", "-1"}, "--qwen-image-layers", "-1"},
        {{"--video-frames", "0"}, "--video-frames", "0"},
        {{"--hires-denoising-strength", "2"}, "--hires-denoising-strength", "2"},
        {{"--output-begin-idx", "-2"}, "--output-begin-idx", "-2"},
        {{"--seed", "12x"}, "--seed", "12x"},
        {{"-t", "many"}, "--threads", "many"},
    };
    for (const Case& c : cases) {
        std::vector<std::string> args = {"-m", "m.gguf"};
        args.insert(args.end(), c.args.begin(), c.args.end());
        std::string e = parse_error(args);
        EXPECT_NE(e.find(c.flag), std::string::npos) << c.flag << " not named in: " << e;
        EXPECT_NE(e.find(c.value), std::string::npos) << c.value << " not named in: " << e;
    }
}

TEST(CliOptions, MissingValueIsNamed) {
    std::string e = parse_error({"-m", "m.gguf", "--steps"});
    EXPECT_NE(e.find("--steps"), std::string::npos) << e;
    e = parse_error({"-m"});
    EXPECT_NE(e.find("--model"), std::string::npos) << e;
}

TEST(CliOptions, PromptFiles) {
    fs::path p = write_file("prompt_test.txt", "a cat\non a mat\r\n");
    fs::path n = write_file("negative_test.txt", "blurry");
    CliOptions o = parse_ok(
        {"-m", "m.gguf", "--prompt-file", p.string(), "--negative-prompt-file", n.string()});
    EXPECT_EQ(o.prompt, "a cat\non a mat");
    EXPECT_EQ(o.negative_prompt, "blurry");
    EXPECT_EQ(o.prompt_file, p.string());

    std::string missing = (tmp_dir() / "no_such_prompt.txt").string();
    std::string e = parse_error({"-m", "m.gguf", "--prompt-file", missing});
    EXPECT_NE(e.find("--prompt-file"), std::string::npos) << e;
    EXPECT_NE(e.find(missing), std::string::npos) << e;
    e = parse_error({"-m", "m.gguf", "--negative-prompt-file", tmp_dir().string()});
    EXPECT_NE(e.find("--negative-prompt-file"), std::string::npos) << e;
    e = parse_error({"-m", "m.gguf", "-p", "x", "--prompt-file", p.string()});
    EXPECT_NE(e.find("--prompt-file"), std::string::npos) << e;
}

TEST(CliOptions, PromptsMayStartWithADash) {
    CliOptions o = parse_ok({"-m", "m.gguf", "-p", "-cat-", "--max-vram", "-2"});
    EXPECT_EQ(o.prompt, "-cat-");
    EXPECT_EQ(o.max_vram, "-2");
}

// Arguments that use one entry of the not-supported table.
std::vector<std::string> unsupported_args(const ggdiff::cli::UnsupportedFlag& u) {
    std::vector<std::string> args = {"-m", "m.gguf"};
    if (u.value != nullptr && u.value[0] != '!') {
        args.insert(args.end(), {u.flag, u.value});
        if (std::string(u.value) == "upscale") args.insert(args.end(), {"--upscale-model", "x"});
    } else {
        std::vector<std::string> tail = flag_args(u.flag, u.flag);
        args.insert(args.end(), tail.begin(), tail.end());
    }
    return args;
}

TEST(CliOptions, NotYetSupportedFlagsErrorWhenUsed) {
    ASSERT_FALSE(ggdiff::cli::unsupported_flags().empty());
    for (const auto& u : ggdiff::cli::unsupported_flags()) {
        SCOPED_TRACE(u.flag);
        ASSERT_TRUE(samples().count(u.flag)) << "no sample value for " << u.flag;
        CliOptions o = parse_ok(unsupported_args(u));
        ggdiff::Status st = ggdiff::cli::check_supported(o);
        ASSERT_FALSE(st.ok());
        std::string expected = std::string(u.flag) + " ";
        if (u.value != nullptr) {
            // "!x" entries name the value that was used: the sample value.
            expected += (u.value[0] != '!' ? std::string(u.value) : *samples().at(u.flag)) + " ";
        }
        expected += "is not supported yet";
        EXPECT_NE(st.message().find(expected), std::string::npos) << st.message();
    }
    // The exact wording for the documented example.
    EXPECT_EQ(
        ggdiff::cli::check_supported(parse_ok({"-m", "m.gguf", "--control-net", "cn.safetensors"}))
            .message(),
        "--control-net is not supported yet");
    // Several at once are all reported.
    ggdiff::Status st = ggdiff::cli::check_supported(
        parse_ok({"-m", "m.gguf", "--hires", "--mask", "m.png", "--preview", "proj"}));
    EXPECT_NE(st.message().find("--hires is not supported yet"), std::string::npos);
    EXPECT_NE(st.message().find("--mask is not supported yet"), std::string::npos);
    EXPECT_NE(st.message().find("--preview proj is not supported yet"), std::string::npos);
    // Values that mean "off" are fine.
    EXPECT_TRUE(ggdiff::cli::check_supported(
                    parse_ok({"-m", "m.gguf", "--preview", "none", "--vae-format", "auto"}))
                    .ok());
    EXPECT_TRUE(
        ggdiff::cli::check_supported(parse_ok({"-m", "m.gguf", "--scheduler", "karras"})).ok());
}

TEST(CliOptions, ValueSetsMatchTheMission) {
    EXPECT_EQ(ggdiff::cli::sampler_names().size(), 18u);
    EXPECT_EQ(ggdiff::cli::rng_names(), (std::vector<std::string>{"cuda", "cpu", "std_default"}));
    for (const std::string& s : ggdiff::cli::sampler_names()) {
        EXPECT_EQ(parse_ok({"-m", "m.gguf", "--sampling-method", s}).sampling_method, s);
    }
    for (const std::string& s : ggdiff::cli::scheduler_names()) {
        EXPECT_EQ(parse_ok({"-m", "m.gguf", "--scheduler", s}).scheduler, s);
    }
    for (const std::string& s : ggdiff::cli::weight_type_names()) {
        EXPECT_EQ(parse_ok({"-m", "m.gguf", "--type", s}).type, s);
    }
    for (const std::string& s : ggdiff::cli::prediction_names()) {
        EXPECT_EQ(parse_ok({"-m", "m.gguf", "--prediction", s}).prediction, s);
    }
}

}  // namespace
