// The original ESRGAN checkpoint layout (an nn.Sequential: conv, ShortcutBlock(RRDBs + conv),
// upsample stages, conv_hr, conv_last) -> BasicSR's RRDBNet names, which the upscaler graph
// reads. Parameterless layers (Upsample, LeakyReLU) take indices too, so the index of a
// learned layer after the body says which one it is.
#include "io/name_map.h"
#include "io/name_util.h"

namespace ggdiff {

bool is_old_esrgan_layout(const std::vector<std::string>& names) {
    bool first = false, body = false;
    for (const std::string& n : names) {
        first = first || starts_with(n, "model.0.");
        body = body || starts_with(n, "model.1.sub.");
    }
    return first && body;
}

bool old_esrgan_to_basicsr(const std::string& name, std::string* out) {
    int block = 0;
    std::string rest;
    if (take_indexed(name, "model.1.sub.", &block, &rest)) {
        // RRDB N: RDBk.convj.0.{weight,bias}; the conv closing the body: {weight,bias}.
        if (rest == "weight" || rest == "bias") {
            *out = "conv_body." + rest;
            return true;
        }
        int rdb = 0, conv = 0;
        std::string tail, param;
        if (take_indexed(rest, "RDB", &rdb, &tail) && take_indexed(tail, "conv", &conv, &param) &&
            starts_with(param, "0.")) {
            *out = "body." + std::to_string(block) + ".rdb" + std::to_string(rdb) + ".conv" +
                   std::to_string(conv) + "." + param.substr(2);
            return true;
        }
        return false;
    }
    int layer = 0;
    if (!take_indexed(name, "model.", &layer, &rest)) return false;
    const char* to = nullptr;
    switch (layer) {
        case 0:
            to = "conv_first.";
            break;
        case 2:
        case 5:
        case 8:
            to = "conv_hr.";
            break;
        case 3:
            to = "conv_up1.";
            break;
        case 6:
            to = "conv_up2.";
            break;
        case 4:
        case 7:
        case 10:
            to = "conv_last.";
            break;
        default:
            return false;
    }
    *out = to + rest;
    return true;
}

}  // namespace ggdiff
