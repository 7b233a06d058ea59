// Dispatch: which wrappers to strip and which layout converter to apply for a role.
#include <functional>

#include "io/name_map.h"
#include "io/name_util.h"

namespace ggdiff {

namespace {

constexpr const char* kDiffusionPrefix = "model.diffusion_model.";
// Wan 2.2's high-noise expert: a second diffusion model, in the same names.
constexpr const char* kHighNoisePrefix = "model.high_noise_diffusion_model.";
// Ideogram 4's unconditional DiT, filed where stable-diffusion.cpp files it.
constexpr const char* kUncondPrefix = "model.diffusion_model.uncond.";
constexpr const char* kVaePrefix = "first_stage_model.";
constexpr const char* kControlPrefix = "control_model.";
constexpr const char* kUpscalerPrefix = "upscaler.";
constexpr const char* kClipVisionPrefix = "clip_vision.";
constexpr const char* kPhotoMakerPrefix = "photo_maker.";

enum class RoleKind { Full, Diffusion, Vae, TextEncoder, Control, Upscaler, ClipVision, Other };

RoleKind kind_of(const std::string& prefix) {
    if (prefix.empty()) return RoleKind::Full;
    if (prefix == kDiffusionPrefix || prefix == kHighNoisePrefix || prefix == kUncondPrefix) {
        return RoleKind::Diffusion;
    }
    if (prefix == kVaePrefix) return RoleKind::Vae;
    if (prefix == kControlPrefix) return RoleKind::Control;
    if (prefix == kUpscalerPrefix) return RoleKind::Upscaler;
    if (prefix == kClipVisionPrefix) return RoleKind::ClipVision;
    if (starts_with(prefix, "text_encoders.") || starts_with(prefix, "cond_stage_model.") ||
        starts_with(prefix, "conditioner.")) {
        return RoleKind::TextEncoder;
    }
    return RoleKind::Other;
}

bool is_full_checkpoint(const std::vector<std::string>& names) {
    static const char* kTop[] = {kDiffusionPrefix, kVaePrefix, "cond_stage_model.", "conditioner.",
                                 "text_encoders."};
    for (const std::string& n : names) {
        for (const char* p : kTop) {
            if (starts_with(n, p)) return true;
        }
    }
    return false;
}

bool any_starts_with(const std::vector<std::string>& names, const char* p) {
    for (const std::string& n : names) {
        if (starts_with(n, p)) return true;
    }
    return false;
}

// Working set: the surviving stored tensors and their current (partly rewritten) names.
struct Work {
    std::vector<size_t> source;
    std::vector<std::string> names;
};

// Strips `wrapper` when some name has it; names without it belong to other components
// and are dropped. With `all`, strips only when every name has it.
bool strip_wrapper(Work* w, const std::string& wrapper, bool all, std::vector<std::string>* notes) {
    size_t with = 0;
    for (const std::string& n : w->names) with += starts_with(n, wrapper);
    if (with == 0 || (all && with != w->names.size())) return false;
    Work kept;
    for (size_t i = 0; i < w->names.size(); ++i) {
        if (starts_with(w->names[i], wrapper)) {
            kept.source.push_back(w->source[i]);
            kept.names.push_back(w->names[i].substr(wrapper.size()));
        }
    }
    if (notes && kept.names.size() != w->names.size()) {
        notes->push_back("ignored " + std::to_string(w->names.size() - kept.names.size()) +
                         " tensors outside '" + wrapper + "'");
    }
    *w = std::move(kept);
    return true;
}

// Applies a one-to-one converter to every name; unmapped names stay as they are.
void convert_all(Work* w, const std::function<bool(const std::string&, std::string*)>& f) {
    for (std::string& n : w->names) {
        std::string out;
        if (f(n, &out)) n = out;
    }
}

// One stored name -> its canonical name(s) (several: equal slices of a fused tensor).
using SplitRename = bool (*)(const std::string&, std::vector<std::string>*);

// `split` (may be null) renames the names it knows. `text_encoder` (a "text_encoders.<x>."
// role): a name the wrappers left under "transformer." (in a file where not every name has
// it, so that wrapper stayed) loses it here, one name at a time. A canonical name must never
// read "text_encoders.<x>.transformer.<y>": that is how single-file DiT checkpoints spell
// "text_encoders.<x>.<y>" (map_full), and a converted file must read back with the names it
// was written with.
void emit(const Work& w, const std::string& prefix, SplitRename split, bool text_encoder,
          std::vector<NameMapping>* out) {
    for (size_t i = 0; i < w.names.size(); ++i) {
        std::vector<std::string> parts;
        if (split && split(w.names[i], &parts)) {
            for (size_t p = 0; p < parts.size(); ++p) {
                out->push_back({w.source[i], prefix + parts[p], static_cast<int>(p),
                                static_cast<int>(parts.size())});
            }
        } else {
            std::string n = w.names[i];
            if (text_encoder) replace_prefix(&n, "transformer.", "");
            out->push_back({w.source[i], prefix + n, 0, 1});
        }
    }
}

// A full checkpoint: names are already LDM; only open_clip towers are renamed
// ("<te>.model.X" -> "<te>.transformer.<HF name>").
std::vector<NameMapping> map_full(const std::vector<std::string>& names,
                                  std::vector<std::string>* notes) {
    std::vector<NameMapping> out;
    size_t renamed = 0;
    for (size_t i = 0; i < names.size(); ++i) {
        const std::string& n = names[i];
        std::string te;
        std::string rest;
        int idx = 0;
        if (starts_with(n, "cond_stage_model.model.")) {
            te = "cond_stage_model.";
            rest = n.substr(te.size() + 6);
        } else if (take_indexed(n, "conditioner.embedders.", &idx, &rest) &&
                   starts_with(rest, "model.")) {
            te = "conditioner.embedders." + std::to_string(idx) + ".";
            rest = rest.substr(6);
        }
        // DiT checkpoints (ComfyUI's single files): "text_encoders.X.transformer.Y" and
        // "vae.Y" under the names every other file role uses.
        const size_t tr = n.find(".transformer.");
        if (starts_with(n, "text_encoders.") && tr != std::string::npos &&
            n.find('.', std::string("text_encoders.").size()) == tr) {
            out.push_back({i, n.substr(0, tr + 1) + n.substr(tr + 13), 0, 1});
            continue;
        }
        if (starts_with(n, "vae.")) {
            out.push_back({i, std::string(kVaePrefix) + n.substr(4), 0, 1});
            continue;
        }
        std::vector<std::string> parts;
        if (!te.empty() && openclip_to_hf(rest, &parts)) {
            ++renamed;
            for (size_t p = 0; p < parts.size(); ++p) {
                out.push_back({i, te + "transformer." + parts[p], static_cast<int>(p),
                               static_cast<int>(parts.size())});
            }
            continue;
        }
        out.push_back({i, n, 0, 1});
    }
    if (notes && renamed) {
        notes->push_back("open_clip text encoder renamed to HF CLIP layout (" +
                         std::to_string(renamed) + " tensors)");
    }
    return out;
}

}  // namespace

std::vector<NameMapping> map_tensor_names(const std::vector<std::string>& names,
                                          const std::string& prefix,
                                          std::vector<std::string>* notes,
                                          const ModelLayouts& layouts) {
    const RoleKind kind = kind_of(prefix);
    if (kind == RoleKind::Full) {
        if (is_full_checkpoint(names)) return map_full(names, notes);
        // A single component given as the main model: file it under its component (the UNet
        // is shared by several families; the DiTs are each family's own).
        bool bare = DiffusersUnetMap::detect(names) || any_starts_with(names, "input_blocks.");
        for (const ModelLayout* l : layouts) {
            bare = bare || (l->bare_diffusion && l->bare_diffusion(names));
        }
        if (bare) {
            if (notes)
                notes->push_back("bare diffusion model: filed under " +
                                 std::string(kDiffusionPrefix));
            return map_tensor_names(names, kDiffusionPrefix, notes, layouts);
        }
        if (DiffusersVaeMap::detect(names) ||
            (any_starts_with(names, "encoder.down.") && any_starts_with(names, "decoder.up."))) {
            if (notes) notes->push_back("bare VAE: filed under " + std::string(kVaePrefix));
            return map_tensor_names(names, kVaePrefix, notes, layouts);
        }
    }

    Work w;
    w.names = names;
    for (size_t i = 0; i < names.size(); ++i) w.source.push_back(i);

    std::vector<std::pair<std::string, bool>> wrappers;  // (wrapper, needs all names)
    if (!prefix.empty()) wrappers.emplace_back(prefix, false);
    switch (kind) {
        case RoleKind::Diffusion:
            if (prefix != kDiffusionPrefix) wrappers.emplace_back(kDiffusionPrefix, false);
            wrappers.emplace_back("diffusion_model.", false);
            break;
        case RoleKind::Vae:
            wrappers.emplace_back("vae.", false);
            break;
        case RoleKind::TextEncoder:
            wrappers.emplace_back("cond_stage_model.transformer.", false);
            wrappers.emplace_back("cond_stage_model.model.", false);
            wrappers.emplace_back("cond_stage_model.", false);
            wrappers.emplace_back("transformer.", true);
            // A vision tower on its own (--llm_vision): HF / ComfyUI names keep "visual.".
            if (ends_with(prefix, ".visual.")) {
                wrappers.emplace_back("model.visual.", false);
                wrappers.emplace_back("visual.", false);
            }
            break;
        case RoleKind::ClipVision:
            wrappers.emplace_back("model.", true);  // open_clip's whole model, as saved by some
            break;
        case RoleKind::Other:
            // PhotoMaker: stable-diffusion.cpp's "pmid." names, or the original "id_encoder.".
            if (prefix == kPhotoMakerPrefix) {
                wrappers.emplace_back("pmid.", false);
                wrappers.emplace_back("id_encoder.", false);
            }
            break;
        default:
            break;
    }
    for (int pass = 0; pass < 4; ++pass) {
        bool changed = false;
        for (const auto& [wrapper, all] : wrappers)
            changed |= strip_wrapper(&w, wrapper, all, notes);
        if (!changed) break;
    }

    // The family whose converted diffusion-model names these are, if any.
    const ModelLayout* converted = nullptr;
    if (kind == RoleKind::Diffusion) {
        for (const ModelLayout* l : layouts) {
            if (l->converted && (l->to_canonical || l->renamer) && l->converted(w.names)) {
                converted = l;
                break;
            }
        }
    }
    SplitRename split = nullptr;
    if (kind == RoleKind::Diffusion && DiffusersUnetMap::detect(w.names)) {
        DiffusersUnetMap m(w.names);
        convert_all(&w, [&](const std::string& n, std::string* o) { return m.map(n, o); });
        if (notes) notes->push_back("diffusers UNet layout renamed to LDM");
    } else if (converted) {
        if (converted->renamer) {
            convert_all(&w, converted->renamer(w.names));
        } else {
            convert_all(&w, converted->to_canonical);
        }
        if (notes && converted->converted_note) notes->push_back(converted->converted_note);
    } else if (kind == RoleKind::Vae && DiffusersWanVaeMap::detect(w.names)) {
        DiffusersWanVaeMap m(w.names);
        convert_all(&w, [&](const std::string& n, std::string* o) { return m.map(n, o); });
        if (notes) notes->push_back("diffusers Wan VAE renamed to the original names");
    } else if (kind == RoleKind::Vae && DiffusersVaeMap::detect(w.names)) {
        DiffusersVaeMap m(w.names);
        convert_all(&w, [&](const std::string& n, std::string* o) { return m.map(n, o); });
        if (notes) notes->push_back("diffusers VAE layout renamed to LDM");
    } else if (kind == RoleKind::Control && DiffusersControlNetMap::detect(w.names)) {
        DiffusersControlNetMap m(w.names);
        convert_all(&w, [&](const std::string& n, std::string* o) { return m.map(n, o); });
        if (notes) notes->push_back("diffusers ControlNet layout renamed to the original");
    } else if (kind == RoleKind::Upscaler && is_old_esrgan_layout(w.names)) {
        convert_all(&w, old_esrgan_to_basicsr);
        if (notes) notes->push_back("original ESRGAN names renamed to RRDBNet (BasicSR) names");
    } else if (kind == RoleKind::TextEncoder && is_openclip_layout(w.names)) {
        split = openclip_to_hf;
        if (notes) notes->push_back("open_clip text encoder renamed to HF CLIP layout");
    } else if (kind == RoleKind::TextEncoder && ends_with(prefix, ".visual.") &&
               is_mmproj_layout(w.names)) {
        convert_all(&w, mmproj_to_hf);
        if (notes) notes->push_back("llama.cpp mmproj vision tower renamed to HF layout");
    } else if (kind == RoleKind::TextEncoder && is_llama_gemma_gguf_layout(w.names)) {
        convert_all(&w, llama_gemma_gguf_to_hf);
        if (notes) notes->push_back("llama.cpp Gemma names renamed to HF layout");
    } else if (kind == RoleKind::TextEncoder && is_llama_gguf_layout(w.names)) {
        convert_all(&w, llama_gguf_to_hf);
        if (notes) notes->push_back("llama.cpp language model names renamed to HF layout");
    } else if (kind == RoleKind::ClipVision && is_openclip_vision_layout(w.names)) {
        split = openclip_vision_to_hf;
        if (notes) notes->push_back("open_clip vision tower renamed to HF CLIP vision layout");
    } else if (kind == RoleKind::ClipVision || prefix == kPhotoMakerPrefix) {
        // HF's own spelling is "pre_layrnorm"; some converted files fix it. A PhotoMaker file
        // may keep its projection inside the tower.
        convert_all(&w, [](const std::string& n, std::string* o) {
            *o = n;
            return replace_prefix(o, "vision_model.pre_layernorm.", "vision_model.pre_layrnorm.") ||
                   replace_prefix(o, "vision_model.visual_projection.", "visual_projection.");
        });
    }
    std::vector<NameMapping> out;
    emit(w, prefix, split, starts_with(prefix, "text_encoders."), &out);
    return out;
}

}  // namespace ggdiff
