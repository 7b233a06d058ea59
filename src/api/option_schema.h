// The option schema: every option ggdiff knows, declared once. Each entry has its name
// (the long CLI flag without dashes), aliases, short form, type, range or value set (taken
// from src/sampling and src/io where they live), default, help, and whether it works here,
// has no effect here (and why), or is not supported yet.
//
// The C API's ggdiff_options_set() checks a value against its entry when it is set (before
// any model is loaded) and stores it typed in ApiOptions; the CLI's flags and the server's
// JSON fields are generated from the same entries through ggdiff_option_info().
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/options.h"

namespace ggdiff::api {

// Mirrors ggdiff_option_type in ggdiff.h.
enum class OptType { String, Path, Int, Float, Bool, Enum, FloatList, IntList, Pair };

// Mirrors the GGDIFF_OPTION_* flag bits in ggdiff.h.
enum OptFlag : int {
    kModel = 1 << 0,          // read by ggdiff_model_load
    kGenerate = 1 << 1,       // read by ggdiff_generate
    kFrontend = 1 << 2,       // for the front end (outputs, run modes, logging)
    kRepeatable = 1 << 3,     // every set adds a value (read back with an index)
    kOptionalValue = 1 << 4,  // a Bool that takes an optional value (--auto-fit [on|off])
};

// Mirrors ggdiff_option_support in ggdiff.h.
enum class Support { Works, NoEffect, NotYet };

// A value that passed its entry's checks. `text` is its canonical spelling; the typed
// field that matches the entry's type is filled.
struct OptionValue {
    std::string text;
    int64_t i = 0;
    double f = 0.0;
    bool b = false;
    std::vector<double> list;  // FloatList, IntList; Pair: {x, y}
};

// What the C API's options object holds: the typed pipeline options, plus every value
// set by name (front-end options are only kept here).
struct ApiOptions {
    ModelOptions model;
    GenerateOptions gen;
    std::string rpc_servers;
    std::string init_image_path;
    std::vector<std::string> ref_image_paths;  // --ref-image, in the order given
    std::string control_video_path;            // --control-video: a folder of frames
    std::string pm_id_images_dir;              // --pm-id-images-dir: PhotoMaker's ID images
    // Reference images set from memory (ggdiff_options_set_image "ref-image"), in the order
    // given; they follow the files.
    std::vector<Image> ref_images_in_memory;
    std::map<std::string, std::vector<OptionValue>> values;  // by option name, in set order
};

struct OptionSpec {
    std::string name;
    std::string aliases;     // other long names, comma-separated
    std::string short_name;  // "W" for -W
    OptType type = OptType::String;
    int flags = 0;
    Support support = Support::Works;
    std::string note;  // NoEffect: why; NotYet: which feature is missing (optional)
    // Values of an otherwise working option that are not supported yet, comma-separated.
    std::string unsupported_values;
    double min = -1e300, max = 1e300;  // Int / Float / lists / Pair: inclusive range
    std::string default_text;          // "" = unset (the library or the model decides)
    std::function<std::vector<std::string>()> values;  // Enum: the accepted values
    std::string help;
    std::string group;
    // Stores a checked value into the typed options; may canonicalize v.text. Null for
    // front-end options (kept in ApiOptions::values only).
    std::function<Status(ApiOptions&, OptionValue&)> bind;
    // Extra check beyond type and range (e.g. sizes in steps of 8).
    std::function<Status(const OptionValue&)> check;

    bool is(int flag) const { return (flags & flag) != 0; }
    std::string flag_name() const { return "--" + name; }
};

// Every option, grouped as --help shows them.
const std::vector<OptionSpec>& option_schema();
// By name, alias or short name; nullptr when unknown.
const OptionSpec* find_option(const std::string& name);
int option_index(const std::string& name);  // -1 when unknown

// Type, range, value-set and support checks; the error names the flag and the value.
Result<OptionValue> parse_option_value(const OptionSpec& spec, const std::string& text);

// Checks `text` against option `name` and stores it (typed) in `options`.
Status set_option(ApiOptions& options, const std::string& name, const std::string& text);

// The value of option `name` as set (the last one; `index` picks one of a repeatable
// option's values), or its default when unset. nullptr when unknown or out of range.
const OptionValue* option_value(const ApiOptions& options, const std::string& name, int index = -1);

// "none", "an integer", ... for messages and help.
const char* type_name(OptType type);

// The option groups that make up the schema (each its own file).
void add_model_options(std::vector<OptionSpec>& out);
void add_device_options(std::vector<OptionSpec>& out);
void add_generation_options(std::vector<OptionSpec>& out);
void add_hires_options(std::vector<OptionSpec>& out);
void add_frontend_options(std::vector<OptionSpec>& out);
void add_output_options(std::vector<OptionSpec>& out);
void add_cache_options(std::vector<OptionSpec>& out);
void add_preview_options(std::vector<OptionSpec>& out);
void add_planned_options(std::vector<OptionSpec>& out);
void add_upscale_options(std::vector<OptionSpec>& out);

}  // namespace ggdiff::api
