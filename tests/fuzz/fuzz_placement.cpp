// Fuzz target: the placement flag parsers and --rpc-servers (seeds in corpus/placement). The
// input holds up to five values, one per line: --backend, --params-backend, --split-mode,
// --max-vram, --rpc-servers. A value that parses must print (to_string) as a value that
// parses to the same thing: that text is what auto-fit tells users to pass.
#include <sstream>

#include "devices/devices.h"
#include "fuzz_util.h"
#include "placement/placement_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace ggdiff;
    using namespace ggdiff::placement;
    static const std::vector<std::string> kDevices = {"CPU", "CUDA0", "CUDA1", "RPC0", "Vulkan0"};
    std::vector<std::string> v(5);
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    for (std::string& s : v) std::getline(in, s);

    if (auto b = parse_backend_spec(v[0], kDevices); b.ok()) {
        auto again = parse_backend_spec(to_string(*b), kDevices);
        GGDIFF_FUZZ_CHECK(again.ok() && *again == *b);
    }
    if (auto p = parse_params_spec(v[1], kDevices); p.ok()) {
        auto again = parse_params_spec(to_string(*p), kDevices);
        GGDIFF_FUZZ_CHECK(again.ok() && *again == *p);
    }
    if (auto s = parse_split_mode_spec(v[2]); s.ok()) {
        auto again = parse_split_mode_spec(to_string(*s));
        GGDIFF_FUZZ_CHECK(again.ok() && *again == *s);
    }
    if (auto m = parse_max_vram(v[3], kDevices); m.ok() && !m->empty()) {
        GGDIFF_FUZZ_CHECK(parse_max_vram(to_string(*m), kDevices).ok());
    }
    (void)parse_rpc_servers(v[4]);

    PlacementArgs args;
    if (!v[0].empty()) args.backend = v[0];
    if (!v[1].empty()) args.params_backend = v[1];
    if (!v[2].empty()) args.split_mode = v[2];
    if (!v[3].empty()) args.max_vram = v[3];
    if (auto spec = parse_placement_spec(args, kDevices); spec.ok()) {
        (void)to_string(*spec);
        for (Module m : all_modules()) (void)spec->module(m);
    }
    return 0;
}
