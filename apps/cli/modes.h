// The CLI's non-generation modes and output helpers.
#pragma once

#include <string>

#include "cli_options.h"
#include "ggdiff.h"

namespace ggdiff::cli {

int run_list_devices(const CliOptions& cli);  // --list-devices
int run_info(const CliOptions& cli);          // -M info
int run_convert(const CliOptions& cli);       // -M convert
int run_metadata(const CliOptions& cli);      // -M metadata

// Writes one generated image (format from the extension), with its parameters text
// unless disabled. Prints the error and returns false on failure.
bool save_image(const ggdiff_image& image, const std::string& path, bool with_metadata);

void print_progress(const char* phase, int step, int total, double secs);

}  // namespace ggdiff::cli
