// The CLI's non-generation modes and its progress bar.
#pragma once

#include <string>

#include "cli_options.h"

namespace ggdiff::cli {

int run_list_devices(const CliRun& cli);  // --list-devices
int run_info(const CliRun& cli);          // -M info
int run_convert(const CliRun& cli);       // -M convert
int run_metadata(const CliRun& cli);      // -M metadata
int run_upscale(const CliRun& cli);       // -M upscale

// `text` for a one-line message: C0 and C1 control characters and DEL written as \xNN
// (\u00NN for C1), so a name or path given on the command line cannot drive the terminal.
// (Messages from the library, ggdiff_last_error(), are escaped already.)
std::string escape_controls(const std::string& text);

// Prints "error: MESSAGE" as one line, control characters escaped.
void print_error(const std::string& message);

// One line per phase in logs; a live bar on a terminal.
void print_progress(const char* phase, int step, int total, double secs);

}  // namespace ggdiff::cli
