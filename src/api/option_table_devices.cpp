// Schema entries of devices and placement (read when a model is loaded). Device specs
// name devices, which are only known once RPC servers are added, so --backend,
// --params-backend and --max-vram are checked at ggdiff_model_load, before any weight is
// read; everything else is checked here.
#include "api/option_decl.h"
#include "placement/split_mode.h"

namespace ggdiff::api {

void add_device_options(std::vector<OptionSpec>& out) {
    const char* g = "Devices and placement";
    opt(out, g, "threads", OptType::Int, kModel)
        .short_name("t")
        .def("-1")
        .help(
            "CPU threads for computation; <= 0 uses GGDIFF_THREADS when set, else the number of "
            "CPU threads")
        .bind(to_int(GGDIFF_FIELD(model.threads)));
    opt(out, g, "list-devices", OptType::Bool, kFrontend)
        .help("Print one 'name<TAB>description' line per device and exit");
    opt(out, g, "backend", OptType::String, kModel)
        .help(
            "Compute device: DEVICE, or MODULE=DEVICE,... (modules diffusion, te, vae, ...; "
            "all= sets the default); DEV1&DEV2 splits a module across devices; DEV1|DEV2 keeps "
            "one replica per device and runs the -b batch items on them at once (item i on "
            "replica i mod n)")
        .bind(to_text(GGDIFF_FIELD(model.backend)));
    opt(out, g, "params-backend", OptType::String, kModel)
        .help(
            "Where weights live when not on their compute device: DEVICE, cpu or disk, or "
            "MODULE=...,...")
        .bind(to_text(GGDIFF_FIELD(model.params_backend)));
    opt(out, g, "split-mode", OptType::String, kModel)
        .help("How a module is split across devices: layer or row, or MODULE=layer|row,...")
        .check([](const OptionValue& v) -> Status {
            auto spec = placement::parse_split_mode_spec(v.text);
            return spec.ok() ? Status::Ok()
                             : Status::Error("--split-mode: " + spec.status().message());
        })
        .bind(to_text(GGDIFF_FIELD(model.split_mode)));
    opt(out, g, "max-vram", OptType::String, kModel)
        .help(
            "GiB budget per GPU for --auto-fit, splits and graph cutting: N caps it, -N leaves "
            "N free; one value or DEVICE=N,... A diffusion model or main text encoder that "
            "does not fit its device's budget runs in segments of blocks, each uploaded "
            "before it runs")
        .bind(to_text(GGDIFF_FIELD(model.max_vram)));
    opt(out, g, "auto-fit", OptType::Bool, kModel | kOptionalValue)
        .help("Place the model's components on the devices automatically: on or off")
        .bind(to_bool(GGDIFF_FIELD(model.auto_fit)));
    opt(out, g, "fit-dry-run", OptType::Bool, kFrontend)
        .help("Print the --auto-fit plan as JSON and exit without loading weights");
    opt(out, g, "rpc-servers", OptType::String, kModel)
        .help("Remote ggml RPC servers host:port,... (they become devices RPC0, RPC1, ...)")
        .bind(to_text(GGDIFF_FIELD(rpc_servers)));
    opt(out, g, "stream-layers", OptType::Bool, kModel)
        .help(
            "With --max-vram cutting a module into segments: keep the leading blocks on the "
            "device and bring the next segment in while the current one computes (two "
            "segments at a time); no effect without a --max-vram budget for the device")
        .bind(to_bool(GGDIFF_FIELD(model.stream_layers)));
    opt(out, g, "offload-to-cpu", OptType::Bool, kModel)
        .help(
            "Keep every module's weights in RAM and move them to its device for the phase that "
            "needs them (= --params-backend cpu; an explicit --params-backend entry wins)")
        .bind(to_bool(GGDIFF_FIELD(model.offload_to_cpu)));
    opt(out, g, "mmap", OptType::Bool, kModel)
        .no_effect("model files are always memory-mapped")
        .help("Memory-map model files");
    opt(out, g, "eager-load", OptType::Bool, kModel)
        .no_effect(
            "every weight is already loaded when the model loads, before the first phase "
            "(weights placed with --params-backend disk load per phase by design)")
        .help("Load every weight before the first phase");
    opt(out, g, "clip-on-cpu", OptType::Bool, kModel)
        .help("Run the text encoders on the CPU (= --backend te=CPU)")
        .bind(to_bool(GGDIFF_FIELD(model.clip_on_cpu)));
    opt(out, g, "vae-on-cpu", OptType::Bool, kModel)
        .help("Run the VAE on the CPU (= --backend vae=CPU)")
        .bind(to_bool(GGDIFF_FIELD(model.vae_on_cpu)));
    opt(out, g, "control-net-cpu", OptType::Bool, kModel)
        .help("Run the ControlNet on the CPU (= --backend controlnet=CPU)")
        .bind(to_bool(GGDIFF_FIELD(model.control_net_cpu)));
    // Off the CPU kernels (GPUs, RPC devices, GGDIFF_CPU_KERNELS=0) ggml offers these
    // kernels; on the CPU kernels attention is one fused op and convolutions go through
    // im2col or Winograd whatever is chosen.
    opt(out, g, "fa", OptType::Bool, kModel)
        .help(
            "Use flash attention in every module (not in causal text attention), on devices "
            "that run ggml's attention; the CPU kernels always fuse attention")
        .bind(to_bool(GGDIFF_FIELD(model.flash_attn)));
    opt(out, g, "diffusion-fa", OptType::Bool, kModel)
        .help("Use flash attention in the diffusion model only (see --fa)")
        .bind(to_bool(GGDIFF_FIELD(model.diffusion_flash_attn)));
    opt(out, g, "diffusion-conv-direct", OptType::Bool, kModel)
        .help(
            "Use ggml's direct 2-D convolution in the diffusion model, on devices that run "
            "ggml's convolutions; the CPU kernels use im2col or Winograd")
        .bind(to_bool(GGDIFF_FIELD(model.diffusion_conv_direct)));
    opt(out, g, "vae-conv-direct", OptType::Bool, kModel)
        .help("Use ggml's direct 2-D convolution in the VAE (see --diffusion-conv-direct)")
        .bind(to_bool(GGDIFF_FIELD(model.vae_conv_direct)));
}

}  // namespace ggdiff::api
