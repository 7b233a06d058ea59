// A1111 infotext formatting and parsing.
#include <nlohmann/json.hpp>

#include "image/infotext.h"
#include "test_helpers.h"

namespace ggdiff {
namespace {

GenerationInfo basic_info() {
    GenerationInfo info;
    info.prompt = "a cat";
    info.negative_prompt = "ugly";
    info.steps = 20;
    info.sampler = "Euler a";
    info.schedule = "Karras";
    info.cfg_scale = 7.0f;
    info.seed = 42;
    info.width = 512;
    info.height = 768;
    info.model = "v1-5-pruned-emaonly";
    return info;
}

GenerationInfo parse_ok(const std::string& text) {
    auto r = parse_infotext(text);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : GenerationInfo{};
}

TEST(FormatInfotext, BasicLayout) {
    EXPECT_EQ(format_infotext(basic_info()),
              "a cat\n"
              "Negative prompt: ugly\n"
              "Steps: 20, Sampler: Euler a, Schedule type: Karras, CFG scale: 7, Seed: 42, "
              "Size: 512x768, Model: v1-5-pruned-emaonly");
}

TEST(FormatInfotext, NoNegativePromptLineWhenEmpty) {
    GenerationInfo info = basic_info();
    info.negative_prompt.clear();
    info.schedule.clear();
    info.model.clear();
    EXPECT_EQ(format_infotext(info),
              "a cat\nSteps: 20, Sampler: Euler a, CFG scale: 7, Seed: 42, Size: 512x768");
}

TEST(FormatInfotext, AllOptionalFieldsInOrder) {
    GenerationInfo info = basic_info();
    info.cfg_scale = 7.5f;
    info.guidance = 3.5f;
    info.seed = 4294967295LL;
    info.model_hash = "6ce0161689";
    info.vae = "ae.safetensors";
    info.denoising_strength = 0.75f;
    info.clip_skip = 2;
    info.rng = "cpu";
    info.eta = 0.3f;
    info.extra = {{"Hires upscale", "2"}, {"Lora hashes", "add_detail: 7c6bad76eb54"}};
    info.version = "ggdiff 0.1.0";
    EXPECT_EQ(format_infotext(info),
              "a cat\nNegative prompt: ugly\n"
              "Steps: 20, Sampler: Euler a, Schedule type: Karras, CFG scale: 7.5, "
              "Distilled CFG Scale: 3.5, Seed: 4294967295, Size: 512x768, Model hash: 6ce0161689, "
              "Model: v1-5-pruned-emaonly, VAE: ae.safetensors, Denoising strength: 0.75, "
              "Clip skip: 2, RNG: cpu, Eta: 0.3, Hires upscale: 2, "
              "Lora hashes: \"add_detail: 7c6bad76eb54\", Version: ggdiff 0.1.0");
}

TEST(FormatInfotext, QuotesValuesLikeA1111) {
    EXPECT_EQ(infotext_quote("plain value"), "plain value");
    EXPECT_EQ(infotext_quote("a, b"), "\"a, b\"");
    EXPECT_EQ(infotext_quote("k: v"), "\"k: v\"");
    EXPECT_EQ(infotext_quote("two\nlines"), "\"two\\nlines\"");
    EXPECT_EQ(infotext_quote("say \"hi\", \\ ok"), "\"say \\\"hi\\\", \\\\ ok\"");
    EXPECT_EQ(infotext_quote("caf\xc3\xa9, x"), "\"caf\xc3\xa9, x\"");  // non-ASCII kept
    EXPECT_EQ(infotext_quote("has \"quotes\" only"), "has \"quotes\" only");

    GenerationInfo info = basic_info();
    info.model = "models/a, b";
    EXPECT_NE(format_infotext(info).find("Model: \"models/a, b\""), std::string::npos);
}

TEST(FormatInfotext, ShortestFloats) {
    GenerationInfo info = basic_info();
    for (auto [v, s] : std::vector<std::pair<float, std::string>>{{7.0f, "7"},
                                                                  {7.5f, "7.5"},
                                                                  {0.1f, "0.1"},
                                                                  {1.25f, "1.25"},
                                                                  {100.0f, "100"},
                                                                  {4.2f, "4.2"}}) {
        info.cfg_scale = v;
        EXPECT_NE(format_infotext(info).find("CFG scale: " + s + ","), std::string::npos) << s;
    }
}

TEST(ParseInfotext, A1111Sample) {
    const std::string text =
        "masterpiece, best quality, 1girl, (smile:1.2)\n"
        "Negative prompt: lowres, bad anatomy, (worst quality:1.4)\n"
        "Steps: 28, Sampler: DPM++ 2M Karras, CFG scale: 7, Seed: 1234567890, Size: 512x768, "
        "Model hash: 6ce0161689, Model: v1-5-pruned-emaonly, Denoising strength: 0.7, "
        "Clip skip: 2, Hires upscale: 2, Hires upscaler: Latent, "
        "Lora hashes: \"add_detail: 7c6bad76eb54, lcm: 1d5ce1ddf9d1\", "
        "TI hashes: \"easynegative: c74b4e810b03\", Version: v1.6.0";
    const GenerationInfo info = parse_ok(text);
    EXPECT_EQ(info.prompt, "masterpiece, best quality, 1girl, (smile:1.2)");
    EXPECT_EQ(info.negative_prompt, "lowres, bad anatomy, (worst quality:1.4)");
    EXPECT_EQ(info.steps, 28);
    EXPECT_EQ(info.sampler, "DPM++ 2M Karras");
    EXPECT_EQ(info.cfg_scale, 7.0f);
    EXPECT_EQ(info.seed, 1234567890);
    EXPECT_EQ(info.width, 512);
    EXPECT_EQ(info.height, 768);
    EXPECT_EQ(info.model_hash, "6ce0161689");
    EXPECT_EQ(info.model, "v1-5-pruned-emaonly");
    EXPECT_EQ(info.denoising_strength, 0.7f);
    EXPECT_EQ(info.clip_skip, 2);
    EXPECT_EQ(info.version, "v1.6.0");
    using P = std::pair<std::string, std::string>;
    ASSERT_EQ(info.extra.size(), 4u);
    EXPECT_EQ(info.extra[0], P("Hires upscale", "2"));
    EXPECT_EQ(info.extra[1], P("Hires upscaler", "Latent"));
    EXPECT_EQ(info.extra[2], P("Lora hashes", "add_detail: 7c6bad76eb54, lcm: 1d5ce1ddf9d1"));
    EXPECT_EQ(info.extra[3], P("TI hashes", "easynegative: c74b4e810b03"));
}

TEST(ParseInfotext, ForgeFluxSample) {
    const std::string text =
        "a photo of a cat holding a sign that says hello world\n"
        "Steps: 20, Sampler: Euler, Schedule type: Simple, CFG scale: 1, Distilled CFG Scale: "
        "3.5, Seed: 3393470263, Size: 896x1152, Model hash: 0ac63bd7a8, Model: "
        "flux1-dev-bnb-nf4-v2, Version: f2.0.1v1.10.1-previous-313-g8a042934, Module 1: ae";
    const GenerationInfo info = parse_ok(text);
    EXPECT_EQ(info.prompt, "a photo of a cat holding a sign that says hello world");
    EXPECT_EQ(info.negative_prompt, "");
    EXPECT_EQ(info.schedule, "Simple");
    EXPECT_EQ(info.guidance, 3.5f);
    EXPECT_EQ(info.seed, 3393470263LL);
    EXPECT_EQ(info.width, 896);
    EXPECT_EQ(info.height, 1152);
    EXPECT_EQ(info.version, "f2.0.1v1.10.1-previous-313-g8a042934");
    ASSERT_EQ(info.extra.size(), 1u);
    EXPECT_EQ(info.extra[0].first, "Module 1");
    EXPECT_EQ(info.extra[0].second, "ae");
}

TEST(ParseInfotext, MultiLinePrompts) {
    const std::string text =
        "line one,\nline two\n  indented three  \n"
        "Negative prompt: neg one\nneg two\n"
        "Steps: 5, Sampler: Euler, CFG scale: 3, Seed: -1, Size: 64x32";
    const GenerationInfo info = parse_ok(text);
    EXPECT_EQ(info.prompt, "line one,\nline two\nindented three");  // lines stripped, as A1111
    EXPECT_EQ(info.negative_prompt, "neg one\nneg two");
    EXPECT_EQ(info.seed, -1);
    EXPECT_EQ(info.steps, 5);
}

TEST(ParseInfotext, PromptOnlyAndShortLastLine) {
    GenerationInfo info = parse_ok("just a prompt");
    EXPECT_EQ(info.prompt, "just a prompt");
    EXPECT_EQ(info.steps, 0);

    // Fewer than 3 parameters on the last line: it is part of the prompt.
    info = parse_ok("a cat\nStyle: anime, Mood: calm");
    EXPECT_EQ(info.prompt, "a cat\nStyle: anime, Mood: calm");
    EXPECT_TRUE(info.extra.empty());

    info = parse_ok("\n\nSteps: 1, Sampler: Euler, Seed: 3\n\n");
    EXPECT_EQ(info.prompt, "");
    EXPECT_EQ(info.seed, 3);

    info = parse_ok("");
    EXPECT_EQ(info.prompt, "");
}

TEST(ParseInfotext, QuotedValuesWithEscapes) {
    const std::string text =
        "p\nSteps: 1, Sampler: Euler, Seed: 2, Note: \"say \\\"hi\\\", ok\", "
        "Path: \"C:\\\\models\\\\x\", Multi: \"a\\nb\", Bad quote: \"unterminated, Tail: end";
    const GenerationInfo info = parse_ok(text);
    using P = std::pair<std::string, std::string>;
    ASSERT_EQ(info.extra.size(), 5u);
    EXPECT_EQ(info.extra[0], P("Note", "say \"hi\", ok"));
    EXPECT_EQ(info.extra[1], P("Path", "C:\\models\\x"));
    EXPECT_EQ(info.extra[2], P("Multi", "a\nb"));
    EXPECT_EQ(info.extra[3], P("Bad quote", "\"unterminated"));  // as A1111: up to the comma
    EXPECT_EQ(info.extra[4], P("Tail", "end"));
}

TEST(ParseInfotext, BadNumbersAreErrors) {
    auto r = parse_infotext("p\nSteps: many, Sampler: Euler, Seed: 1");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("'Steps'"), std::string::npos);
    EXPECT_NE(r.status().message().find("many"), std::string::npos);
    r = parse_infotext("p\nSteps: 1, Sampler: Euler, Size: 512 by 512");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("Size"), std::string::npos);
    EXPECT_FALSE(parse_infotext("p\nSteps: 1, CFG scale: 7x, Seed: 1").ok());
}

TEST(ParseInfotext, LongQuotedValueDoesNotBlowTheStack) {
    std::string big(200000, 'x');
    for (size_t i = 0; i < big.size(); i += 10) big[i] = ',';
    const std::string text = "p\nSteps: 1, Sampler: Euler, Seed: 1, Big: \"" + big + "\"";
    const GenerationInfo info = parse_ok(text);
    ASSERT_EQ(info.extra.size(), 1u);
    EXPECT_EQ(info.extra[0].second, big);
}

TEST(InfotextRoundTrip, FormatThenParseGivesTheSameInfo) {
    GenerationInfo info = basic_info();
    info.prompt = "multi\nline prompt, with: colons";
    info.negative_prompt = "neg\nlines";
    info.cfg_scale = 4.5f;
    info.guidance = 3.5f;
    info.seed = -123456789012LL;
    info.model_hash = "abc";
    info.vae = "vae, with comma";
    info.denoising_strength = 0.35f;
    info.clip_skip = 2;
    info.rng = "cuda";
    info.eta = 1.0f;
    info.extra = {{"Quote", "say \"x\", y"}, {"NL", "a\nb"}, {"Plain", "v"}};
    info.version = "ggdiff 0.1.0";
    const GenerationInfo back = parse_ok(format_infotext(info));
    EXPECT_EQ(back.prompt, info.prompt);
    EXPECT_EQ(back.negative_prompt, info.negative_prompt);
    EXPECT_EQ(back.steps, info.steps);
    EXPECT_EQ(back.sampler, info.sampler);
    EXPECT_EQ(back.schedule, info.schedule);
    EXPECT_EQ(back.cfg_scale, info.cfg_scale);
    EXPECT_EQ(back.guidance, info.guidance);
    EXPECT_EQ(back.seed, info.seed);
    EXPECT_EQ(back.width, info.width);
    EXPECT_EQ(back.height, info.height);
    EXPECT_EQ(back.model_hash, info.model_hash);
    EXPECT_EQ(back.model, info.model);
    EXPECT_EQ(back.vae, info.vae);
    EXPECT_EQ(back.denoising_strength, info.denoising_strength);
    EXPECT_EQ(back.clip_skip, info.clip_skip);
    EXPECT_EQ(back.rng, info.rng);
    EXPECT_EQ(back.eta, info.eta);
    EXPECT_EQ(back.extra, info.extra);
    EXPECT_EQ(back.version, info.version);
    EXPECT_EQ(format_infotext(back), format_infotext(info));
}

TEST(InfotextRoundTrip, ParseThenFormatReproducesA1111Strings) {
    for (const std::string& text : {
             std::string("a cat\nNegative prompt: ugly\nSteps: 20, Sampler: Euler a, Schedule "
                         "type: Karras, CFG scale: 7, Seed: 42, Size: 512x512, Model: name"),
             std::string("(masterpiece:1.2), \"quoted\"\nSteps: 30, Sampler: DPM++ 2M SDE, "
                         "CFG scale: 5.5, Seed: 9, Size: 1024x576, Model hash: 31e35c80fc, "
                         "Model: sd_xl_base_1.0, Clip skip: 2, RNG: CPU, "
                         "Lora hashes: \"a: 1, b: 2\", Version: v1.10.1"),
         }) {
        EXPECT_EQ(format_infotext(parse_ok(text)), text);
    }
}

TEST(InfotextJson, A1111InfoKeys) {
    GenerationInfo info = basic_info();
    info.cfg_scale = 7.1f;
    info.clip_skip = 2;
    info.guidance = 3.5f;
    info.extra = {{"Hires upscale", "2"}};
    info.version = "ggdiff 0.1.0";
    const nlohmann::json j = infotext_to_json(info);
    EXPECT_EQ(j["prompt"], "a cat");
    EXPECT_EQ(j["negative_prompt"], "ugly");
    EXPECT_EQ(j["steps"], 20);
    EXPECT_EQ(j["sampler_name"], "Euler a");
    EXPECT_EQ(j["cfg_scale"].get<double>(), 7.1);  // not 7.099999904632568
    EXPECT_EQ(j["seed"], 42);
    EXPECT_EQ(j["width"], 512);
    EXPECT_EQ(j["height"], 768);
    EXPECT_EQ(j["sd_model_name"], "v1-5-pruned-emaonly");
    EXPECT_EQ(j["clip_skip"], 2);
    EXPECT_EQ(j["version"], "ggdiff 0.1.0");
    EXPECT_FALSE(j.contains("denoising_strength"));
    EXPECT_EQ(j["extra_generation_params"]["Schedule type"], "Karras");
    EXPECT_EQ(j["extra_generation_params"]["Distilled CFG Scale"].get<double>(), 3.5);
    EXPECT_EQ(j["extra_generation_params"]["Hires upscale"], "2");
}

TEST(Metadata, TextAndJsonFormats) {
    const std::string params = format_infotext(basic_info());
    auto text = format_metadata(params, "text");
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, params + "\n");
    EXPECT_EQ(format_metadata_text(params), params + "\n");

    auto json = format_metadata(params, "json");
    ASSERT_TRUE(json.ok()) << json.status().message();
    const auto j = nlohmann::json::parse(*json);
    EXPECT_EQ(j["infotext"], params);
    EXPECT_EQ(j["seed"], 42);

    auto bad = format_metadata(params, "yaml");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("'yaml'"), std::string::npos);
}

}  // namespace
}  // namespace ggdiff
