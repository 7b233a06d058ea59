// Schema entries of sd-cli features ggdiff does not have yet. They parse (so sd-cli
// command lines stay valid) and setting one fails with "--NAME is not supported yet";
// an entry moves to its group's file when its feature lands.
#include "api/option_decl.h"

namespace ggdiff::api {

void add_planned_options(std::vector<OptionSpec>& out) {
    auto later = [&](const char* group, const char* name, OptType type, const char* help) {
        return opt(out, group, name, type, kGenerate).not_yet().help(help);
    };
    const char* g = "Generation";
    later(g, "timestep-shift", OptType::Int,
          "Timestep shift for NitroFusion models (e.g. 250 or 500)");
    later(g, "extra-sample-args", OptType::String, "Extra sampler parameters, key=value,...");

    g = "VAE";
    later(g, "vae-relative-tile-size", OptType::Pair,
          "Tile size relative to the image, XxY: < 1 a fraction, >= 1 tiles per side");
    later(g, "force-sdxl-vae-conv-scale", OptType::Bool, "Apply the conv scale of the SDXL VAE");

    g = "High-noise expert (Wan 2.2)";
    // The expert is Wan's, and sd-cli's Wan DiT takes no list of blocks to skip: its
    // skip-layer pass is the plain one, so these change nothing there either.
    const char* no_slg =
        "the high-noise expert is a Wan DiT, which does no skip-layer guidance (sd-cli passes "
        "Wan no blocks to skip, so its guidance pass equals the plain one)";
    auto hn_slg = [&](const char* name, OptType type, const char* help) {
        opt(out, g, name, type, kGenerate).help(help).no_effect(no_slg);
    };
    hn_slg("high-noise-slg-scale", OptType::Float, "High-noise skip layer guidance scale");
    hn_slg("high-noise-skip-layer-start", OptType::Float, "High-noise skip layer guidance start");
    hn_slg("high-noise-skip-layer-end", OptType::Float, "High-noise skip layer guidance end");
    hn_slg("high-noise-skip-layers", OptType::IntList, "High-noise skip layer guidance layers");

    g = "ControlNet, PhotoMaker, PuLID";
    opt(out, g, "pm-id-images-dir", OptType::Path, kGenerate)
        .help(
            "PhotoMaker: a folder of images of the person (.png, .jpg, .jpeg, .webp, .bmp, in "
            "name order); needs --photo-maker")
        .bind(to_text(GGDIFF_FIELD(pm_id_images_dir)));
    opt(out, g, "pm-id-embed-path", OptType::Path, kGenerate)
        .help(
            "PhotoMaker v2: the InsightFace embeddings of the ID images (id_embeds.bin, as "
            "stable-diffusion.cpp's face_detect.py writes it)")
        .bind(to_text(GGDIFF_FIELD(gen.pm_id_embed_path)));
    opt(out, g, "pm-style-strength", OptType::Float, kGenerate)
        .range(0, 100)
        .def("20")
        .help(
            "PhotoMaker: percentage of the steps sampled with the plain prompt before the ID "
            "takes over (lower follows the ID more faithfully)")
        .bind(to_float(GGDIFF_FIELD(gen.pm_style_strength)));
    opt(out, g, "pulid-id-embedding", OptType::Path, kGenerate)
        .help(
            "PuLID-FLUX: the identity of a person (.pulidembd: a GGUF with tensor pulid_id of 32 "
            "tokens of 2048, as stable-diffusion.cpp's script/pulid_extract_id.py writes it); "
            "needs --pulid-weights")
        .bind(to_text(GGDIFF_FIELD(gen.pulid_id_embedding)));
    opt(out, g, "pulid-id-weight", OptType::Float, kGenerate)
        .def("1")
        .help("PuLID-FLUX: scale of what the identity adds (typically 0.7-1.2; 0: nothing)")
        .bind(to_float(GGDIFF_FIELD(gen.pulid_id_weight)));

    g = "Model family switches";
    opt(out, g, "chroma-disable-dit-mask", OptType::Bool, kModel)
        .help(
            "Chroma: let the DiT attend to every T5 padding token (by default all but the first "
            "--chroma-t5-mask-pad pads are masked out); no effect on other families")
        .bind([](ApiOptions& o, OptionValue& v) {
            o.model.chroma_dit_mask = !v.b;
            return Status::Ok();
        });
    opt(out, g, "chroma-enable-t5-mask", OptType::Bool, kModel)
        .help("Chroma: mask the padding inside T5's own attention too; no effect on other families")
        .bind(to_bool(GGDIFF_FIELD(model.chroma_t5_mask)));
    opt(out, g, "chroma-t5-mask-pad", OptType::Int, kModel)
        .def("1")
        .help(
            "Chroma: T5 padding tokens the DiT still attends to after the prompt (0 or more); no "
            "effect on other families")
        .check([](const OptionValue& v) -> Status {
            if (v.i >= 0 && v.i <= 4096) return Status::Ok();
            return Status::Error("--chroma-t5-mask-pad must be between 0 and 4096, got " +
                                 std::to_string(v.i));
        })
        .bind(to_int(GGDIFF_FIELD(model.chroma_t5_mask_pad)));
    opt(out, g, "qwen-image-zero-cond-t", OptType::Bool, kModel)
        .help(
            "Qwen Image Edit 2511: modulate the reference image tokens with the timestep-0 "
            "embedding (needed for 2511 files without ComfyUI's __index_timestep_zero__ marker "
            "tensor; with the marker it is on by itself)")
        .bind(to_bool(GGDIFF_FIELD(model.qwen_image_zero_cond_t)));
}

}  // namespace ggdiff::api
