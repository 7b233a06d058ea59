#include "placement/placement_spec.h"

namespace ggdiff::placement {

ModulePlacement PlacementSpec::module(Module m, size_t replica) const {
    ModulePlacement out;
    if (auto d = backend.get(m)) out.devices = d->for_replica(replica);
    if (auto p = params.get(m); p && p->kind != ParamsLocation::Kind::Default) out.params = *p;
    if (auto s = split_mode.get(m)) out.split_mode = *s;
    return out;
}

Result<PlacementSpec> parse_placement_spec(const PlacementArgs& args,
                                           const std::vector<std::string>& device_names) {
    PlacementSpec out;
    if (args.backend) {
        auto r = parse_backend_spec(*args.backend, device_names);
        if (!r) return r.status().with_context("--backend");
        out.backend = std::move(r).value();
    }
    if (args.params_backend) {
        auto r = parse_params_spec(*args.params_backend, device_names);
        if (!r) return r.status().with_context("--params-backend");
        out.params = std::move(r).value();
    }
    if (args.split_mode) {
        auto r = parse_split_mode_spec(*args.split_mode);
        if (!r) return r.status().with_context("--split-mode");
        out.split_mode = std::move(r).value();
    }
    if (args.max_vram) {
        auto r = parse_max_vram(*args.max_vram, device_names);
        if (!r) return r.status().with_context("--max-vram");
        out.max_vram = std::move(r).value();
    }
    return out;
}

std::string to_string(const PlacementSpec& spec) {
    std::vector<std::string> parts;
    if (!spec.backend.empty()) parts.push_back("--backend " + shell_quote(to_string(spec.backend)));
    if (!spec.params.empty())
        parts.push_back("--params-backend " + shell_quote(to_string(spec.params)));
    if (!spec.split_mode.empty())
        parts.push_back("--split-mode " + shell_quote(to_string(spec.split_mode)));
    if (!spec.max_vram.empty())
        parts.push_back("--max-vram " + shell_quote(to_string(spec.max_vram)));
    return join(parts, " ");
}

}  // namespace ggdiff::placement
