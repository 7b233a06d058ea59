// The CLI's non-generation modes and its progress bar.
#pragma once

#include "cli_options.h"

namespace ggdiff::cli {

int run_list_devices(const CliRun& cli);  // --list-devices
int run_info(const CliRun& cli);          // -M info
int run_convert(const CliRun& cli);       // -M convert
int run_metadata(const CliRun& cli);      // -M metadata

// One line per phase in logs; a live bar on a terminal.
void print_progress(const char* phase, int step, int total, double secs);

}  // namespace ggdiff::cli
