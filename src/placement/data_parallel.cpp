#include "placement/data_parallel.h"

#include <algorithm>

namespace ggdiff::placement {

size_t replica_count(const BackendSpec& spec) {
    if (spec.all && spec.all->data_parallel()) return spec.all->replicas.size();
    for (const auto& [module, value] : spec.modules) {
        if (value.data_parallel()) return value.replicas.size();
    }
    return 1;
}

std::vector<std::string> replica_devices(const BackendSpec& spec, size_t k) {
    std::vector<std::string> devices;
    auto add = [&](const BackendValue& v) {
        if (!v.data_parallel()) return;
        for (const std::string& d : v.for_replica(k)) {
            if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
        }
    };
    if (spec.all) add(*spec.all);
    for (Module m : all_modules()) {
        auto it = spec.modules.find(m);
        if (it != spec.modules.end()) add(it->second);
    }
    return devices;
}

std::string replica_name(const BackendSpec& spec, size_t k) {
    return join(replica_devices(spec, k), "+");
}

std::vector<int> replica_items(int batch, size_t replicas, size_t k) {
    std::vector<int> items;
    const int n = static_cast<int>(std::max<size_t>(1, replicas));
    for (int i = static_cast<int>(k); i < batch; i += n) items.push_back(i);
    return items;
}

std::string data_parallel_summary(const std::vector<std::string>& names, int batch) {
    std::string out =
        "data parallel: " + std::to_string(names.size()) + " replicas (" + join(names, ", ") + ")";
    std::vector<std::string> busy, idle;
    for (size_t k = 0; k < names.size(); ++k) {
        const std::vector<int> items = replica_items(batch, names.size(), k);
        if (items.empty()) {
            idle.push_back(names[k]);
            continue;
        }
        std::vector<std::string> numbers;
        for (int i : items) numbers.push_back(std::to_string(i));
        busy.push_back(join(numbers, ",") + " on " + names[k]);
    }
    out += std::string(batch == 1 ? "; item " : "; items ") + join(busy, ", ");
    if (!idle.empty()) {
        out += "; " + join(idle, ", ") + " idle (-b " + std::to_string(batch) + ")";
    }
    return out;
}

}  // namespace ggdiff::placement
