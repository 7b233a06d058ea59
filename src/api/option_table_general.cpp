// Schema entries of the front ends: run modes, logging, output files, -M convert and
// -M metadata. The library checks and keeps these; the front end acts on them.
#include "api/option_decl.h"
#include "image/video_io.h"

namespace ggdiff::api {

void add_frontend_options(std::vector<OptionSpec>& out) {
    const char* g = "General";
    opt(out, g, "mode", OptType::Enum, kFrontend)
        .short_name("M")
        .values({"img_gen", "vid_gen", "convert", "upscale", "metadata", "info"})
        .def("img_gen")
        .help(
            "Run mode: img_gen (text/image to image), vid_gen (video: a model's frames go to one "
            "video file per batch item, see -o), upscale (upscale -i IMAGE with "
            "--upscale-model, no diffusion model), convert (write GGUF), metadata (print an "
            "image's generation settings), info (summarize model files)");
    opt(out, g, "verbose", OptType::Bool, kFrontend)
        .short_name("v")
        .help("Print details and per-phase timings");
    opt(out, g, "color", OptType::Bool, kFrontend).help("Color the log level tags");
    opt(out, g, "help", OptType::Bool, kFrontend).short_name("h").help("Print this help and exit");
    opt(out, g, "version", OptType::Bool, kFrontend).help("Print the version and exit");
}

void add_output_options(std::vector<OptionSpec>& out) {
    const char* g = "Output";
    opt(out, g, "output", OptType::Path, kFrontend)
        .short_name("o")
        .def("output.png")
        .help(
            "Output file (PNG, JPEG or WebP by extension); image i of a batch goes to NAME_i.EXT "
            "(-M convert: the GGUF file, default output.gguf, or NAME.safetensors; -M vid_gen: a "
            "video of several "
            "frames goes to NAME.avi or NAME.webp (animated), a printf pattern such as "
            "frame_%03d.png writes one image per frame)");
    opt(out, g, "output-begin-idx", OptType::Int, kFrontend)
        .range(-1)
        .def("-1")
        .help("Number of the first image file of a batch; -1 = the first is NAME.EXT, then _1");
    opt(out, g, "disable-image-metadata", OptType::Bool, kFrontend)
        .help("Do not write the generation settings into image files");
    opt(out, g, "fps", OptType::Int, kGenerate)
        .range(kMinVideoFps, kMaxVideoFps)
        .def("16")
        .help(
            "-M vid_gen: frames per second of the video files written (1 to 240); LTX-2 also "
            "times its sound track and its video positions by it")
        .bind(to_int(GGDIFF_FIELD(gen.fps)));

    g = "Convert (-M convert)";
    opt(out, g, "convert-name", OptType::Bool, kFrontend)
        .not_yet()
        .help("Rename tensors to sd-cli's names");
    opt(out, g, "imat-in", OptType::Path, kFrontend | kRepeatable)
        .not_yet()
        .help("Importance matrix file to load (repeatable)");
    opt(out, g, "imat-out", OptType::Path, kFrontend)
        .not_yet()
        .help("Collect an importance matrix and write it here");

    g = "Metadata (-M metadata)";
    opt(out, g, "image", OptType::Path, kFrontend).help("Image whose metadata is printed");
    opt(out, g, "metadata-format", OptType::Enum, kFrontend)
        .values({"text", "json"})
        .def("text")
        .help("Output format: text (the parameters as stored) or json (parsed, A1111 keys)");
    opt(out, g, "metadata-raw", OptType::Bool, kFrontend)
        .help("Print the stored parameters text exactly as found, unparsed");
    opt(out, g, "metadata-brief", OptType::Bool, kFrontend)
        .not_yet()
        .help("Truncate long text values");
    opt(out, g, "metadata-all", OptType::Bool, kFrontend)
        .not_yet()
        .help("Also list structural entries (IHDR, IDAT, other JPEG segments)");
}

}  // namespace ggdiff::api
