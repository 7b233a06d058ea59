// Tests of ggdiff-bench's command line (apps/bench/bench_options.*): every option the library
// reads is a flag of the bench, generated from the option schema as the CLI's are, under every
// spelling the schema gives it; the spellings the bench scripts use keep working; --phase-peaks
// is on unless turned off. Then the binary itself on the built-in model: the flags reach the
// generation.
//
// The parser lives in the `ggdiff-bench` binary's sources, which this suite cannot link, so it
// is compiled here directly (this file is its only translation unit in the suite).
#include "../../apps/bench/bench_options.cpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "../support/schema_samples.h"

namespace {

using ggdiff::bench::bench_takes;
using ggdiff::bench::BenchAction;
using ggdiff::bench::BenchArgs;
using ggdiff::bench::parse_bench_args;
using namespace ggdiff::schema_samples;

namespace fs = std::filesystem;

struct Parsed {
    bool ok = false;
    std::string error;
    BenchArgs args;
};

Parsed parse(std::vector<std::string> args) {
    args.insert(args.begin(), "ggdiff-bench");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    Parsed p;
    p.ok = parse_bench_args(static_cast<int>(argv.size()), argv.data(), p.args, p.error);
    return p;
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

bool given(const BenchArgs& a, const char* name) {
    return ggdiff_options_is_set(a.options.get(), name) == 1;
}

std::string text(const BenchArgs& a, const char* name) {
    const char* t = nullptr;
    return ggdiff_options_get(a.options.get(), name, &t) == 0 && t ? t : "";
}

// Every option the library reads is a bench flag under each of its spellings: a working one
// reaches the options, one not supported yet fails saying so.
TEST(BenchOptions, EveryEngineOptionOfTheSchemaIsAFlag) {
    size_t engine = 0;
    for (const ggdiff_option_desc& d : all_options()) {
        if (!bench_takes(d)) continue;
        ++engine;
        for (const std::string& spelled : spellings(d)) {
            SCOPED_TRACE(spelled);
            Parsed p = parse(sample_args(d, spelled));
            if (d.support == GGDIFF_SUPPORT_NOT_YET) {
                EXPECT_FALSE(p.ok);
                EXPECT_TRUE(contains(p.error, std::string("--") + d.name + " is not supported yet"))
                    << p.error;
                continue;
            }
            ASSERT_TRUE(p.ok) << p.error;
            EXPECT_TRUE(given(p.args, d.name)) << d.name << " did not reach the library";
        }
    }
    // Model files, devices and generation: well over the 30 flags the bench once listed.
    EXPECT_GT(engine, 100u);
}

// The bench takes what the library reads, and only that: the model, device and generation
// options, not the CLI's outputs and run modes.
TEST(BenchOptions, TakesExactlyTheLibrarysOptions) {
    for (const ggdiff_option_desc& d : all_options()) {
        SCOPED_TRACE(d.name);
        const int scope =
            d.flags & (GGDIFF_OPTION_MODEL | GGDIFF_OPTION_GENERATE | GGDIFF_OPTION_FRONTEND);
        EXPECT_EQ(bench_takes(d), scope != GGDIFF_OPTION_FRONTEND);
    }
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"-o", "out.png"}, {"-M", "convert"}, {"--fit-dry-run"}}) {
        Parsed p = parse(args);
        EXPECT_FALSE(p.ok) << args[0];
        EXPECT_TRUE(contains(p.error, args[0])) << p.error;
    }
}

// Every working engine flag is in --help with the schema's help text; the bench's own too.
TEST(BenchOptions, HelpListsTheSchemaFlagsAndTheBenchsOwn) {
    Parsed p = parse({"--help"});
    ASSERT_TRUE(p.ok) << p.error;
    EXPECT_EQ(p.args.action, BenchAction::help);
    const std::string help = p.args.help_text;
    for (const ggdiff_option_desc& d : all_options()) {
        if (!bench_takes(d)) continue;
        EXPECT_TRUE(
            std::regex_search(help, std::regex(std::string("(^|[ ,])--") + d.name + "([ ,=\n]|$)")))
            << d.name << " is missing from --help";
    }
    EXPECT_FALSE(contains(help, "--output ")) << "a CLI-only flag in the bench's --help";
    for (const char* own : {"--index-only", "--no-sgemm", "-m, --model", "-W, --width"}) {
        EXPECT_TRUE(contains(help, own)) << own;
    }
    // The schema's help text, as the CLI shows it.
    ggdiff_option_desc steps{};
    ASSERT_EQ(ggdiff_option_info(ggdiff_option_find("steps"), &steps), 0);
    EXPECT_TRUE(contains(help, std::string(steps.help).substr(0, 20)));
    Parsed v = parse({"--version"});
    ASSERT_TRUE(v.ok) << v.error;
    EXPECT_EQ(v.args.action, BenchAction::version);
    EXPECT_EQ(v.args.version_text.rfind("ggdiff-bench ", 0), 0u);
}

// The flags the bench used to list by hand, spelled as before.
TEST(BenchOptions, OldSpellingsKeepWorking) {
    const std::vector<std::pair<std::vector<std::string>, const char*>> cases = {
        {{"-m", "a.safetensors"}, "model"},
        {{"--model", "a.safetensors"}, "model"},
        {{"--diffusion-model", "d.gguf"}, "diffusion-model"},
        {{"--vae", "v.safetensors"}, "vae"},
        {{"--clip_l", "c.safetensors"}, "clip_l"},
        {{"--t5xxl", "t.safetensors"}, "t5xxl"},
        {{"--tokenizer", "merges.txt"}, "tokenizer"},
        {{"--llm", "q.gguf"}, "llm"},
        {{"--llm-tokenizer", "qwen"}, "llm-tokenizer"},
        {{"--qwen-image-layers", "2"}, "qwen-image-layers"},
        {{"--t5xxl-tokenizer", "tokenizer.json"}, "t5xxl-tokenizer"},
        {{"--guidance", "4"}, "guidance"},
        {{"-p", "a cat"}, "prompt"},
        {{"--prompt", "a cat"}, "prompt"},
        {{"-n", "blurry"}, "negative-prompt"},
        {{"--negative-prompt", "blurry"}, "negative-prompt"},
        {{"-W", "256"}, "width"},
        {{"--width", "256"}, "width"},
        {{"-H", "256"}, "height"},
        {{"--height", "256"}, "height"},
        {{"--steps", "4"}, "steps"},
        {{"--cfg-scale", "7"}, "cfg-scale"},
        {{"--sampling-method", "euler"}, "sampling-method"},
        {{"--scheduler", "karras"}, "scheduler"},
        {{"-s", "2"}, "seed"},
        {{"--seed", "2"}, "seed"},
        {{"-t", "2"}, "threads"},
        {{"--threads", "2"}, "threads"},
        {{"--type", "q8_0"}, "type"},
        {{"--backend", "CPU"}, "backend"},
        {{"--params-backend", "disk"}, "params-backend"},
        {{"--max-vram", "0.5"}, "max-vram"},
        {{"--rpc-servers", "127.0.0.1:50052,127.0.0.1:50053"}, "rpc-servers"},
        {{"-b", "2"}, "batch-count"},
        {{"--batch-count", "2"}, "batch-count"},
        {{"--lora-model-dir", "loras"}, "lora-model-dir"},
        {{"--lora-apply-mode", "at_runtime"}, "lora-apply-mode"},
        {{"--stream-layers"}, "stream-layers"},
    };
    for (const auto& [args, name] : cases) {
        SCOPED_TRACE(args[0]);
        Parsed p = parse(args);
        ASSERT_TRUE(p.ok) << p.error;
        EXPECT_TRUE(given(p.args, name));
        if (args.size() > 1 && std::string(name) != "rpc-servers") {
            EXPECT_FALSE(text(p.args, name).empty());
        }
    }
    Parsed idx = parse({"--index-only", "a.safetensors", "b.safetensors", "--no-sgemm"});
    ASSERT_TRUE(idx.ok) << idx.error;
    EXPECT_EQ(idx.args.index_only, (std::vector<std::string>{"a.safetensors", "b.safetensors"}));
    EXPECT_TRUE(idx.args.no_sgemm);
    Parsed none = parse({"-m", "a.safetensors"});
    ASSERT_TRUE(none.ok) << none.error;
    EXPECT_TRUE(none.args.index_only.empty());
    EXPECT_FALSE(none.args.no_sgemm);
}

// Every flag in the bench scripts' ggdiff-bench command lines is one the bench takes.
TEST(BenchOptions, TheBenchScriptsFlagsParse) {
    size_t checked = 0;
    for (const auto& entry : fs::directory_iterator(GGDIFF_SOURCE_DIR "/bench")) {
        if (entry.path().extension() != ".sh") continue;
        std::ifstream in(entry.path());
        std::string line, command;
        bool inside = false;
        auto check = [&](const std::string& cmd) {
            std::istringstream words(cmd.substr(cmd.find("ggdiff-bench\"") + 13));
            std::string w;
            while (words >> w) {
                if (!std::regex_match(w, std::regex("--?[A-Za-z][A-Za-z0-9_-]*"))) continue;
                SCOPED_TRACE(entry.path().filename().string() + ": " + w);
                ++checked;
                if (w == "--index-only" || w == "--no-sgemm") continue;
                const int i = ggdiff_option_find(w.c_str());
                ASSERT_GE(i, 0) << w << " is not a schema option";
                ggdiff_option_desc d{};
                ASSERT_EQ(ggdiff_option_info(i, &d), 0);
                EXPECT_TRUE(bench_takes(d));
                Parsed p = parse(sample_args(d, w));
                EXPECT_TRUE(p.ok) << p.error;
            }
        };
        while (std::getline(in, line)) {
            if (!inside && contains(line, "ggdiff-bench\" ")) {
                inside = true;
                command.clear();
            }
            if (!inside) continue;
            command += line + " ";
            if (line.empty() || line.back() != '\\') {
                check(command);
                inside = false;
            }
        }
    }
    EXPECT_GT(checked, 40u);
}

// The bench measures each phase's own peak unless told not to; the choice travels as the
// schema's option.
TEST(BenchOptions, PhasePeaksAreOnUnlessTurnedOff) {
    Parsed on = parse({"-m", "a.safetensors"});
    ASSERT_TRUE(on.ok) << on.error;
    EXPECT_EQ(text(on.args, "phase-peaks"), "true");
    Parsed off = parse({"-m", "a.safetensors", "--phase-peaks", "off"});
    ASSERT_TRUE(off.ok) << off.error;
    EXPECT_EQ(text(off.args, "phase-peaks"), "false");
    Parsed bare = parse({"--phase-peaks", "-m", "a.safetensors"});
    ASSERT_TRUE(bare.ok) << bare.error;
    EXPECT_EQ(text(bare.args, "phase-peaks"), "true");
    Parsed bad = parse({"--phase-peaks", "sometimes"});
    EXPECT_FALSE(bad.ok);
    EXPECT_TRUE(contains(bad.error, "--phase-peaks")) << bad.error;
}

TEST(BenchOptions, BadValuesAreNamed) {
    Parsed steps = parse({"--steps", "many"});
    EXPECT_FALSE(steps.ok);
    EXPECT_TRUE(contains(steps.error, "--steps")) << steps.error;
    Parsed sampler = parse({"--sampling-method", "nope"});
    EXPECT_FALSE(sampler.ok);
    EXPECT_TRUE(contains(sampler.error, "--sampling-method")) << sampler.error;
    Parsed unknown = parse({"--no-such-flag", "1"});
    EXPECT_FALSE(unknown.ok);
    EXPECT_TRUE(contains(unknown.error, "--no-such-flag")) << unknown.error;
}

struct BenchRun {
    int exit_code = -1;
    std::string out, err;
};

BenchRun run_bench(const std::string& args) {
    const fs::path dir = fs::path(GGDIFF_TEST_TMP);
    fs::create_directories(dir);
    const std::string out = (dir / "out.json").string(), err = (dir / "err.txt").string();
    const std::string cmd =
        std::string(GGDIFF_BINARY_DIR "/ggdiff-bench ") + args + " > " + out + " 2> " + err;
    const int status = std::system(cmd.c_str());
    BenchRun r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream o(out), e(err);
    std::stringstream so, se;
    so << o.rdbuf();
    se << e.rdbuf();
    r.out = so.str();
    r.err = se.str();
    return r;
}

// The binary on the built-in model: schema flags reach the generation (two steps, two images),
// the figures come out as JSON with each phase's peak, and a bad flag fails before any load.
TEST(BenchBinary, GeneratesWithSchemaFlagsAndPrintsTheFigures) {
    ASSERT_TRUE(fs::exists(GGDIFF_BINARY_DIR "/ggdiff-bench"));
    const BenchRun r = run_bench("-W 64 -H 64 --steps 2 -b 2 -t 1 -s 3 --no-sgemm");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "\"images\": 2")) << r.out;
    // Two steps for each of the two images.
    EXPECT_TRUE(std::regex_search(
        r.out, std::regex(R"re("step_seconds": \[[0-9.]+, [0-9.]+, [0-9.]+, [0-9.]+\])re")))
        << r.out;
    EXPECT_TRUE(contains(r.out, "\"sgemm_gflop_per_second\": null")) << r.out;
    EXPECT_TRUE(contains(r.out, "\"threads\": 1")) << r.out;
    EXPECT_TRUE(contains(r.out, "\"peak_rss_mib\"")) << r.out;
    EXPECT_TRUE(contains(r.out, "\"name\":\"sampling\"")) << r.out;

    const BenchRun bad = run_bench("--steps 0");
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_TRUE(contains(bad.err, "--steps")) << bad.err;
    const BenchRun help = run_bench("--help");
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_TRUE(contains(help.out, "--phase-peaks")) << help.out;
}

}  // namespace
