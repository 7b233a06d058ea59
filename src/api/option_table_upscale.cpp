// Schema entries of the ESRGAN upscaler: after generation (img_gen) and in -M upscale.
#include "api/option_decl.h"

namespace ggdiff::api {

void add_upscale_options(std::vector<OptionSpec>& out) {
    const char* g = "Upscaling";
    opt(out, g, "upscale-model", OptType::Path, kModel)
        .help(
            "ESRGAN / Real-ESRGAN upscaler (.safetensors, .gguf or .pth; RRDBNet x1/x2/x4 in "
            "BasicSR "
            "or original ESRGAN names) run on every output image; -M upscale upscales -i with "
            "it")
        .bind(to_text(GGDIFF_FIELD(model.upscale_model)));
    opt(out, g, "upscale-repeats", OptType::Int, kGenerate)
        .range(1, 16)
        .def("1")
        .help("Run the upscaler this many times on each image (--upscale-model)")
        .bind(to_int(GGDIFF_FIELD(gen.upscale_repeats)));
    opt(out, g, "upscale-tile-size", OptType::Int, kGenerate)
        .range(0, 8192)
        .def("128")
        .help(
            "Upscale images larger than this many pixels per side in overlapping tiles of this "
            "size (less memory); 0 runs the whole image at once")
        .bind(to_int(GGDIFF_FIELD(gen.upscale_tile_size)));
}

}  // namespace ggdiff::api
