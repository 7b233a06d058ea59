#include "families/sd3/names.h"

#include <string>
#include <vector>

#include "io/name_util.h"

namespace ggdiff {
namespace {

bool bare_sd3(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "joint_blocks.")) return true;
    }
    return false;
}

}  // namespace

const ModelLayout kSd3Layout = {
    bare_sd3,
    nullptr,
    nullptr,
    nullptr,
    {"StableDiffusion3Pipeline", "StableDiffusion3Img2ImgPipeline"},
    {{"transformer", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "text_encoders.clip_l."},
     {"text_encoder_2", "text_encoders.clip_g."},
     {"text_encoder_3", "text_encoders.t5xxl."}},
};

}  // namespace ggdiff
