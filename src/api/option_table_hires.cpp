// Schema entries of the hires fix: a second, upscaled img2img pass after the first one.
#include "api/option_decl.h"
#include "sampling/schedules.h"

namespace ggdiff::api {

void add_hires_options(std::vector<OptionSpec>& out) {
    const char* g = "Hires fix";
    opt(out, g, "hires", OptType::Bool, kGenerate)
        .help(
            "Run a second, upscaled img2img pass over each image (A1111's hires fix); works for "
            "every model that does img2img, and for LTX-2.3 videos through its latent upscaler "
            "models")
        .bind(to_bool(GGDIFF_FIELD(gen.hires.enabled)));
    opt(out, g, "hires-upscaler", OptType::String, kGenerate)
        .def("Latent")
        .help(
            "How the first pass is upscaled: Latent (bilinear), Latent (nearest), Latent "
            "(nearest-exact), Latent (antialiased), Latent (bicubic), Latent (bicubic "
            "antialiased) resize the latent; Lanczos and Nearest resize the decoded image; any "
            "other NAME is an upscaler model NAME.gguf/.safetensors/.pt/.pth in "
            "--hires-upscalers-dir; None turns the hires fix off. LTX-2.3 takes only its latent "
            "upscaler models (ltx-2.3-spatial-upscaler-x2 / x1.5, ltx-2.3-temporal-upscaler-x2), "
            "which decide the second pass's size and frames")
        .check([](const OptionValue& v) -> Status {
            if (v.text.empty()) return Status::Error("--hires-upscaler needs a name");
            return Status::Ok();
        })
        .bind(to_text(GGDIFF_FIELD(gen.hires.upscaler)));
    opt(out, g, "hires-upscalers-dir", OptType::Path, kModel)
        .help(
            "Folder of upscaler models (ESRGAN; LTX-2.3's latent upscalers) that "
            "--hires-upscaler names")
        .bind(to_text(GGDIFF_FIELD(model.hires_upscalers_dir)));
    opt(out, g, "hires-scale", OptType::Float, kGenerate)
        .range(0.01, 16)
        .def("2")
        .help("Upscale factor of the second pass (when no --hires-width/--hires-height)")
        .bind(to_float(GGDIFF_FIELD(gen.hires.scale)));
    opt(out, g, "hires-width", OptType::Int, kGenerate)
        .range(0, 16384)
        .def("0")
        .help("Target width of the second pass; 0: --hires-scale (one of width/height: square)")
        .bind(to_int(GGDIFF_FIELD(gen.hires.width)));
    opt(out, g, "hires-height", OptType::Int, kGenerate)
        .range(0, 16384)
        .def("0")
        .help("Target height of the second pass; 0: --hires-scale (one of width/height: square)")
        .bind(to_int(GGDIFF_FIELD(gen.hires.height)));
    opt(out, g, "hires-steps", OptType::Int, kGenerate)
        .range(0, 10000)
        .def("0")
        .help(
            "Steps the second pass samples; 0: --steps. As in A1111 the schedule has "
            "steps / strength steps and the pass runs its last ones")
        .bind(to_int(GGDIFF_FIELD(gen.hires.steps)));
    opt(out, g, "hires-denoising-strength", OptType::Float, kGenerate)
        .range(0.0001, 1)
        .def("0.7")
        .help("Denoising strength of the second pass: 0 keeps the upscaled image, 1 replaces it")
        .bind(to_float(GGDIFF_FIELD(gen.hires.denoising_strength)));
    opt(out, g, "hires-upscale-tile-size", OptType::Int, kGenerate)
        .range(16, 4096)
        .def("128")
        .help("Tile size (pixels) of an upscaler model in the hires fix")
        .bind(to_int(GGDIFF_FIELD(gen.hires.tile_size)));
    opt(out, g, "hires-sigmas", OptType::FloatList, kGenerate)
        .range(0)
        .help(
            "Explicit sigmas of the second pass, comma separated (at least two); replace its "
            "schedule, --hires-steps and --hires-denoising-strength's cut")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            auto s = sampling::parse_sigmas(v.text);
            if (!s.ok()) return s.status().with_context("--hires-sigmas");
            if (s->size() < 2) return Status::Error("--hires-sigmas needs at least two values");
            o.gen.hires.sigmas = *s;
            return Status::Ok();
        });
}

}  // namespace ggdiff::api
