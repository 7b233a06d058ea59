// Schema entries of step caching (--cache-mode and its parameters; docs/caching.md).
#include <cctype>
#include <string>

#include "api/option_decl.h"
#include "sampling/step_cache.h"

namespace ggdiff::api {

void add_cache_options(std::vector<OptionSpec>& out) {
    const char* g = "Step caching";
    opt(out, g, "cache-mode", OptType::Enum, kGenerate)
        .values(sampling::cache_mode_names)
        .def("disabled")
        .help(
            "Skip denoiser evaluations that can be predicted from earlier ones: ucache (SD1, "
            "SD2, SDXL), easycache, dbcache, taylorseer, cache-dit (the DiT families), spectrum "
            "(every family); a mode that does not apply to the model warns and changes nothing. "
            "The log says how many steps were skipped (docs/caching.md)")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            auto m = sampling::parse_cache_mode(v.text);
            if (!m.ok()) return m.status();
            o.gen.cache.mode = *m;
            v.text = sampling::cache_mode_name(*m);
            return Status::Ok();
        });
    opt(out, g, "cache-option", OptType::String, kGenerate)
        .help(
            "Cache parameters, key=value,... easycache/ucache: threshold (0.2 / 1.0), start "
            "(0.15), end (0.95); ucache also decay (1), relative (1), reset (1); dbcache/"
            "taylorseer/cache-dit: threshold (0.08), Fn (8), Bn (0), warmup (8); spectrum: w "
            "(0.4), m (3), lam (1), window (2), flex (0.5), warmup (4), stop (0.9)")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            // Checked here for its syntax and numbers; plan_request applies it for the mode
            // (its keys mean different parameters per mode).
            sampling::CacheParams scratch;
            GGDIFF_TRY(sampling::apply_cache_options(v.text, scratch));
            o.gen.cache_option = v.text;
            return Status::Ok();
        });
    opt(out, g, "scm-mask", OptType::String, kGenerate)
        .help(
            "Steps computation mask of cache-dit, comma-separated 0/1 (1 = compute); accepted "
            "for sd-cli command lines, but like stable-diffusion.cpp's step-level cache-dit "
            "ggdiff does not read it (a warning says so)")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            if (v.text.empty()) {
                o.gen.cache.scm_mask.clear();
                return Status::Ok();
            }
            auto mask = sampling::parse_scm_mask(v.text);
            if (!mask.ok()) return mask.status();
            o.gen.cache.scm_mask = std::move(*mask);
            return Status::Ok();
        });
    opt(out, g, "scm-policy", OptType::Enum, kGenerate)
        .values({"dynamic", "static"})
        .def("dynamic")
        .help("SCM policy of cache-dit: dynamic or static; not read either (see --scm-mask)")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            std::string t = v.text;
            for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            if (t != "dynamic" && t != "static") {
                return Status::Error("--scm-policy: '" + v.text + "' is not dynamic or static");
            }
            o.gen.cache.scm_dynamic = t == "dynamic";
            v.text = t;
            return Status::Ok();
        });
}

}  // namespace ggdiff::api
