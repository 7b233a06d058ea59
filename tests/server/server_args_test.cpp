// ggdiff-server's command line parsed in process (apps/server/server_config.*): every engine
// option of the schema is a flag of the server under every spelling the schema gives it and
// reaches the options the model is loaded with; the rest of the schema is refused by name
// (input images, the CLI's outputs) or acted on by the server itself; the server's own flags
// land in its configuration; --help lists them all.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "../support/schema_samples.h"
#include "server_config.h"

namespace ggdiff::server_test {
namespace {

using namespace ggdiff::schema_samples;
using server::parse_server_args;
using server::ParseAction;
using server::ParseOutcome;
using server::server_takes;

ParseOutcome parse(std::vector<std::string> args) {
    args.insert(args.begin(), "ggdiff-server");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    return parse_server_args(static_cast<int>(argv.size()), argv.data());
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

bool has_engine_option(const ParseOutcome& o, const std::string& name) {
    for (const auto& kv : o.config.engine_options)
        if (kv.first == name) return true;
    return false;
}

// The options the server loads the model with, as the library has them.
struct Loaded {
    ggdiff_options* o = ggdiff_options_new();
    explicit Loaded(const ParseOutcome& p) {
        for (const auto& [name, value] : p.config.engine_options)
            EXPECT_EQ(ggdiff_options_set(o, name.c_str(), value.c_str()), 0) << name;
    }
    ~Loaded() { ggdiff_options_free(o); }
    bool given(const char* name) const { return ggdiff_options_is_set(o, name) == 1; }
};

// Every engine option the server takes is a flag under each spelling, and its value reaches
// the model's options; those not supported yet fail saying so.
TEST(ServerArgs, EveryEngineOptionOfTheSchemaIsAFlag) {
    size_t taken = 0;
    for (const ggdiff_option_desc& d : all_options()) {
        const bool engine = (d.flags & (GGDIFF_OPTION_MODEL | GGDIFF_OPTION_GENERATE)) &&
                            !(d.flags & GGDIFF_OPTION_FRONTEND);
        if (!engine) continue;
        for (const std::string& spelled : spellings(d)) {
            SCOPED_TRACE(spelled);
            std::vector<std::string> args = {"-m", "x.safetensors"};
            const std::vector<std::string> tail = sample_args(d, spelled);
            args.insert(args.end(), tail.begin(), tail.end());
            const ParseOutcome p = parse(args);
            const std::string name = d.name;
            if (server_takes(d)) {
                ASSERT_EQ(p.error, "");
                EXPECT_TRUE(has_engine_option(p, name)) << name << " did not reach the engine";
                Loaded loaded(p);
                EXPECT_TRUE(loaded.given(d.name));
            } else if (d.support == GGDIFF_SUPPORT_NOT_YET) {
                EXPECT_TRUE(contains(p.error, "--" + name + " is not supported yet")) << p.error;
            } else if ((d.flags & GGDIFF_OPTION_GENERATE) && d.type == GGDIFF_OPTION_PATH) {
                EXPECT_TRUE(contains(p.error, "--" + name + " has no use in ggdiff-server"))
                    << p.error;
                EXPECT_TRUE(contains(p.error, "requests carry their images")) << p.error;
            } else {
                // Acted on by the server itself.
                EXPECT_EQ(name, "lora-model-dir");
                ASSERT_EQ(p.error, "");
                EXPECT_EQ(p.config.lora_model_dir, sample_value(d));
                EXPECT_FALSE(has_engine_option(p, name));
            }
        }
        if (server_takes(d)) ++taken;
    }
    EXPECT_GT(taken, 60u);
    // Every working model option is among them: the server loads what the CLI would.
    for (const ggdiff_option_desc& d : all_options()) {
        if ((d.flags & GGDIFF_OPTION_MODEL) && d.support != GGDIFF_SUPPORT_NOT_YET &&
            std::string(d.name) != "lora-model-dir") {
            EXPECT_TRUE(server_takes(d)) << d.name;
        }
    }
}

// The CLI's front-end flags: those a server has a use for change its configuration, the others
// are refused by name.
TEST(ServerArgs, FrontEndFlagsActOrAreRefused) {
    const std::string dir = GGDIFF_TEST_TMP;
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/prompt.txt") << "a lighthouse\n";
    const ParseOutcome p = parse({"-m", "x", "-v", "--color", "--disable-image-metadata",
                                  "--prompt-file", dir + "/prompt.txt", "--lora-model-dir", dir});
    ASSERT_EQ(p.error, "");
    EXPECT_TRUE(p.config.verbose);
    EXPECT_TRUE(p.config.color);
    EXPECT_FALSE(p.config.embed_metadata);
    EXPECT_EQ(p.config.lora_model_dir, dir);
    ASSERT_TRUE(has_engine_option(p, "prompt"));
    Loaded loaded(p);
    const char* prompt = nullptr;
    ASSERT_EQ(ggdiff_options_get(loaded.o, "prompt", &prompt), 0);
    EXPECT_EQ(std::string(prompt), "a lighthouse");
    EXPECT_TRUE(parse({"-m", "x"}).config.embed_metadata);

    for (const ggdiff_option_desc& d : all_options()) {
        const std::string name = d.name;
        if (!(d.flags & GGDIFF_OPTION_FRONTEND) || name == "help" || name == "version") continue;
        if (name == "verbose" || name == "color" || name == "disable-image-metadata" ||
            name == "prompt-file" || name == "negative-prompt-file") {
            continue;
        }
        SCOPED_TRACE(name);
        std::vector<std::string> args = {"-m", "x"};
        const std::vector<std::string> tail = sample_args(d, "--" + name);
        args.insert(args.end(), tail.begin(), tail.end());
        const ParseOutcome r = parse(args);
        EXPECT_TRUE(contains(r.error, "--" + name + " has no use in ggdiff-server")) << r.error;
    }
}

// The server's own flags land in its configuration, with their limits checked.
TEST(ServerArgs, ServerFlagsLandInTheConfiguration) {
    const std::string dir = GGDIFF_TEST_TMP;
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/key") << "  k3y \n";
    const ParseOutcome p = parse({"-m",
                                  "x",
                                  "--host",
                                  "0.0.0.0",
                                  "--port",
                                  "0",
                                  "--api-key-file",
                                  dir + "/key",
                                  "--max-queue",
                                  "3",
                                  "--result-ttl",
                                  "60",
                                  "--max-results-mb",
                                  "5",
                                  "--cors-origin",
                                  "http://a.example",
                                  "--cors-origin",
                                  "http://b.example",
                                  "--max-body-mb",
                                  "2",
                                  "--max-size",
                                  "512",
                                  "--max-upload-pixels",
                                  "1000",
                                  "--max-batch",
                                  "4",
                                  "--max-steps",
                                  "30",
                                  "-s",
                                  "5",
                                  "--steps=7"});
    ASSERT_EQ(p.error, "");
    const server::ServerConfig& c = p.config;
    EXPECT_EQ(c.host, "0.0.0.0");
    EXPECT_EQ(c.port, 0);
    EXPECT_EQ(c.api_key, "k3y");
    EXPECT_EQ(c.max_queue, 3);
    EXPECT_EQ(c.result_ttl_s, 60);
    EXPECT_EQ(c.max_result_bytes, 5ll << 20);
    EXPECT_EQ(c.cors_origins, (std::vector<std::string>{"http://a.example", "http://b.example"}));
    EXPECT_EQ(c.max_body_bytes, 2ll << 20);
    EXPECT_EQ(c.max_size, 512);
    EXPECT_EQ(c.max_upload_pixels, 1000);
    EXPECT_EQ(c.max_batch, 4);
    EXPECT_EQ(c.max_steps, 30);
    EXPECT_TRUE(c.seed_given);
    EXPECT_TRUE(has_engine_option(p, "steps"));
    EXPECT_FALSE(parse({"-m", "x"}).config.seed_given);
    EXPECT_EQ(parse({"-m", "x", "--api-key", "abc"}).config.api_key, "abc");

    EXPECT_TRUE(contains(parse({"-m", "x", "--port", "70000"}).error, "--port")) << "range";
    EXPECT_TRUE(contains(parse({"-m", "x", "--max-queue", "0"}).error, "--max-queue"));
    EXPECT_TRUE(contains(parse({"-m", "x", "--host", ""}).error, "--host"));
    EXPECT_TRUE(contains(parse({"-m", "x", "--steps", "many"}).error, "--steps"));
    EXPECT_TRUE(contains(parse({"-m", "x", "--no-such-flag"}).error, "--no-such-flag"));
    EXPECT_EQ(parse({"--help"}).action, ParseAction::help);
    EXPECT_EQ(parse({"--version"}).action, ParseAction::version);
    EXPECT_EQ(parse({"-h"}).action, ParseAction::help);
}

// --help: the server's flags, then the engine's by the schema's groups with the schema's help;
// input images and the CLI's outputs are not offered; options not supported yet are listed.
TEST(ServerArgs, HelpListsEveryFlagTheServerTakes) {
    const std::string help = server::server_help_text();
    auto listed = [&help](const std::string& flag) {
        return std::regex_search(help, std::regex("(^|\n) +(-[A-Za-z], )?" + flag + "([ ,=\n]|$)"));
    };
    for (const ggdiff_option_desc& d : all_options()) {
        SCOPED_TRACE(d.name);
        const std::string flag = std::string("--") + d.name;
        if (server_takes(d)) {
            EXPECT_TRUE(listed(flag)) << flag << " is missing from --help";
        } else if (d.support == GGDIFF_SUPPORT_NOT_YET && !(d.flags & GGDIFF_OPTION_FRONTEND)) {
            EXPECT_TRUE(std::regex_search(help, std::regex(" " + flag + "( |\n|$)"))) << flag;
        } else if ((d.flags & GGDIFF_OPTION_GENERATE) && d.type == GGDIFF_OPTION_PATH) {
            EXPECT_FALSE(listed(flag)) << flag << " is offered but refused";
        }
    }
    for (const char* flag :
         {"--host", "--port", "--api-key", "--api-key-file", "--max-queue", "--result-ttl",
          "--max-results-mb", "--lora-model-dir", "--cors-origin", "--max-body-mb", "--max-size",
          "--max-upload-pixels", "--max-batch", "--max-steps", "--disable-image-metadata",
          "--prompt-file", "--negative-prompt-file", "--color", "--version"}) {
        EXPECT_TRUE(listed(flag)) << flag;
    }
    EXPECT_TRUE(contains(help, "-v, --verbose"));
    EXPECT_TRUE(contains(help, "-h, --help"));
    EXPECT_TRUE(contains(help, "-m, --model"));
    EXPECT_FALSE(listed("--output"));
    EXPECT_FALSE(listed("--mode"));
    EXPECT_TRUE(contains(help, "Accepted but not supported yet"));
}

}  // namespace
}  // namespace ggdiff::server_test
