// The option schema through the C API: introspection (what the CLI's flags and the
// server's JSON fields are generated from) and checks when a value is set, before any
// model is loaded.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "api/option_schema.h"
#include "ggdiff.h"
#include "io/weight_type.h"
#include "sampling/rng.h"
#include "sampling/samplers.h"
#include "sampling/schedules.h"

namespace {

struct Options {
    ggdiff_options* o = ggdiff_options_new();
    ~Options() { ggdiff_options_free(o); }
    int set(const char* k, const std::string& v) { return ggdiff_options_set(o, k, v.c_str()); }
    std::string get(const char* k) {
        const char* t = nullptr;
        EXPECT_EQ(ggdiff_options_get(o, k, &t), 0) << ggdiff_last_error();
        return t ? t : "";
    }
};

std::string error() {
    return ggdiff_last_error();
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

std::string joined(const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& s : v) out += (out.empty() ? "" : ",") + s;
    return out;
}

ggdiff_option_desc desc_of(const char* name) {
    ggdiff_option_desc d{};
    const int i = ggdiff_option_find(name);
    EXPECT_GE(i, 0) << name;
    if (i >= 0) {
        EXPECT_EQ(ggdiff_option_info(i, &d), 0);
    }
    return d;
}

TEST(OptionSchema, EveryEntryIsDescribed) {
    const int n = ggdiff_option_count();
    ASSERT_GT(n, 150);
    std::set<std::string> names;
    for (int i = 0; i < n; ++i) {
        ggdiff_option_desc d{};
        ASSERT_EQ(ggdiff_option_info(i, &d), 0);
        const std::string name = d.name;
        EXPECT_TRUE(names.insert(name).second) << "declared twice: " << name;
        EXPECT_FALSE(std::string(d.help).empty()) << name;
        EXPECT_FALSE(std::string(d.group).empty()) << name;
        EXPECT_EQ(ggdiff_option_find(d.name), i) << name;
        if (d.short_name[0]) {
            EXPECT_EQ(ggdiff_option_find(d.short_name), i) << name;
        }
        if (d.type == GGDIFF_OPTION_ENUM) {
            EXPECT_FALSE(std::string(d.values).empty()) << name;
        }
        if (d.support == GGDIFF_SUPPORT_NO_EFFECT) {
            EXPECT_FALSE(std::string(d.note).empty()) << name << " has no effect but says not why";
        }
        // Exactly one scope.
        const int scope =
            d.flags & (GGDIFF_OPTION_MODEL | GGDIFF_OPTION_GENERATE | GGDIFF_OPTION_FRONTEND);
        EXPECT_TRUE(scope == GGDIFF_OPTION_MODEL || scope == GGDIFF_OPTION_GENERATE ||
                    scope == GGDIFF_OPTION_FRONTEND)
            << name;
    }
    ggdiff_option_desc d{};
    EXPECT_NE(ggdiff_option_info(n, &d), 0);
    EXPECT_NE(ggdiff_option_info(-1, &d), 0);
    EXPECT_EQ(ggdiff_option_find("no-such-option"), -1);
}

TEST(OptionSchema, ValueSetsComeFromTheLibrary) {
    EXPECT_EQ(std::string(desc_of("sampling-method").values),
              joined(ggdiff::sampling::sampler_names()));
    EXPECT_EQ(std::string(desc_of("scheduler").values), joined(ggdiff::sampling::schedule_names()));
    EXPECT_EQ(std::string(desc_of("rng").values), joined(ggdiff::sampling::rng_names()));
    EXPECT_EQ(std::string(desc_of("sampler-rng").values), joined(ggdiff::sampling::rng_names()));
    EXPECT_EQ(std::string(desc_of("type").values), joined(ggdiff::weight_type_names()));
}

TEST(OptionSchema, NamesAliasesAndShortForms) {
    EXPECT_EQ(ggdiff_option_find("tae"), ggdiff_option_find("taesd"));
    EXPECT_EQ(ggdiff_option_find("qwen2vl"), ggdiff_option_find("llm"));
    EXPECT_EQ(ggdiff_option_find("W"), ggdiff_option_find("width"));
    EXPECT_EQ(ggdiff_option_find("--width"), ggdiff_option_find("width"));
    const ggdiff_option_desc w = desc_of("width");
    EXPECT_EQ(w.type, GGDIFF_OPTION_INT);
    EXPECT_EQ(std::string(w.default_value), "");  // the model's
    EXPECT_EQ(w.min, 64);
    EXPECT_TRUE(w.flags & GGDIFF_OPTION_GENERATE);
    EXPECT_TRUE(desc_of("model").flags & GGDIFF_OPTION_MODEL);
    EXPECT_TRUE(desc_of("model").flags & GGDIFF_OPTION_REPEATABLE);
    EXPECT_TRUE(desc_of("output").flags & GGDIFF_OPTION_FRONTEND);
    EXPECT_TRUE(desc_of("auto-fit").flags & GGDIFF_OPTION_VALUE_OPTIONAL);
    // A measurement switch of each generation, on or off (ggdiff-bench turns it on).
    const ggdiff_option_desc peaks = desc_of("phase-peaks");
    EXPECT_EQ(peaks.type, GGDIFF_OPTION_BOOL);
    EXPECT_TRUE(peaks.flags & GGDIFF_OPTION_GENERATE);
    EXPECT_TRUE(peaks.flags & GGDIFF_OPTION_VALUE_OPTIONAL);
    EXPECT_EQ(std::string(peaks.default_value), "false");
}

TEST(OptionSchema, BadSamplerFailsWhenSetBeforeAnyLoad) {
    Options o;
    ASSERT_EQ(o.set("model", "/nonexistent/model.safetensors"), 0);
    EXPECT_NE(o.set("sampling-method", "no_such_sampler"), 0);
    const std::string e = error();
    EXPECT_TRUE(contains(e, "--sampling-method")) << e;
    EXPECT_TRUE(contains(e, "no_such_sampler")) << e;
    EXPECT_TRUE(contains(e, "euler_a")) << e;  // lists the valid ones
    EXPECT_EQ(ggdiff_options_is_set(o.o, "sampling-method"), 0);
    // A1111 and k-diffusion spellings select the same sampler; the canonical name is kept.
    ASSERT_EQ(o.set("sampling-method", "DPM++ 2M"), 0) << error();
    EXPECT_EQ(o.get("sampling-method"), "dpm++2m");
    ASSERT_EQ(o.set("sampling-method", "k_dpmpp_2m_sde"), 0) << error();
    EXPECT_EQ(o.get("sampling-method"), "dpm++2m_sde");
    EXPECT_EQ(ggdiff_options_is_set(o.o, "sampling-method"), 1);
}

TEST(OptionSchema, EnumsCheckAndCanonicalize) {
    Options o;
    EXPECT_NE(o.set("scheduler", "nope"), 0);
    EXPECT_TRUE(contains(error(), "karras")) << error();
    EXPECT_NE(o.set("scheduler", "kl_optimal"), 0);
    EXPECT_TRUE(contains(error(), "not supported yet")) << error();
    ASSERT_EQ(o.set("scheduler", "Karras"), 0) << error();
    EXPECT_EQ(o.get("scheduler"), "karras");
    EXPECT_NE(o.set("rng", "gpu"), 0);
    ASSERT_EQ(o.set("rng", "CPU"), 0);
    EXPECT_EQ(o.get("rng"), "cpu");
    ASSERT_EQ(o.set("type", "Q4_k"), 0) << error();
    EXPECT_EQ(o.get("type"), "q4_K");
    EXPECT_NE(o.set("type", "q9"), 0);
    EXPECT_NE(o.set("prediction", "x"), 0);
    EXPECT_EQ(o.set("prediction", "v"), 0) << error();
    EXPECT_NE(o.set("mode", "dream"), 0);
    EXPECT_EQ(o.set("mode", "vid_gen"), 0) << error();
    EXPECT_EQ(o.set("fps", "24"), 0) << error();
    EXPECT_NE(o.set("fps", "0"), 0);
    EXPECT_NE(o.set("fps", "241"), 0);
    EXPECT_EQ(o.set("mode", "info"), 0) << error();
    EXPECT_EQ(o.set("preview", "none"), 0) << error();
    EXPECT_EQ(o.set("preview", "proj"), 0) << error();
    EXPECT_NE(o.set("preview", "png"), 0);
    EXPECT_NE(o.set("preview-interval", "0"), 0);
    EXPECT_NE(o.set("split-mode", "diagonal"), 0);
    EXPECT_EQ(o.set("split-mode", "diffusion=row,te=layer"), 0) << error();
}

TEST(OptionSchema, SizesGoInStepsOfEightAndNameTheNearest) {
    Options o;
    EXPECT_NE(o.set("width", "100"), 0);
    EXPECT_TRUE(contains(error(), "96 or 104")) << error();
    EXPECT_NE(o.set("height", "65"), 0);
    EXPECT_TRUE(contains(error(), "72")) << error();
    EXPECT_NE(o.set("width", "32"), 0);
    EXPECT_TRUE(contains(error(), "from 64 to 16384")) << error();
    EXPECT_TRUE(contains(error(), "nearest valid: 64")) << error();
    EXPECT_NE(o.set("width", "60"), 0);
    EXPECT_TRUE(contains(error(), "nearest valid: 64")) << error();
    EXPECT_NE(o.set("height", "16390"), 0);
    EXPECT_TRUE(contains(error(), "nearest valid: 16384")) << error();
    EXPECT_EQ(o.set("width", "72"), 0) << error();
    EXPECT_EQ(o.set("height", "520"), 0) << error();
    int64_t w = 0;
    ASSERT_EQ(ggdiff_options_get_int(o.o, "width", &w), 0);
    EXPECT_EQ(w, 72);
}

TEST(OptionSchema, NumbersAndListsAreChecked) {
    Options o;
    EXPECT_NE(o.set("steps", "0"), 0);
    EXPECT_NE(o.set("steps", "1.5"), 0);
    EXPECT_NE(o.set("strength", "1.5"), 0);
    EXPECT_NE(o.set("eta", "-1"), 0);
    EXPECT_NE(o.set("cfg-scale", "inf"), 0);
    EXPECT_NE(o.set("sigmas", "1,2,x"), 0);
    EXPECT_NE(o.set("sigmas", "1,2,0"), 0);  // increasing: not a schedule
    ASSERT_EQ(o.set("sigmas", "[14.6, 7.8, 0]"), 0) << error();
    EXPECT_EQ(o.get("sigmas"), "14.6,7.8,0");
    ASSERT_EQ(o.set("vae-tile-size", "32x48"), 0) << error();
    EXPECT_EQ(o.get("vae-tile-size"), "32x48");
    EXPECT_NE(o.set("vae-tile-size", "2"), 0);
    ASSERT_EQ(o.set("flow-shift", "3"), 0) << error();
    double shift = 0;
    ASSERT_EQ(ggdiff_options_get_float(o.o, "flow-shift", &shift), 0);
    EXPECT_EQ(shift, 3.0);
    int b = 1;
    ASSERT_EQ(ggdiff_options_get_bool(o.o, "vae-tiling", &b), 0);
    EXPECT_EQ(b, 0);                      // the default
    ASSERT_EQ(o.set("auto-fit", ""), 0);  // a bare flag
    ASSERT_EQ(ggdiff_options_get_bool(o.o, "auto-fit", &b), 0);
    EXPECT_EQ(b, 1);
}

TEST(OptionSchema, DefaultsAndRepeatableValues) {
    Options o;
    EXPECT_EQ(o.get("steps"), "20");
    EXPECT_EQ(o.get("output"), "output.png");
    EXPECT_EQ(o.get("sampling-method"), "");
    EXPECT_EQ(ggdiff_options_is_set(o.o, "steps"), 0);
    EXPECT_EQ(ggdiff_options_is_set(o.o, "no-such"), -1);
    EXPECT_EQ(ggdiff_options_count(o.o, "model"), 0);
    ASSERT_EQ(o.set("m", "a.safetensors"), 0);
    ASSERT_EQ(o.set("model", "b.gguf"), 0);
    EXPECT_EQ(ggdiff_options_count(o.o, "model"), 2);
    EXPECT_EQ(o.get("model"), "b.gguf");
    const char* t = nullptr;
    ASSERT_EQ(ggdiff_options_get_at(o.o, "model", 0, &t), 0);
    EXPECT_EQ(std::string(t), "a.safetensors");
    EXPECT_NE(ggdiff_options_get_at(o.o, "model", 2, &t), 0);
    // A non-repeatable option keeps the last value only.
    ASSERT_EQ(o.set("steps", "4"), 0);
    ASSERT_EQ(o.set("steps", "5"), 0);
    EXPECT_EQ(ggdiff_options_count(o.o, "steps"), 1);
    EXPECT_EQ(o.get("steps"), "5");
}

TEST(OptionSchema, SupportClassesBehave) {
    for (int i = 0; i < ggdiff_option_count(); ++i) {
        ggdiff_option_desc d{};
        ASSERT_EQ(ggdiff_option_info(i, &d), 0);
        if (d.support != GGDIFF_SUPPORT_NOT_YET) continue;
        Options o;
        const char* value = d.type == GGDIFF_OPTION_BOOL ? "true" : "1";
        EXPECT_NE(o.set(d.name, value), 0) << d.name;
        EXPECT_TRUE(contains(error(), std::string("--") + d.name + " is not supported yet"))
            << error();
    }
    Options o;
    EXPECT_EQ(o.set("mmap", ""), 0) << error();  // no effect here, but accepted
    EXPECT_EQ(o.set("eager-load", "true"), 0) << error();
}

// What the library reads must reach the typed options: every working model or generation
// option has a binder; front-end options are only stored.
TEST(OptionSchema, WorkingLibraryOptionsAreBound) {
    for (const ggdiff::api::OptionSpec& s : ggdiff::api::option_schema()) {
        if (s.support != ggdiff::api::Support::Works) continue;
        if (s.is(ggdiff::api::kFrontend)) continue;
        EXPECT_TRUE(static_cast<bool>(s.bind)) << s.name << " is read by nothing";
    }
}

TEST(OptionSchema, TypedValuesReachThePipelineOptions) {
    ggdiff::api::ApiOptions o;
    ASSERT_TRUE(ggdiff::api::set_option(o, "sampling-method", "lcm").ok());
    ASSERT_TRUE(ggdiff::api::set_option(o, "scheduler", "karras").ok());
    ASSERT_TRUE(ggdiff::api::set_option(o, "rng", "cpu").ok());
    ASSERT_TRUE(ggdiff::api::set_option(o, "sigmas", "3,1,0").ok());
    ASSERT_TRUE(ggdiff::api::set_option(o, "flow-shift", "2.5").ok());
    ASSERT_TRUE(ggdiff::api::set_option(o, "type", "f16").ok());
    ASSERT_TRUE(ggdiff::api::set_option(o, "steps", "9").ok());
    ASSERT_TRUE(ggdiff::api::set_option(o, "offload-to-cpu", "").ok());
    EXPECT_FALSE(o.gen.phase_peaks);
    ASSERT_TRUE(ggdiff::api::set_option(o, "phase-peaks", "on").ok());
    EXPECT_EQ(o.gen.sampler, ggdiff::sampling::SamplerKind::Lcm);
    EXPECT_EQ(o.gen.scheduler, ggdiff::sampling::ScheduleKind::Karras);
    EXPECT_EQ(o.gen.rng, ggdiff::sampling::RngKind::Cpu);
    EXPECT_FALSE(o.gen.sampler_rng.has_value());
    EXPECT_EQ(o.gen.sigmas, (std::vector<float>{3, 1, 0}));
    EXPECT_EQ(o.gen.flow_shift.value_or(0), 2.5f);
    EXPECT_EQ(o.model.weight_type, 1);  // GGML_TYPE_F16
    EXPECT_EQ(o.gen.steps, 9);
    EXPECT_TRUE(o.model.offload_to_cpu);
    EXPECT_TRUE(o.gen.phase_peaks);
    ASSERT_TRUE(ggdiff::api::set_option(o, "phase-peaks", "off").ok());
    EXPECT_FALSE(o.gen.phase_peaks);
}

// --temporal-tiling and --extra-tiling-args (LTX-2's windows of latent frames): sd-cli's two keys
// set the window sizes, anything else fails naming the key or value, "" restores the defaults.
TEST(OptionSchema, TemporalTilingArgumentsAreParsedAndChecked) {
    ggdiff::api::ApiOptions o;
    EXPECT_FALSE(o.gen.vae_tiling.temporal);
    ASSERT_TRUE(ggdiff::api::set_option(o, "temporal-tiling", "").ok());
    EXPECT_TRUE(o.gen.vae_tiling.temporal);
    EXPECT_EQ(o.gen.vae_tiling.temporal_frames, 4);
    EXPECT_EQ(o.gen.vae_tiling.temporal_overlap, 1);
    ggdiff::Status st = ggdiff::api::set_option(
        o, "extra-tiling-args", " temporal_tile_frames=3 , temporal_tile_overlap=0 ");
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(o.gen.vae_tiling.temporal_frames, 3);
    EXPECT_EQ(o.gen.vae_tiling.temporal_overlap, 0);
    const std::pair<const char*, const char*> bad[] = {
        {"temporal_tile_frames=0", "temporal_tile_frames: '0'"},
        {"temporal_tile_frames=two", "temporal_tile_frames: 'two'"},
        {"temporal_tile_overlap=-1", "temporal_tile_overlap: '-1'"},
        {"temporal_tile_frames", "'temporal_tile_frames' is not key=value"},
        {"tile_frames=2", "unknown key 'tile_frames'"},
    };
    for (const auto& [text, words] : bad) {
        st = ggdiff::api::set_option(o, "extra-tiling-args", text);
        EXPECT_FALSE(st.ok()) << text;
        EXPECT_TRUE(contains(st.message(), words)) << st.message();
        EXPECT_TRUE(contains(st.message(), "--extra-tiling-args")) << st.message();
        EXPECT_EQ(o.gen.vae_tiling.temporal_frames, 3) << text;  // a bad value changes nothing
    }
    ASSERT_TRUE(ggdiff::api::set_option(o, "extra-tiling-args", "").ok());
    EXPECT_EQ(o.gen.vae_tiling.temporal_frames, 4);
    EXPECT_EQ(o.gen.vae_tiling.temporal_overlap, 1);
}

}  // namespace
