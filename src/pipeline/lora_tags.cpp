#include "pipeline/lora_tags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace ggdiff {
namespace {

bool parse_weight(const std::string& s, float* out) {
    if (s.empty()) return false;
    errno = 0;
    char* end = nullptr;
    const float v = std::strtof(s.c_str(), &end);
    if (errno != 0 || *end != '\0' || !std::isfinite(v)) return false;
    *out = v;
    return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out(1);
    for (char c : s) {
        if (c == sep) {
            out.emplace_back();
        } else {
            out.back() += c;
        }
    }
    return out;
}

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

Result<std::string> extract_lora_tags(const std::string& prompt, std::vector<LoraRequest>* loras) {
    std::string text;
    size_t i = 0;
    while (i < prompt.size()) {
        const size_t open = prompt.find('<', i);
        if (open == std::string::npos) break;
        const size_t close = prompt.find('>', open);
        if (close == std::string::npos) break;
        const std::string body = prompt.substr(open + 1, close - open - 1);
        const std::vector<std::string> parts = split(body, ':');
        if (parts.size() < 2 || (parts[0] != "lora" && parts[0] != "lyco")) {
            text += prompt.substr(i, open + 1 - i);
            i = open + 1;
            continue;
        }
        LoraRequest r;
        r.name = trim(parts[1]);
        static const std::string kHighNoise = "|high_noise|";
        if (r.name.rfind(kHighNoise, 0) == 0) {
            r.high_noise = true;
            r.name = trim(r.name.substr(kHighNoise.size()));
        }
        if (r.name.empty()) return Status::Error("<" + body + ">: the LoRA tag names no file");
        if (parts.size() >= 3 && !parse_weight(trim(parts[2]), &r.te)) {
            return Status::Error("<" + body + ">: \"" + parts[2] + "\" is not a LoRA weight");
        }
        r.unet = r.te;
        if (parts.size() >= 4 && !parse_weight(trim(parts[3]), &r.unet)) {
            return Status::Error("<" + body + ">: \"" + parts[3] + "\" is not a LoRA weight");
        }
        if (parts.size() > 4) return Status::Error("<" + body + ">: too many fields");
        bool merged = false;
        for (LoraRequest& have : *loras) {
            if (have.name == r.name && have.high_noise == r.high_noise) {
                have.te += r.te;
                have.unet += r.unet;
                merged = true;
            }
        }
        if (!merged) loras->push_back(r);
        text += prompt.substr(i, open - i);
        i = close + 1;
    }
    text += prompt.substr(std::min(i, prompt.size()));
    return text;
}

}  // namespace ggdiff
