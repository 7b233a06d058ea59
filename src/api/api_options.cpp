#include "api/api_options.h"

#include <random>

#include "image/image_io.h"
#include "pipeline/generate_plan.h"

namespace ggdiff {

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
    if (options.init_image_path.empty()) return Status::Ok();
    auto img = read_image(options.init_image_path);
    if (!img.ok()) return img.status().with_context("--init-img " + options.init_image_path);
    options.gen.init_image = std::move(*img);
    return Status::Ok();
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
