// Schema entries of live previews during sampling: how they are made (--preview), how often
// (--preview-interval), of which latent (--preview-noisy), with which decoder
// (--taesd-preview-only) and, for the CLI, where they go (--preview-path).
#include <cctype>
#include <string>
#include <utility>

#include "api/option_decl.h"

namespace ggdiff::api {

void add_preview_options(std::vector<OptionSpec>& out) {
    const char* g = "Preview";
    opt(out, g, "preview", OptType::Enum, kGenerate)
        .values({"none", "proj", "tae", "vae"})
        .def("none")
        .help(
            "Live preview during sampling: proj (the latent projected to RGB: cheap, 1/8 of the "
            "image side), tae (decoded by TAESD, needs --taesd), vae (decoded by the VAE, or "
            "by TAESD with --taesd-preview-only); none: off")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            // The binder parses (the schema then names the accepted values on an error).
            static const std::pair<const char*, PreviewMode> kModes[] = {
                {"none", PreviewMode::None},
                {"proj", PreviewMode::Proj},
                {"tae", PreviewMode::Tae},
                {"vae", PreviewMode::Vae}};
            std::string t = v.text;
            for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            for (const auto& [name, mode] : kModes) {
                if (t != name) continue;
                o.gen.preview.mode = mode;
                v.text = name;
                return Status::Ok();
            }
            return Status::Error("unknown preview method");
        });
    opt(out, g, "preview-path", OptType::Path, kFrontend)
        .def("preview.png")
        .help(
            "File the CLI writes each preview to (PNG, JPEG or WebP by extension), replaced "
            "at every update");
    opt(out, g, "preview-interval", OptType::Int, kGenerate)
        .range(1, 100000)
        .def("1")
        .help("Preview every N sampling steps (steps N, 2N, ...); 1: every step")
        .bind(to_int(GGDIFF_FIELD(gen.preview.interval)));
    opt(out, g, "preview-noisy", OptType::Bool, kGenerate)
        .help("Preview the noisy latent the model is given instead of its denoised estimate")
        .bind(to_bool(GGDIFF_FIELD(gen.preview.noisy)));
    opt(out, g, "taesd-preview-only", OptType::Bool, kModel)
        .help(
            "With --taesd: TAESD decodes the previews only (--preview tae or vae); the final "
            "images use the full VAE")
        .bind(to_bool(GGDIFF_FIELD(model.taesd_preview_only)));
}

}  // namespace ggdiff::api
