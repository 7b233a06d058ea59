// The library's option schema as CLI11 flags: the one way every front end (ggdiff,
// ggdiff-bench, ggdiff-server) turns a schema entry (ggdiff_option_info in ggdiff.h) into a
// command-line flag: its names (-X, --name, --alias), whether it takes a value, its help text
// with default, allowed values and support, and where each value given goes. Built on the
// C API only.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ggdiff.h"

namespace ggdiff::apps {

// Every schema entry, in the schema's order.
std::vector<ggdiff_option_desc> schema_options();

// Whether the library itself reads the entry (model loading or generation), as opposed to
// the front ends (outputs, run modes, logging).
bool is_engine_option(const ggdiff_option_desc& d);

// The --help text of one flag built from its schema entry: help, allowed values, default,
// range, and what has no effect here or is not supported yet.
std::string flag_help(const ggdiff_option_desc& d);

// Declares schema entry `d` on `app` in `group` ("" hides it from --help) with `help`. Each
// value given goes to `on_value` when CLI11 runs the option's callback (a switch gives
// "true"; a repeatable option calls it once per value, in order; otherwise the last value
// given wins).
CLI::Option* add_schema_flag(CLI::App& app, const ggdiff_option_desc& d,
                             std::function<void(const std::string&)> on_value,
                             const std::string& help, const std::string& group);

// Declares every entry for which `want` is true (except help and version, which are CLI11's
// own) in its schema group with flag_help. Values go to ggdiff_options_set on `options`; the
// first one the library refuses leaves its message in `error`.
void add_schema_flags(CLI::App& app, ggdiff_options* options, std::string& error,
                      const std::function<bool(const ggdiff_option_desc&)>& want);

// The -h/--help and --version flags with the schema's help texts, in `group` ("": the
// schema's group of the two).
void add_help_and_version(CLI::App& app, const std::string& version_text,
                          const std::string& group = "");

// What a command line asked for, once parsed.
enum class ParseOutcome { run, help, version, error };

// Parses argv with `app` (CLI11's --help and --version become ParseOutcome::help / version);
// a CLI11 error, or a value the library refused (`set_error`, from add_schema_flags), gives
// ParseOutcome::error with the message in `error`.
ParseOutcome parse_command_line(CLI::App& app, int argc, const char* const* argv,
                                const std::string& set_error, std::string& error);

// CLI11's formatter with names shown as "-m, --model" and descriptions word-wrapped to a
// readable width.
class WrappingFormatter : public CLI::Formatter {
  public:
    WrappingFormatter() { column_width(42); }
    std::string make_option_name(const CLI::Option* opt, bool is_positional) const override;
    std::string make_option_desc(const CLI::Option* opt) const override;

  private:
    static constexpr size_t kWidth = 66;
};

}  // namespace ggdiff::apps
