// Engine: a loaded model (the family's text conditioning, denoiser and autoencoder on
// their devices) that turns GenerateOptions into images through the one generic generate
// path (pipeline/generate.cpp). One Engine per model; generate() may be called many times
// (not concurrently). With data-parallel placement (`--backend "all=RPC0|RPC1"`,
// placement/data_parallel.h) the Engine holds one replica of the family per device of the
// '|' lists and generate() runs the batch items on them at once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/tensor_index.h"
#include "models/upscaler/esrgan.h"
#include "pipeline/family.h"
#include "pipeline/lora_manager.h"
#include "pipeline/options.h"

namespace ggdiff {

// What one phase of generate() computed and the most memory the process held during it.
struct PhaseFigures {
    double flops = 0;       // products, convolutions, attention (runtime::computed_flops)
    uint64_t peak_rss = 0;  // bytes; from the phase's start where the kernel lets us reset
    uint64_t uploaded = 0;  // weight bytes uploaded by --max-vram graph cutting
};

// Wall-clock figures of the last generate() call (for -v and ggdiff-bench).
struct PhaseTimings {
    double text = 0, encode = 0, decode = 0;
    double sampling = 0;        // all steps of all batch images
    std::vector<double> steps;  // mean seconds per step, per batch image
    double lora = 0;            // applying the prompt's LoRAs (0 when unchanged)
    PhaseFigures text_figures, encode_figures, sampling_figures, decode_figures;
};

class Engine {
  public:
    ~Engine();

    // Opens the checkpoint files, picks the family from the registry, validates placement
    // and loads the weights. Errors name the file, tensor or flag at fault.
    // `request` (may be null): the generation the placement is sized for; with --auto-fit or
    // a layer split, the modules' compute buffers are measured at its size first.
    static Result<std::unique_ptr<Engine>> load(const ModelOptions& options,
                                                const GenerateOptions* request = nullptr);

    // The compute buffer of each module ("te", "diffusion", "vae", ...) for `request`,
    // measured by building the family's graphs at its size without reading weights or
    // computing (one sampling step, the first batch item, LoRA tags left out).
    static Result<std::map<std::string, uint64_t>> measure_compute(const ModelOptions& options,
                                                                   const TensorIndex& index,
                                                                   GenerateOptions request);

    // `on_preview` (may be null) gets the live previews options.preview asks for.
    Result<std::vector<GeneratedImage>> generate(const GenerateOptions& options,
                                                 const ProgressFn& progress,
                                                 const ImageFn& on_image = nullptr,
                                                 const PreviewFn& on_preview = nullptr);

    // How many images generate() makes for these options: one per batch item, times the
    // frames each latent decodes to (Qwen Image Layered: one per layer).
    int image_count(const GenerateOptions& options) const;

    // The family's name with its variant ("FLUX.1 dev"), and the registry's id ("flux").
    std::string family() const { return replicas_.front()->family.name; }
    std::string family_id() const { return family_id_; }
    std::string model_name() const { return model_name_; }  // base name of the main file
    // The parts of the first replica (every replica's are alike).
    const Family& family_parts() const { return replicas_.front()->family; }
    const PhaseTimings& timings() const { return timings_; }
    // The --upscale-model upscaler every output image goes through (nullptr without one).
    models::EsrganUpscaler* upscaler() { return upscaler_.get(); }

    // One copy of the model on its devices: the only one, or one of several data-parallel
    // replicas (each computes on its own backend instances, runtime/graph_runner.h).
    struct Replica {
        std::string name;  // "RPC1" for logs and errors; empty without '|'
        Family family;
        std::unique_ptr<LoraManager> lora;
        // The non-CPU devices this replica shares with another one (a module without '|' on
        // a device): taken, in one global order, while a phase uses them: every module's for
        // the preparation (LoRAs, text, init image), the denoiser's for sampling an item, the
        // VAE's for decoding it. Empty when nothing is shared.
        std::vector<std::mutex*> prepare_locks, sampling_locks, decode_locks;
    };

  private:
    Engine() = default;
    // The hires fix's upscaler model at `path`, run in tiles of `tile` pixels.
    Result<std::function<Result<HostTensor>(const HostTensor&)>> hires_upscaler(
        const std::string& path, int tile);
    // The family's latent upscaler model at `path` (Family::latent_upscaler), opened on first
    // use and kept while requests name it.
    Result<std::shared_ptr<LatentUpscaler>> latent_upscaler(const std::string& path) const;
    // Data parallel: the locks of the non-CPU devices more than one replica uses.
    void share_devices(const std::vector<EnginePlacement>& placements, bool control);

    // Declared first so that it outlives the families' parts, which read from it (the
    // checkpoint is mapped once, whatever the number of replicas).
    TensorIndex index_;
    std::vector<std::unique_ptr<Replica>> replicas_;
    std::map<std::string, std::unique_ptr<std::mutex>> device_locks_;  // by device name
    std::string model_name_;
    std::string family_id_;
    bool auto_fit_ = false;
    std::string hires_upscalers_dir_;  // --hires-upscalers-dir
    std::unique_ptr<models::EsrganUpscaler> upscaler_;
    std::mutex upscaler_mutex_;  // data-parallel replicas take turns on it
    // The hires fix's upscaler model, loaded on first use (kept while requests name it).
    ModelOptions options_;          // threads and kernel settings for it
    ModuleDevices upscaler_where_;  // the upscaler's devices (--backend "upscaler=...")
    std::unique_ptr<models::EsrganUpscaler> hires_upscaler_;
    std::string hires_upscaler_path_;
    std::mutex hires_upscaler_mutex_;
    mutable std::shared_ptr<LatentUpscaler> latent_upscaler_;
    mutable std::string latent_upscaler_path_;
    mutable std::mutex latent_upscaler_mutex_;
    PhaseTimings timings_;
};

}  // namespace ggdiff
