#include <algorithm>
#include <cctype>

#include "sampling/samplers.h"

namespace ggdiff::sampling {

namespace {

struct SamplerInfo {
    SamplerKind kind;
    const char* cli;
    const char* a1111;
    std::vector<const char*> aliases;
    float default_eta;
    bool uses_eta;
};

const std::vector<SamplerInfo>& sampler_table() {
    static const std::vector<SamplerInfo> table = {
        {SamplerKind::Euler, "euler", "Euler", {"k_euler", "sample_euler"}, 0.0f, false},
        {SamplerKind::EulerA,
         "euler_a",
         "Euler a",
         {"euler_ancestral", "k_euler_a", "k_euler_ancestral", "Euler A"},
         1.0f,
         true},
        {SamplerKind::Heun, "heun", "Heun", {"k_heun"}, 0.0f, false},
        {SamplerKind::Dpm2, "dpm2", "DPM2", {"dpm_2", "k_dpm_2"}, 0.0f, false},
        {SamplerKind::Dpmpp2sA,
         "dpm++2s_a",
         "DPM++ 2S a",
         {"dpmpp_2s_ancestral", "k_dpmpp_2s_ancestral", "dpmpp_2s_a", "DPM++ (2s)"},
         1.0f,
         true},
        {SamplerKind::Dpmpp2m,
         "dpm++2m",
         "DPM++ 2M",
         {"dpmpp_2m", "k_dpmpp_2m", "DPM++ (2M)"},
         0.0f,
         false},
        {SamplerKind::Dpmpp2mV2,
         "dpm++2mv2",
         "DPM++ 2M v2",
         {"dpmpp_2m_v2", "k_dpmpp_2m_v2", "modified DPM++ (2M)"},
         0.0f,
         false},
        {SamplerKind::Dpmpp2mSde,
         "dpm++2m_sde",
         "DPM++ 2M SDE",
         {"dpmpp_2m_sde", "k_dpmpp_2m_sde", "DPM++ (2M) SDE"},
         1.0f,
         true},
        {SamplerKind::Ipndm, "ipndm", "iPNDM", {}, 0.0f, false},
        {SamplerKind::IpndmV, "ipndm_v", "iPNDM_v", {}, 0.0f, false},
        {SamplerKind::Lcm, "lcm", "LCM", {"k_lcm"}, 0.0f, false},
        {SamplerKind::DdimTrailing,
         "ddim_trailing",
         "DDIM",
         {"ddim", "DDIM \"trailing\""},
         0.0f,
         true},
        {SamplerKind::Tcd, "tcd", "TCD", {}, 0.0f, true},
        {SamplerKind::ResMultistep, "res_multistep", "Res Multistep", {}, 0.0f, true},
        {SamplerKind::Res2s, "res_2s", "Res 2s", {}, 0.0f, true},
        {SamplerKind::ErSde, "er_sde", "ER-SDE", {"ersde"}, 1.0f, true},
        {SamplerKind::EulerCfgPp, "euler_cfg_pp", "Euler CFG++", {"euler_cfgpp"}, 0.0f, false},
        {SamplerKind::EulerACfgPp,
         "euler_a_cfg_pp",
         "Euler a CFG++",
         {"euler_ancestral_cfg_pp", "euler_a_cfgpp"},
         1.0f,
         true},
    };
    return table;
}

// Folds spelling variants together: case, "++" vs "pp", separators, brackets and quotes,
// and the k-diffusion "k_" prefix ("DPM++ 2M SDE", "dpm++2m_sde" and "k_dpmpp_2m_sde" all
// become "dpmpp2msde").
std::string normalize(std::string name) {
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.rfind("k_", 0) == 0) lower = lower.substr(2);
    std::string out;
    for (size_t i = 0; i < lower.size(); ++i) {
        const char c = lower[i];
        if (c == '+' && i + 1 < lower.size() && lower[i + 1] == '+') {
            out += "pp";
            ++i;
        } else if (std::isalnum(static_cast<unsigned char>(c))) {
            out += c;
        }
    }
    return out;
}

const SamplerInfo& info(SamplerKind kind) {
    for (const auto& e : sampler_table())
        if (e.kind == kind) return e;
    return sampler_table().front();
}

}  // namespace

Result<SamplerKind> parse_sampler(const std::string& name) {
    const std::string key = normalize(name);
    if (!key.empty()) {
        for (const auto& e : sampler_table()) {
            if (key == normalize(e.cli) || key == normalize(e.a1111)) return e.kind;
            for (const char* alias : e.aliases)
                if (key == normalize(alias)) return e.kind;
        }
    }
    std::string known;
    for (const auto& n : sampler_names()) known += (known.empty() ? "" : ", ") + n;
    return Status::Error("unknown sampling method '" + name + "' (expected one of " + known + ")");
}

const char* sampler_cli_name(SamplerKind kind) {
    return info(kind).cli;
}
const char* sampler_a1111_name(SamplerKind kind) {
    return info(kind).a1111;
}

std::vector<std::string> sampler_aliases(SamplerKind kind) {
    return {info(kind).aliases.begin(), info(kind).aliases.end()};
}

std::vector<std::string> sampler_names() {
    std::vector<std::string> out;
    for (const auto& e : sampler_table()) out.emplace_back(e.cli);
    return out;
}

std::vector<SamplerKind> all_samplers() {
    std::vector<SamplerKind> out;
    for (const auto& e : sampler_table()) out.push_back(e.kind);
    return out;
}

float default_eta(SamplerKind kind) {
    return info(kind).default_eta;
}
bool uses_eta(SamplerKind kind) {
    return info(kind).uses_eta;
}

bool is_stochastic(SamplerKind kind) {
    return kind == SamplerKind::Lcm || default_eta(kind) > 0.0f;
}

bool needs_uncond(SamplerKind kind) {
    return kind == SamplerKind::EulerCfgPp || kind == SamplerKind::EulerACfgPp;
}

ScheduleKind default_schedule(SamplerKind kind, const Parameterization& model) {
    if (model.time_map() == Parameterization::TimeMap::Edm) return ScheduleKind::Exponential;
    if (kind == SamplerKind::Lcm || kind == SamplerKind::Tcd) return ScheduleKind::Lcm;
    if (kind == SamplerKind::DdimTrailing) return ScheduleKind::Simple;
    return ScheduleKind::Discrete;
}

}  // namespace ggdiff::sampling
