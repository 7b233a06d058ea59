#include "families/ernie/names.h"

#include "io/name_util.h"

namespace ggdiff {

bool is_bare_ernie_image(const std::vector<std::string>& names) {
    bool layer = false, embedder = false;
    for (const std::string& n : names) {
        layer = layer || (starts_with(n, "layers.") && ends_with(n, ".adaLN_sa_ln.weight"));
        embedder = embedder || starts_with(n, "x_embedder.proj.");
    }
    return layer && embedder;
}

// The pipeline's pe/ (a prompt-enhancing LLM) and tokenizer folders are not model parts.
const ModelLayout kErnieImageLayout = {
    is_bare_ernie_image,
    nullptr,
    nullptr,
    nullptr,
    {"ErnieImagePipeline"},
    {{"transformer", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "text_encoders.llm."}},
};

}  // namespace ggdiff
