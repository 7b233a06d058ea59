#include "modes.h"

#include <cstdio>
#include <cstdlib>

#include "image/image_io.h"
#include "image/image_metadata.h"
#include "image/infotext.h"
#include "io/gguf_writer.h"
#include "io/model_info.h"
#include "io/tensor_index.h"
#include "io/weight_type.h"
#include "pipeline/progress.h"

namespace ggdiff::cli {

int run_list_devices(const CliOptions& cli) {
    char* text = nullptr;
    if (ggdiff_list_devices(cli.rpc_servers.c_str(), &text) != 0) {
        std::fprintf(stderr, "error: %s\n", ggdiff_last_error());
        return 1;
    }
    std::fputs(text, stdout);
    std::free(text);
    return 0;
}

namespace {

Result<TensorIndex> open_files(const CliOptions& cli) {
    TensorIndex index;
    std::vector<std::pair<std::string, std::string>> files;
    for (const std::string& m : cli.models) files.emplace_back(m, "model");
    const std::pair<const std::string*, const char*> roles[] = {
        {&cli.diffusion_model, "diffusion-model"},
        {&cli.vae, "vae"},
        {&cli.clip_l, "clip_l"},
        {&cli.clip_g, "clip_g"},
        {&cli.t5xxl, "t5xxl"},
        {&cli.llm, "llm"},
        {&cli.taesd, "taesd"}};
    for (const auto& [path, role] : roles) {
        if (!path->empty()) files.emplace_back(*path, role);
    }
    if (files.empty()) return Status::Error("no model file given (-m FILE)");
    for (const auto& [path, role] : files) {
        Status st = index.add(path, prefix_for_role(role));
        if (!st.ok()) return st;
    }
    return index;
}

}  // namespace

int run_info(const CliOptions& cli) {
    auto index = open_files(cli);
    if (!index.ok()) {
        std::fprintf(stderr, "error: %s\n", index.status().message().c_str());
        return 1;
    }
    std::fputs(format_model_info(summarize(*index)).c_str(), stdout);
    return 0;
}

int run_convert(const CliOptions& cli) {
    auto index = open_files(cli);
    if (!index.ok()) {
        std::fprintf(stderr, "error: %s\n", index.status().message().c_str());
        return 1;
    }
    int type = -1;
    if (!cli.type.empty()) {
        auto t = parse_weight_type(cli.type);
        if (!t.ok()) {
            std::fprintf(stderr, "error: %s\n", t.status().message().c_str());
            return 1;
        }
        type = *t;
    }
    Status st = convert_to_gguf(
        *index, cli.output, type, [](size_t done, size_t total, const std::string&) {
            print_progress_bar("convert", static_cast<int>(done), static_cast<int>(total), 0.0);
        });
    if (!st.ok()) {
        std::fprintf(stderr, "error: %s\n", st.message().c_str());
        return 1;
    }
    std::fprintf(stderr, "wrote %s (%zu tensors)\n", cli.output.c_str(), index->size());
    return 0;
}

int run_metadata(const CliOptions& cli) {
    auto params = read_image_parameters(cli.image);
    if (!params.ok()) {
        std::fprintf(stderr, "error: %s\n", params.status().message().c_str());
        return 1;
    }
    if (cli.metadata_raw) {
        std::printf("%s\n", params->c_str());
        return 0;
    }
    auto text = format_metadata(*params, cli.metadata_format);
    if (!text.ok()) {
        std::fprintf(stderr, "error: %s\n", text.status().message().c_str());
        return 1;
    }
    std::printf("%s\n", text->c_str());
    return 0;
}

bool save_image(const ggdiff_image& image, const std::string& path, bool with_metadata) {
    Image img;
    img.width = image.width;
    img.height = image.height;
    img.channels = image.channels;
    img.pixels.assign(
        image.data, image.data + static_cast<size_t>(image.width) * image.height * image.channels);
    ImageWriteOptions wo;
    if (with_metadata && image.parameters) wo.parameters = image.parameters;
    Status st = write_image(path, img, wo);
    if (!st.ok()) {
        std::fprintf(stderr, "error: %s\n", st.message().c_str());
        return false;
    }
    return true;
}

void print_progress(const char* phase, int step, int total, double secs) {
    print_progress_bar(phase, step, total, secs);
}

}  // namespace ggdiff::cli
