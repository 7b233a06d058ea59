#include "sampling/rng.h"

#include <algorithm>
#include <cctype>

#include "sampling/philox_rng.h"
#include "sampling/std_default_rng.h"
#include "sampling/torch_cpu_rng.h"

namespace ggdiff::sampling {

Rng::~Rng() = default;

Result<RngKind> parse_rng(const std::string& name) {
    std::string key;
    for (char c : name) key += c == '-' ? '_' : static_cast<char>(std::tolower(c));
    if (key == "cuda") return RngKind::Cuda;
    if (key == "cpu") return RngKind::Cpu;
    if (key == "std_default") return RngKind::StdDefault;
    return Status::Error("unknown rng '" + name + "' (expected cuda, cpu or std_default)");
}

const char* rng_name(RngKind kind) {
    switch (kind) {
        case RngKind::Cuda:
            return "cuda";
        case RngKind::Cpu:
            return "cpu";
        case RngKind::StdDefault:
            return "std_default";
    }
    return "cuda";
}

std::vector<std::string> rng_names() {
    return {"cuda", "cpu", "std_default"};
}

std::unique_ptr<Rng> make_rng(RngKind kind, uint64_t seed) {
    switch (kind) {
        case RngKind::Cpu:
            return std::make_unique<TorchCpuRng>(seed);
        case RngKind::StdDefault:
            return std::make_unique<StdDefaultRng>(seed);
        case RngKind::Cuda:
            break;
    }
    return std::make_unique<PhiloxRng>(seed);
}

}  // namespace ggdiff::sampling
