// The CLI's non-generation modes and its progress bar.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cli_options.h"

namespace ggdiff::cli {

int run_list_devices(const CliRun& cli);  // --list-devices
int run_info(const CliRun& cli);          // -M info
int run_convert(const CliRun& cli);       // -M convert
int run_metadata(const CliRun& cli);      // -M metadata
int run_upscale(const CliRun& cli);       // -M upscale
int run_vid_gen(const CliRun& cli);       // -M vid_gen (video_mode.cpp)

// A printf frame-number pattern in -o (sd-cli's image sequences): one %d or %Nd (N: up to
// three digits; a leading 0 pads with zeros), %% for a literal '%'.
struct FramePattern {
    bool has_pattern = false;
    size_t at = 0;              // where the conversion starts in -o
    std::string spec;           // "%03d"
    std::string template_text;  // -o with the image extension files get (.png unless an image one)
};
// False with `error` for a '%' that is neither %% nor a frame number, or a second number.
bool parse_frame_pattern(const std::string& output, FramePattern& out, std::string& error);
// The pattern with the frame number filled in and %% as '%'.
std::string format_frame_name(const FramePattern& pattern, int64_t index);
// The video file of batch item `item` for -o (.avi and .webp kept, an image or video extension
// replaced by .avi, any other kept in the name with .avi added), numbered as img_gen numbers a
// batch (NAME, NAME_1, ... or from --output-begin-idx).
std::string video_file_name(const std::string& output, int item, int64_t begin_idx);
// The image of batch item `item` when it has a single frame (.png unless -o names an image).
std::string frame_file_name(const std::string& output, int item, int64_t begin_idx);

// `text` for a one-line message: C0 and C1 control characters and DEL written as \xNN
// (\u00NN for C1), so a name or path given on the command line cannot drive the terminal.
// (Messages from the library, ggdiff_last_error(), are escaped already.)
std::string escape_controls(const std::string& text);

// Prints "error: MESSAGE" as one line, control characters escaped.
void print_error(const std::string& message);

// One line per phase in logs; a live bar on a terminal.
void print_progress(const char* phase, int step, int total, double secs);

}  // namespace ggdiff::cli
