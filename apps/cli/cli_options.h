// Command-line options of the `ggdiff` binary: the sd-cli flag set (docs/CLI_FLAGS.md) plus
// ggdiff's additions. Every flag is generated from the library's option schema
// (ggdiff_option_info in ggdiff.h): its names, whether it takes a value, its help text,
// default and allowed values (apps/common/schema_flags.h, shared with ggdiff-bench and
// ggdiff-server). Each value given goes to ggdiff_options_set, which checks it
// (type, range, value set, "not supported yet") when it is parsed, so a bad command line
// fails before any model is opened.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ggdiff.h"

namespace ggdiff::cli {

// What main() should do after parsing: run the mode, or print help_text / version_text and
// exit 0.
enum class CliAction { run, help, version };

struct OptionsDeleter {
    void operator()(ggdiff_options* o) const { ggdiff_options_free(o); }
};
using OptionsPtr = std::unique_ptr<ggdiff_options, OptionsDeleter>;

struct CliRun {
    CliAction action = CliAction::run;
    std::string help_text;     // the full --help text (always filled in)
    std::string version_text;  // "ggdiff X.Y.Z" (always filled in)
    OptionsPtr options;        // every flag given, checked and typed by the library
    // Flags given that have no effect here, with the reason (main prints a note each).
    std::vector<std::string> no_effect_notes;

    // Front-end reads of the options (their values were checked when set).
    std::string text(const char* name) const;
    int64_t integer(const char* name) const;
    bool flag(const char* name) const;
    bool given(const char* name) const;
    std::vector<std::string> all(const char* name) const;  // a repeatable option's values
};

// Parses argv (argv[0] is the program name). On failure returns false with `error` naming
// the offending flag and value. -h/--help and --version succeed with action help / version.
bool parse_cli(int argc, const char* const* argv, CliRun& out, std::string& error);

}  // namespace ggdiff::cli
