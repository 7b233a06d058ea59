// The body of the safetensors and GGUF fuzz targets (they differ in their seed corpora): the
// in-memory header readers, then the whole path a checkpoint takes through ggdiff: indexing
// under a role prefix (name maps), reading every tensor as floats, the -M info summary, and
// -M convert to GGUF, whose output must index again with the same tensors.
#pragma once

#include <ggml.h>

#include <cstdio>
#include <set>

#include "core/log.h"
#include "fuzz_util.h"
#include "io/checkpoint_file.h"
#include "io/gguf_writer.h"
#include "io/model_info.h"
#include "io/tensor_index.h"

namespace ggdiff::fuzz {

inline void fuzz_checkpoint(const uint8_t* data, size_t size) {
    static const bool quiet = [] {
        set_log_level(LogLevel::Quiet);
        return true;
    }();
    (void)quiet;
    (void)read_checkpoint_header(data, size);
    if (size >= 4) (void)read_gguf_header_direct(data, size);

    const std::string path = input_as_file(data, size);
    if (path.empty()) return;
    static const char* const kPrefixes[] = {"", "model.diffusion_model.", "first_stage_model.",
                                            "text_encoders.clip_l."};
    TensorIndex index;
    if (!index.add(path, kPrefixes[size % 4]).ok()) return;

    std::vector<float> values;
    for (const TensorInfo& t : index.tensors()) {
        GGDIFF_FUZZ_CHECK(t.numel() >= 0);
        if (t.numel() <= (1 << 20)) (void)index.read_f32(t, values);
    }
    (void)format_model_info(summarize(index));

    static const int kTypes[] = {-1, GGML_TYPE_F16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K};
    const std::string out = scratch_dir() + "/out.gguf";
    if (!convert_to_gguf(index, out, kTypes[data[size - 1] % 4]).ok()) return;
    TensorIndex back;
    const Status st = back.add(out);
    if (!st.ok())
        std::fprintf(stderr, "converted file does not read back: %s\n", st.message().c_str());
    GGDIFF_FUZZ_CHECK(st.ok());
    std::set<std::string> names;
    for (const TensorInfo& t : index.tensors()) {
        if (t.name.rfind("model_ema.", 0) != 0) names.insert(t.name);
    }
    GGDIFF_FUZZ_CHECK(back.size() == names.size());
    for (const TensorInfo& t : back.tensors()) {
        if (names.count(t.name) != 1) {
            std::fprintf(stderr, "converted file has a tensor the source has not: %s\n",
                         t.name.c_str());
        }
        GGDIFF_FUZZ_CHECK(names.count(t.name) == 1);
        GGDIFF_FUZZ_CHECK(t.shape == index.find(t.name)->shape);
    }
}

}  // namespace ggdiff::fuzz
