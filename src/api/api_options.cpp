#include "api/api_options.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <limits>
#include <random>

#include "image/image_io.h"
#include "pipeline/generate_plan.h"

namespace ggdiff {

namespace {

// The images of `dir` in name order (byte order, as sd-cli sorts them), at most `max` of
// them; other files are skipped. `flag` and `what` ("frame") name them in errors.
Result<std::vector<Image>> read_image_dir(const std::string& dir, int max, const std::string& flag,
                                          const std::string& what) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        return Status::Error(flag + " " + dir + ": not a directory (give a folder of " + what +
                             " images)");
    }
    std::vector<fs::path> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        std::string ext = it->path().extension().string();
        std::transform(ext.begin(), ext.end(), ext.begin(),
                       [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        if (ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".webp" || ext == ".bmp") {
            files.push_back(it->path());
        }
    }
    if (ec) return Status::Error(flag + " " + dir + ": " + ec.message());
    if (files.empty()) {
        return Status::Error(flag + " " + dir + ": no " + what +
                             " images (.png, .jpg, .jpeg, .webp, .bmp) in it");
    }
    std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
        return a.filename().string() < b.filename().string();
    });
    std::vector<Image> frames;
    for (const fs::path& f : files) {
        if (static_cast<int>(frames.size()) >= max) break;
        auto img = read_image(f.string());
        if (!img.ok()) return img.status().with_context(flag + " " + what + " " + f.string());
        frames.push_back(std::move(*img));
    }
    return frames;
}

}  // namespace

Status set_api_option(ApiOptions& options, const std::string& name, const std::string& value) {
    return api::set_option(options, name, value);
}

bool is_api_option(const std::string& name) {
    const api::OptionSpec* s = api::find_option(name);
    return s && (s->is(api::kModel) || s->is(api::kGenerate));
}

Status resolve_api_inputs(ApiOptions& options) {
    if (options.gen.seed < 0) {
        std::random_device rd;
        options.gen.seed = static_cast<int64_t>(rd() & 0x7fffffff);
    }
    options.gen.ref_images.clear();
    for (const std::string& path : options.ref_image_paths) {
        auto ref = read_image(path);
        if (!ref.ok()) return ref.status().with_context("--ref-image " + path);
        options.gen.ref_images.push_back(std::move(*ref));
    }
    options.gen.ref_images.insert(options.gen.ref_images.end(),
                                  options.ref_images_in_memory.begin(),
                                  options.ref_images_in_memory.end());
    if (!options.control_video_path.empty()) {
        auto frames =
            read_image_dir(options.control_video_path, std::max(1, options.gen.video_frames),
                           "--control-video", "frame");
        if (!frames.ok()) return frames.status();
        options.gen.control_frames = std::move(*frames);
    }
    if (!options.pm_id_images_dir.empty()) {
        auto ids = read_image_dir(options.pm_id_images_dir, std::numeric_limits<int>::max(),
                                  "--pm-id-images-dir", "ID");
        if (!ids.ok()) return ids.status();
        options.gen.pm_id_images = std::move(*ids);
    }
    if (options.init_image_path.empty()) return Status::Ok();
    auto img = read_image(options.init_image_path);
    if (!img.ok()) return img.status().with_context("--init-img " + options.init_image_path);
    options.gen.init_image = std::move(*img);
    return Status::Ok();
}

GenerateOptions measuring_request(const ApiOptions& options) {
    GenerateOptions request = options.gen;
    if (!options.pm_id_images_dir.empty() && request.pm_id_images.empty()) {
        auto ids = read_image_dir(options.pm_id_images_dir, std::numeric_limits<int>::max(),
                                  "--pm-id-images-dir", "ID");
        if (ids.ok()) request.pm_id_images = std::move(*ids);
    }
    return request;
}

Status check_option_pairs(const ApiOptions& options) {
    if (options.gen.mask && options.init_image_path.empty() && !options.gen.init_image) {
        return Status::Error(
            "--mask needs an init image (-i): the mask says which part of it to repaint");
    }
    GGDIFF_TRY(check_slg_window(options.gen.slg));
    if (options.gen.control_image && options.model.control_net.empty()) {
        return Status::Error("--control-image needs a ControlNet (--control-net)");
    }
    if (options.model.photo_maker.empty()) {
        if (!options.pm_id_images_dir.empty() || !options.gen.pm_id_images.empty())
            return Status::Error("--pm-id-images-dir needs a PhotoMaker model (--photo-maker)");
        if (!options.gen.pm_id_embed_path.empty())
            return Status::Error("--pm-id-embed-path needs a PhotoMaker v2 model (--photo-maker)");
    }
    return Status::Ok();
}

ModelOptions effective_model_options(const ApiOptions& options) {
    ModelOptions m = options.model;
    if (m.offload_to_cpu) {
        // Every module's params in RAM unless --params-backend says otherwise: a bare
        // value covers all modules; MODULE= entries keep their own and the rest get cpu.
        if (m.params_backend.empty()) {
            m.params_backend = "cpu";
        } else if (m.params_backend.find('=') != std::string::npos &&
                   m.params_backend.find("all=") == std::string::npos) {
            m.params_backend = "all=cpu," + m.params_backend;
        }
    }
    return m;
}

}  // namespace ggdiff
