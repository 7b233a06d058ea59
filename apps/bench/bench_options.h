// ggdiff-bench's command line: the engine's model, device and generation flags, generated
// from the library's option schema exactly as ggdiff's are (apps/common/schema_flags.h), plus
// the bench's own flags (--index-only, --no-sgemm). Values are checked by the library when
// they are parsed, so a bad command line fails before any model is opened.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ggdiff.h"

namespace ggdiff::bench {

struct OptionsDeleter {
    void operator()(ggdiff_options* o) const { ggdiff_options_free(o); }
};
using OptionsPtr = std::unique_ptr<ggdiff_options, OptionsDeleter>;

enum class BenchAction { run, help, version };

struct BenchArgs {
    BenchAction action = BenchAction::run;
    std::string help_text;                // the full --help text (always filled in)
    std::string version_text;             // "ggdiff-bench X.Y.Z"
    OptionsPtr options;                   // every engine flag given, checked and typed
    std::vector<std::string> index_only;  // --index-only FILE...: only open and index these
    bool no_sgemm = false;                // --no-sgemm: skip measuring the f32 product rate
};

// Whether ggdiff-bench takes schema option `d` as a flag: every option the library reads
// (model loading and generation); the front ends' own (outputs, run modes) are not the bench's.
bool bench_takes(const ggdiff_option_desc& d);

// Parses argv (argv[0] is the program name). On failure returns false with `error` naming the
// offending flag and value. -h/--help and --version succeed with action help / version.
// --phase-peaks is on unless the command line turns it off (each phase reports its own peak
// resident set).
bool parse_bench_args(int argc, const char* const* argv, BenchArgs& out, std::string& error);

}  // namespace ggdiff::bench
