// Tests of the ggdiff command line (apps/cli/cli_options.*): every flag is generated from the
// library's option schema, lands in exactly one support class, and hands its value to the
// library, which checks it when it is parsed.
//
// The parser lives in the `ggdiff` binary's sources, which this suite cannot link, so it is
// compiled here directly (this file is its only translation unit in the suite).
#include "../../apps/cli/cli_options.cpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

namespace {

using ggdiff::cli::CliAction;
using ggdiff::cli::CliRun;
using ggdiff::cli::parse_cli;

namespace fs = std::filesystem;

struct Parsed {
    bool ok = false;
    std::string error;
    CliRun run;
};

Parsed parse(std::vector<std::string> args) {
    args.insert(args.begin(), "ggdiff");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    Parsed p;
    p.ok = parse_cli(static_cast<int>(argv.size()), argv.data(), p.run, p.error);
    return p;
}

// Parses and expects success; reports the parser's message otherwise.
CliRun parse_ok(const std::vector<std::string>& args) {
    Parsed p = parse(args);
    EXPECT_TRUE(p.ok) << p.error;
    return std::move(p.run);
}

// Parses and expects a failure; returns the message.
std::string parse_error(const std::vector<std::string>& args) {
    Parsed p = parse(args);
    EXPECT_FALSE(p.ok) << "expected an error";
    return p.error;
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

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
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
        // Image inputs read when set: real images.
        {"--control-image", GGDIFF_SHARED_DIR "/golden/sd1_control/circle.png"},
        {"--control-net-cpu", std::nullopt},
        {"--control-net", "control_net.safetensors"},
        {"--control-strength", "0.5"},
        // A folder of frame images (checked to be a directory when set).
        {"--control-video", GGDIFF_SHARED_DIR "/golden/sd1_control"},
        {"--convert-name", std::nullopt},
        {"--diffusion-conv-direct", std::nullopt},
        {"--diffusion-fa", std::nullopt},
        {"--diffusion-model", "unet.safetensors"},
        {"--disable-auto-resize-ref-image", std::nullopt},
        {"--disable-image-metadata", std::nullopt},
        {"--eager-load", std::nullopt},
        {"--embd-dir", "embeddings"},
        {"--embeddings-connectors", "connectors.safetensors"},
        {"--end-img", GGDIFF_SHARED_DIR "/golden/sd1_control/circle.png"},
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
        {"--mask", GGDIFF_SHARED_DIR "/golden/sd1_inpaint/mask_center.png"},
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
        {"--preview", "none"},
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
        {"--vae-format", "auto"},
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
        {"--t5xxl-tokenizer", "tokenizer.json"},
        {"--fit-dry-run", std::nullopt},
        {"--phase-peaks", std::nullopt},
        {"--version", std::nullopt},
    };
    return s;
}

// ggdiff's own flags, which CLI_FLAGS.md (sd-cli's set) does not list.
const std::set<std::string> kGgdiffAdditions = {"--tokenizer",       "--fit-dry-run",
                                                "--version",         "--llm-tokenizer",
                                                "--t5xxl-tokenizer", "--phase-peaks"};

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

std::string help_text() {
    return parse_ok({"--help"}).help_text;
}

// The --help entry of one flag: from its line to the next flag's line.
std::string help_entry(const std::string& help, const std::string& flag) {
    std::regex re("(^|[ ,])" + std::regex_replace(flag, std::regex(R"([+])"), R"(\+)") +
                  "([ ,=]|$)");
    std::istringstream in(help);
    std::string line, entry;
    bool inside = false;
    while (std::getline(in, line)) {
        const bool flag_line = line.find_first_not_of(' ') != std::string::npos &&
                               line[line.find_first_not_of(' ')] == '-';
        if (flag_line) {
            if (inside) break;
            inside = std::regex_search(line, re);
        }
        if (inside) entry += line + "\n";
    }
    // One line, single spaces: the help is word-wrapped.
    std::string flat;
    for (char c : entry) {
        const bool space = c == ' ' || c == '\n';
        if (space && (flat.empty() || flat.back() == ' ')) continue;
        flat += space ? ' ' : c;
    }
    return flat;
}

// Long flags shown by --help.
std::set<std::string> help_flags() {
    const std::string h = help_text();
    std::set<std::string> out;
    std::regex flag_re(R"(--[A-Za-z0-9][A-Za-z0-9_+-]*)");
    for (std::sregex_iterator it(h.begin(), h.end(), flag_re), end; it != end; ++it) {
        out.insert(it->str());
    }
    return out;
}

ggdiff_option_desc desc_of(const std::string& flag) {
    ggdiff_option_desc d{};
    const int i = ggdiff_option_find(flag.c_str());
    EXPECT_GE(i, 0) << flag << " is not in the option schema";
    if (i >= 0) {
        EXPECT_EQ(ggdiff_option_info(i, &d), 0);
    }
    return d;
}

// Every flag of sd-cli (CLI_FLAGS.md) lands in exactly one class: it works, it is
// documented in --help as having no effect here (with the reason), or using it fails with
// "--FLAG is not supported yet". Each class is checked by what the CLI does with the flag.
TEST(FlagCoverage, EveryDocumentedFlagIsWorkingNoEffectOrNotSupportedYet) {
    const std::vector<DocFlag> flags = documented_flags();
    ASSERT_GT(flags.size(), 150u);
    const std::string help = help_text();
    std::map<int, std::vector<std::string>> classes;
    for (const DocFlag& f : flags) {
        SCOPED_TRACE(f.long_name);
        const ggdiff_option_desc d = desc_of(f.long_name);
        if (!d.name) continue;
        if (!f.short_name.empty()) {
            EXPECT_EQ(ggdiff_option_find(f.short_name.c_str()), ggdiff_option_find(d.name));
        }
        std::vector<std::string> args = {"-m", "model.safetensors"};
        const std::vector<std::string> tail = flag_args(f.long_name, f.long_name);
        ASSERT_FALSE(tail.empty()) << "no sample value for " << f.long_name;
        args.insert(args.end(), tail.begin(), tail.end());
        const std::string entry = help_entry(help, f.long_name);
        EXPECT_FALSE(entry.empty()) << f.long_name << " is missing from --help";
        classes[d.support].push_back(f.long_name);
        Parsed p = parse(args);
        switch (d.support) {
            case GGDIFF_SUPPORT_WORKS:
                EXPECT_TRUE(p.ok) << p.error;
                EXPECT_FALSE(contains(entry, "No effect here")) << entry;
                EXPECT_FALSE(contains(entry, "Not supported yet.")) << entry;
                if (p.ok && f.long_name != "--help") {
                    EXPECT_TRUE(p.run.given(d.name)) << d.name << " did not reach the library";
                }
                break;
            case GGDIFF_SUPPORT_NO_EFFECT:
                EXPECT_TRUE(p.ok) << p.error;
                EXPECT_TRUE(contains(entry, std::string("No effect here: ") + d.note)) << entry;
                ASSERT_EQ(p.run.no_effect_notes.size(), 1u);
                EXPECT_TRUE(contains(p.run.no_effect_notes[0],
                                     std::string("--") + d.name + " has no effect"));
                break;
            case GGDIFF_SUPPORT_NOT_YET:
                EXPECT_FALSE(p.ok);
                EXPECT_TRUE(contains(p.error, std::string("--") + d.name + " is not supported yet"))
                    << p.error;
                EXPECT_TRUE(contains(entry, "Not supported yet.")) << entry;
                break;
            default:
                ADD_FAILURE() << "unknown support class " << d.support;
        }
    }
    std::printf("[ flags    ] %zu documented: %zu work, %zu have no effect here, %zu not yet\n",
                flags.size(), classes[GGDIFF_SUPPORT_WORKS].size(),
                classes[GGDIFF_SUPPORT_NO_EFFECT].size(), classes[GGDIFF_SUPPORT_NOT_YET].size());
    EXPECT_EQ(classes[GGDIFF_SUPPORT_WORKS].size() + classes[GGDIFF_SUPPORT_NO_EFFECT].size() +
                  classes[GGDIFF_SUPPORT_NOT_YET].size(),
              flags.size());
    // The flags that used to be accepted and silently ignored, each in its class now.
    const std::map<std::string, int> expected = {
        {"--flow-shift", GGDIFF_SUPPORT_WORKS},
        {"--offload-to-cpu", GGDIFF_SUPPORT_WORKS},
        {"--color", GGDIFF_SUPPORT_WORKS},
        {"--mmap", GGDIFF_SUPPORT_NO_EFFECT},
        {"--eager-load", GGDIFF_SUPPORT_NO_EFFECT},
        {"--img-cfg-scale", GGDIFF_SUPPORT_WORKS},  // reference-image models (3-way CFG)
        {"--guidance", GGDIFF_SUPPORT_WORKS},
        {"--control-net-cpu", GGDIFF_SUPPORT_WORKS},
        {"--metadata-brief", GGDIFF_SUPPORT_NOT_YET},
        {"--metadata-all", GGDIFF_SUPPORT_NOT_YET},
    };
    for (const auto& [flag, support] : expected) EXPECT_EQ(desc_of(flag).support, support) << flag;
    for (const char* flag :
         {"--fa", "--diffusion-fa", "--diffusion-conv-direct", "--vae-conv-direct"}) {
        EXPECT_EQ(desc_of(flag).support, GGDIFF_SUPPORT_WORKS) << flag;
    }
}

// Values of working flags that are not built yet fail the same way.
TEST(FlagCoverage, UnsupportedValuesOfWorkingFlags) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--scheduler", "kl_optimal"}, "--scheduler kl_optimal is not supported yet"},
        {{"--scheduler", "bong_tangent"}, "--scheduler bong_tangent is not supported yet"},
    };
    for (const auto& [tail, message] : cases) {
        std::vector<std::string> args = {"-m", "m.gguf"};
        args.insert(args.end(), tail.begin(), tail.end());
        EXPECT_TRUE(contains(parse_error(args), message)) << message;
    }
    EXPECT_EQ(parse_error({"-m", "m.gguf", "--tensor-type-rules", "^vae=f16"}),
              "--tensor-type-rules is not supported yet");
    parse_ok(
        {"-m", "m.gguf", "--preview", "none", "--vae-format", "auto", "--scheduler", "karras"});
}

TEST(CliOptions, HelpListsExactlyTheKnownFlags) {
    std::set<std::string> documented;
    for (const DocFlag& f : documented_flags()) documented.insert(f.long_name);
    const std::set<std::string> shown = help_flags();
    for (const std::string& f : documented) {
        EXPECT_TRUE(shown.count(f)) << f << " is documented but missing from --help";
    }
    for (const std::string& f : shown) {
        EXPECT_TRUE(documented.count(f) || kGgdiffAdditions.count(f) || f == "--qwen2vl" ||
                    f == "--qwen2vl_vision" || f == "--tae")
            << f << " is in --help but neither in CLI_FLAGS.md nor a known ggdiff addition";
    }
}

// The apps use only include/ggdiff.h (and their own headers, or the shared ones of
// apps/common), and the front ends copy no value lists: samplers, schedulers, RNGs and weight
// types come from the library's schema.
TEST(CliOptions, AppsUseOnlyThePublicHeaderAndCopyNoValueLists) {
    size_t files = 0;
    for (const auto& app : fs::directory_iterator(GGDIFF_SOURCE_DIR "/apps")) {
        for (const auto& entry : fs::directory_iterator(app.path())) {
            std::ifstream in(entry.path());
            std::string line;
            ++files;
            while (std::getline(in, line)) {
                std::smatch m;
                if (std::regex_search(line, m, std::regex(R"re(#include\s+"([^"]+)")re"))) {
                    const std::string inc = m[1].str();
                    const bool own = inc.find('/') == std::string::npos &&
                                     (fs::exists(app.path() / inc) ||
                                      fs::exists(fs::path(GGDIFF_SOURCE_DIR "/apps/common") / inc));
                    EXPECT_TRUE(inc == "ggdiff.h" || own) << entry.path() << " includes " << inc;
                }
                if (app.path().filename() == "server") continue;  // speaks the A1111 names
                for (const char* value : {"dpm++2m", "karras", "std_default", "q4_K", "edm_v"}) {
                    EXPECT_FALSE(contains(line, std::string("\"") + value))
                        << entry.path() << " copies a value list: " << line;
                }
            }
        }
    }
    EXPECT_GT(files, 10u);
}

// No front end of the engine declares a schema option by hand: CLI11 declarations in their
// sources name only flags the schema does not have (the bench's own); the schema's come from
// apps/common/schema_flags.h. (ggdiff-rpc serves devices and takes no engine options: its
// -t is the served CPU device's threads.)
TEST(CliOptions, NoAppDeclaresASchemaFlagByHand) {
    const std::regex decl(R"re(add_(option|flag)[A-Za-z_]*(<[^>]*>)?\(\s*"([^"]+)")re");
    size_t declared = 0;
    for (const char* dir : {"cli", "bench", "server", "common"}) {
        for (const auto& entry :
             fs::directory_iterator(fs::path(GGDIFF_SOURCE_DIR "/apps") / dir)) {
            std::ifstream in(entry.path());
            std::stringstream text;
            text << in.rdbuf();
            const std::string src = text.str();
            for (std::sregex_iterator it(src.begin(), src.end(), decl), end; it != end; ++it) {
                std::stringstream names((*it)[3].str());
                std::string name;
                while (std::getline(names, name, ',')) {
                    ++declared;
                    EXPECT_EQ(ggdiff_option_find(name.c_str()), -1)
                        << entry.path() << " declares the schema's " << name << " by hand";
                }
            }
        }
    }
    EXPECT_GE(declared, 2u);  // ggdiff-bench's --index-only and --no-sgemm at least
}

TEST(CliOptions, Defaults) {
    CliRun o = parse_ok({"-m", "model.safetensors"});
    EXPECT_EQ(o.action, CliAction::run);
    EXPECT_EQ(o.text("mode"), "img_gen");
    EXPECT_EQ(o.text("model"), "model.safetensors");
    EXPECT_EQ(o.all("model"), std::vector<std::string>{"model.safetensors"});
    EXPECT_EQ(o.text("prompt"), "");
    EXPECT_EQ(o.integer("steps"), 20);
    EXPECT_FALSE(o.given("width"));  // the model's default size
    EXPECT_EQ(o.text("sampling-method"), "");
    EXPECT_EQ(o.text("scheduler"), "");
    EXPECT_EQ(o.integer("seed"), 42);
    EXPECT_EQ(o.integer("batch-count"), 1);
    EXPECT_EQ(o.text("rng"), "cuda");
    EXPECT_EQ(o.text("output"), "output.png");
    EXPECT_EQ(o.integer("threads"), -1);
    EXPECT_EQ(o.integer("output-begin-idx"), -1);
    EXPECT_EQ(o.text("metadata-format"), "text");
    EXPECT_FALSE(o.flag("vae-tiling"));
    EXPECT_FALSE(o.flag("auto-fit"));
    EXPECT_FALSE(o.flag("verbose"));
    EXPECT_FALSE(o.given("steps"));
    EXPECT_TRUE(o.no_effect_notes.empty());
    EXPECT_FALSE(o.help_text.empty());
    EXPECT_TRUE(contains(o.version_text, "ggdiff"));
}

TEST(CliOptions, SdCliExampleCommandLine) {
    CliRun o = parse_ok({"-m",
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
    EXPECT_EQ(o.text("prompt"), "prompt");
    EXPECT_EQ(o.text("negative-prompt"), "negative");
    EXPECT_EQ(o.integer("width"), 512);
    EXPECT_EQ(o.integer("height"), 512);
    EXPECT_EQ(o.text("cfg-scale"), "7");
    EXPECT_EQ(o.text("sampling-method"), "euler_a");
    EXPECT_EQ(o.integer("batch-count"), 2);
    EXPECT_EQ(o.text("output"), "out.png");
}

TEST(CliOptions, ShortForms) {
    CliRun o = parse_ok({"-m", "a.gguf", "-p", "p",  "-n",       "n",  "-W",     "640",
                         "-H", "384",    "-s", "-1", "-b",       "3",  "-o",     "x.png",
                         "-t", "4",      "-v", "-i", "init.png", "-M", "img_gen"});
    EXPECT_EQ(o.text("model"), "a.gguf");
    EXPECT_EQ(o.integer("width"), 640);
    EXPECT_EQ(o.integer("height"), 384);
    EXPECT_EQ(o.integer("seed"), -1);
    EXPECT_EQ(o.integer("batch-count"), 3);
    EXPECT_EQ(o.text("output"), "x.png");
    EXPECT_EQ(o.integer("threads"), 4);
    EXPECT_TRUE(o.flag("verbose"));
    EXPECT_EQ(o.text("init-img"), "init.png");
    EXPECT_EQ(parse_ok({"-h"}).action, CliAction::help);
    EXPECT_EQ(parse_ok({"--version"}).action, CliAction::version);
}

TEST(CliOptions, ValuesAreCheckedAndCanonical) {
    CliRun o = parse_ok({"-m",
                         "m.gguf",
                         "--sampling-method",
                         "DPM++ 2M SDE",
                         "--scheduler",
                         "Karras",
                         "--type",
                         "Q4_k",
                         "--rng",
                         "CPU",
                         "--sigmas",
                         "[14.6, 7.8, 0]",
                         "--vae-tile-size",
                         "64",
                         "--flow-shift",
                         "3",
                         "--eta",
                         "0.25",
                         "--auto-fit",
                         "off",
                         "--split-mode",
                         "diffusion=row,te=layer",
                         "--max-vram",
                         "-1.5",
                         "--seed",
                         "9007199254740993"});
    EXPECT_EQ(o.text("sampling-method"), "dpm++2m_sde");
    EXPECT_EQ(o.text("scheduler"), "karras");
    EXPECT_EQ(o.text("type"), "q4_K");
    EXPECT_EQ(o.text("rng"), "cpu");
    EXPECT_EQ(o.text("sigmas"), "14.6,7.8,0");
    EXPECT_EQ(o.text("vae-tile-size"), "64x64");
    EXPECT_EQ(o.text("flow-shift"), "3");
    EXPECT_FALSE(o.flag("auto-fit"));
    EXPECT_EQ(o.text("split-mode"), "diffusion=row,te=layer");
    EXPECT_EQ(o.text("max-vram"), "-1.5");
    EXPECT_EQ(o.integer("seed"), 9007199254740993LL);
}

TEST(CliOptions, LastValueWinsAndModelRepeats) {
    CliRun o = parse_ok({"-m", "a.gguf", "--steps", "5", "-m", "b.gguf", "--steps", "7"});
    EXPECT_EQ(o.integer("steps"), 7);
    EXPECT_EQ(o.text("model"), "b.gguf");
    EXPECT_EQ(o.all("model"), (std::vector<std::string>{"a.gguf", "b.gguf"}));
}

TEST(CliOptions, AutoFitTakesAnOptionalOnOff) {
    EXPECT_TRUE(parse_ok({"-m", "m.gguf", "--auto-fit"}).flag("auto-fit"));
    EXPECT_TRUE(parse_ok({"-m", "m.gguf", "--auto-fit", "on"}).flag("auto-fit"));
    EXPECT_FALSE(parse_ok({"-m", "m.gguf", "--auto-fit", "off"}).flag("auto-fit"));
    EXPECT_FALSE(parse_ok({"-m", "m.gguf", "--auto-fit=off"}).flag("auto-fit"));
    EXPECT_TRUE(parse_ok({"--auto-fit", "-m", "m.gguf"}).flag("auto-fit"));
    const std::string e = parse_error({"-m", "m.gguf", "--auto-fit", "maybe"});
    EXPECT_TRUE(contains(e, "--auto-fit")) << e;
    EXPECT_TRUE(contains(e, "maybe")) << e;
}

TEST(CliOptions, Modes) {
    CliRun info = parse_ok({"-M", "info", "-m", "a.safetensors", "-m", "b.gguf"});
    EXPECT_EQ(info.text("mode"), "info");
    EXPECT_EQ(info.all("model"), (std::vector<std::string>{"a.safetensors", "b.gguf"}));
    CliRun meta = parse_ok({"-M", "metadata", "--image", "x.png", "--metadata-format", "json"});
    EXPECT_EQ(meta.text("image"), "x.png");
    EXPECT_EQ(meta.text("metadata-format"), "json");
    EXPECT_TRUE(contains(parse_error({"-M", "metadata"}), "--image"));
    EXPECT_TRUE(contains(parse_error({"-M", "convert"}), "-m/--model"));
    EXPECT_EQ(parse_ok({"-p", "x"}).text("model"), "");  // the built-in model
    EXPECT_TRUE(contains(parse_error({"-M", "info"}), "-M info"));
    EXPECT_EQ(parse_ok({"-M", "convert", "-m", "in.safetensors", "--type", "q8_0"}).text("type"),
              "q8_0");
    EXPECT_TRUE(parse_ok({"--list-devices"}).flag("list-devices"));  // needs no model
}

TEST(CliOptions, HelpShowsDescriptionsDefaultsAndValueSets) {
    const std::string h = help_text();
    EXPECT_TRUE(contains(h, "--sampling-method")) << h;
    EXPECT_TRUE(contains(h, "euler_a_cfg_pp")) << h;  // the value set, from the library
    EXPECT_TRUE(contains(h, "Default: 20")) << h;     // --steps
    EXPECT_TRUE(contains(h, "output.png")) << h;      // -o
    EXPECT_TRUE(contains(h, "ggdiff -m model.safetensors")) << h;
    const std::string mmap = help_entry(h, "--mmap");
    EXPECT_TRUE(contains(mmap, "No effect here: model files are always memory-mapped")) << mmap;
    // Help wins even after other flags, bad ones included.
    EXPECT_EQ(parse_ok({"-m", "m.gguf", "--steps", "5", "-h"}).action, CliAction::help);
    EXPECT_EQ(parse_ok({"-m", "m.gguf", "--steps", "0", "-h"}).action, CliAction::help);
}

TEST(CliOptions, UnknownFlagIsNamed) {
    std::string e = parse_error({"-m", "m.gguf", "--no-such-flag"});
    EXPECT_TRUE(contains(e, "--no-such-flag")) << e;
    e = parse_error({"-m", "m.gguf", "--frobnicate", "3"});
    EXPECT_TRUE(contains(e, "--frobnicate")) << e;
    e = parse_error({"-m", "m.gguf", "-Z"});
    EXPECT_TRUE(contains(e, "-Z")) << e;
    e = parse_error({"-m", "m.gguf", "stray"});
    EXPECT_TRUE(contains(e, "stray")) << e;
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
        {{"-W", "abc"}, "--width", "abc"},
        {{"-H", "0"}, "--height", "0"},
        {{"-W", "512.5"}, "--width", "512.5"},
        {{"-W", "100"}, "--width", "96 or 104"},
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
        {{"--preview", "png"}, "--preview", "png"},
        {{"--metadata-format", "xml"}, "--metadata-format", "xml"},
        {{"--sigmas", "1,a,0"}, "--sigmas", "1,a,0"},
        {{"--vae-tile-size", "0x32"}, "--vae-tile-size", "0x32"},
        {{"--vae-tile-size", "big"}, "--vae-tile-size", "big"},
        {{"--vae-tile-overlap", "1"}, "--vae-tile-overlap", "1"},
        {{"--eta", "-1"}, "--eta", "-1"},
        {{"--output-begin-idx", "-2"}, "--output-begin-idx", "-2"},
        {{"--seed", "12x"}, "--seed", "12x"},
        {{"-t", "many"}, "--threads", "many"},
        {{"-M", "dream"}, "--mode", "dream"},
    };
    for (const Case& c : cases) {
        std::vector<std::string> args = {"-m", "m.gguf"};
        args.insert(args.end(), c.args.begin(), c.args.end());
        const std::string e = parse_error(args);
        EXPECT_TRUE(contains(e, c.flag)) << c.flag << " not named in: " << e;
        EXPECT_TRUE(contains(e, c.value)) << c.value << " not named in: " << e;
    }
}

TEST(CliOptions, MissingValueIsNamed) {
    std::string e = parse_error({"-m", "m.gguf", "--steps"});
    EXPECT_TRUE(contains(e, "--steps")) << e;
    e = parse_error({"-m"});
    EXPECT_TRUE(contains(e, "--model")) << e;
}

TEST(CliOptions, PromptFiles) {
    fs::path p = write_file("prompt_test.txt", "a cat\non a mat\r\n");
    fs::path n = write_file("negative_test.txt", "blurry");
    CliRun o = parse_ok(
        {"-m", "m.gguf", "--prompt-file", p.string(), "--negative-prompt-file", n.string()});
    EXPECT_EQ(o.text("prompt"), "a cat\non a mat");
    EXPECT_EQ(o.text("negative-prompt"), "blurry");
    EXPECT_EQ(o.text("prompt-file"), p.string());

    std::string missing = (tmp_dir() / "no_such_prompt.txt").string();
    std::string e = parse_error({"-m", "m.gguf", "--prompt-file", missing});
    EXPECT_TRUE(contains(e, "--prompt-file")) << e;
    EXPECT_TRUE(contains(e, missing)) << e;
    e = parse_error({"-m", "m.gguf", "--negative-prompt-file", tmp_dir().string()});
    EXPECT_TRUE(contains(e, "--negative-prompt-file")) << e;
    e = parse_error({"-m", "m.gguf", "-p", "x", "--prompt-file", p.string()});
    EXPECT_TRUE(contains(e, "--prompt-file")) << e;
}

TEST(CliOptions, PromptsMayStartWithADash) {
    CliRun o = parse_ok({"-m", "m.gguf", "-p", "-cat-", "--max-vram", "-2"});
    EXPECT_EQ(o.text("prompt"), "-cat-");
    EXPECT_EQ(o.text("max-vram"), "-2");
}

TEST(CliOptions, NoEffectFlagsSayWhy) {
    CliRun o = parse_ok({"-m", "m.gguf", "--mmap", "--eager-load"});
    ASSERT_EQ(o.no_effect_notes.size(), 2u);
    EXPECT_TRUE(contains(o.no_effect_notes[0] + o.no_effect_notes[1],
                         "--mmap has no effect here: model files are always memory-mapped"));
    // --img-cfg-scale acts on reference-image models: no blanket note at parse time.
    o = parse_ok({"-m", "m.gguf", "--img-cfg-scale", "1.5"});
    EXPECT_TRUE(o.no_effect_notes.empty());
}

TEST(CliOptions, EverySamplerAndScheduleFromTheLibraryParses) {
    for (const char* flag : {"sampling-method", "scheduler", "rng", "type", "prediction"}) {
        const ggdiff_option_desc d = desc_of(flag);
        std::stringstream ss(d.values);
        std::string v;
        int n = 0;
        while (std::getline(ss, v, ',')) {
            EXPECT_EQ(parse_ok({"-m", "m.gguf", std::string("--") + flag, v}).text(flag), v);
            ++n;
        }
        EXPECT_GT(n, 1) << flag;
    }
    EXPECT_EQ(std::string(desc_of("rng").values), "cuda,cpu,std_default");
}

}  // namespace
