// --backend, --params-backend, --split-mode and --max-vram parsing and validation.
#include <gtest/gtest.h>

#include "placement/backend_spec.h"
#include "placement/max_vram.h"
#include "placement/module.h"
#include "placement/params_spec.h"
#include "placement/placement_spec.h"
#include "placement/split_mode.h"

namespace ggdiff::placement {
namespace {

const std::vector<std::string> kDevices = {"CPU", "CUDA0", "CUDA1", "RPC0", "RPC1"};

template <class T>
std::string error_of(const Result<T>& r) {
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
}

TEST(Module, NamesFoldCaseDashAndUnderscore) {
    EXPECT_EQ(*parse_module("diffusion"), Module::Diffusion);
    EXPECT_EQ(*parse_module("Diffusion"), Module::Diffusion);
    EXPECT_EQ(*parse_module("DIFF-USION"), Module::Diffusion);
    EXPECT_EQ(*parse_module("t-e"), Module::TextEncoder);
    EXPECT_EQ(*parse_module("T_E"), Module::TextEncoder);
    EXPECT_EQ(*parse_module("control_net"), Module::ControlNet);
    EXPECT_EQ(*parse_module("Control-Net"), Module::ControlNet);
    EXPECT_EQ(*parse_module("clipvision"), Module::ClipVision);
    EXPECT_EQ(*parse_module("clip_vision"), Module::ClipVision);
    EXPECT_EQ(*parse_module("photo_maker"), Module::PhotoMaker);
    EXPECT_EQ(*parse_module("upscaler"), Module::Upscaler);
    EXPECT_EQ(*parse_module("VAE"), Module::Vae);
    EXPECT_EQ(*parse_module("unet"), Module::Diffusion);
    EXPECT_EQ(*parse_module("text_encoders"), Module::TextEncoder);
}

TEST(Module, EveryCanonicalNameParsesBack) {
    for (Module m : all_modules()) EXPECT_EQ(*parse_module(module_name(m)), m) << module_name(m);
}

TEST(Module, UnknownModuleNamesTokenAndKnownList) {
    EXPECT_EQ(error_of(parse_module("dif")),
              "unknown module \"dif\" (known: diffusion, te, vae, taesd, controlnet, upscaler, "
              "photomaker, pulid, clip_vision, audio_vae)");
}

TEST(BackendSpec, BareDeviceAppliesToAllModules) {
    auto r = parse_backend_spec("cuda1", kDevices);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_TRUE(r->all.has_value());
    EXPECT_EQ(*r->all, (DeviceList{"CUDA1"}));  // canonical spelling
    EXPECT_TRUE(r->modules.empty());
    EXPECT_EQ(*r->get(Module::Vae), (DeviceList{"CUDA1"}));
    EXPECT_EQ(*r->get(Module::ControlNet), (DeviceList{"CUDA1"}));
    EXPECT_EQ(to_string(*r), "CUDA1");
}

TEST(BackendSpec, ModulesOverrideAll) {
    auto r = parse_backend_spec("all=CUDA0, Diffusion=rpc0&RPC1 ,t-e=cpu,VAE=default", kDevices);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r->get(Module::Diffusion), (DeviceList{"RPC0", "RPC1"}));
    EXPECT_EQ(*r->get(Module::TextEncoder), (DeviceList{"CPU"}));
    EXPECT_EQ(*r->get(Module::Vae), DeviceList{});  // the default device
    EXPECT_EQ(*r->get(Module::Upscaler), (DeviceList{"CUDA0"}));
    EXPECT_EQ(to_string(*r), "all=CUDA0,diffusion=RPC0&RPC1,te=CPU,vae=default");
}

TEST(BackendSpec, WithoutAllUnnamedModulesAreUnset) {
    auto r = parse_backend_spec("diffusion=CUDA0&CUDA1", kDevices);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->get(Module::Vae).has_value());
    EXPECT_EQ(to_string(*r), "diffusion=CUDA0&CUDA1");
}

TEST(BackendSpec, ToStringRoundTrips) {
    for (const char* s : {"CUDA0", "CUDA0&CUDA1", "default", "all=RPC0,te=RPC1",
                          "diffusion=RPC0&RPC1,te=RPC0&RPC1", "controlnet=CPU,clip_vision=CUDA1"}) {
        auto r = parse_backend_spec(s, kDevices);
        ASSERT_TRUE(r.ok()) << s << ": " << r.status().message();
        EXPECT_EQ(to_string(*r), s);
        EXPECT_EQ(*parse_backend_spec(to_string(*r), kDevices), *r);
    }
}

TEST(BackendSpec, UnknownDevice) {
    EXPECT_EQ(error_of(parse_backend_spec("CUDA7", kDevices)),
              "unknown device \"CUDA7\" (known: CPU, CUDA0, CUDA1, RPC0, RPC1)");
    EXPECT_EQ(error_of(parse_backend_spec("diffusion=CUDA0&GPU1", kDevices)),
              "unknown device \"GPU1\" (known: CPU, CUDA0, CUDA1, RPC0, RPC1)");
    EXPECT_EQ(error_of(parse_backend_spec("te=vulkan0", {})),
              "unknown device \"vulkan0\" (known: none)");
}

TEST(BackendSpec, UnknownModule) {
    EXPECT_EQ(error_of(parse_backend_spec("diffusion=CUDA0,unet2=CUDA1", kDevices)),
              "unknown module \"unet2\" (known: diffusion, te, vae, taesd, controlnet, "
              "upscaler, photomaker, pulid, clip_vision, audio_vae)");
}

TEST(BackendSpec, DefaultInsideAList) {
    EXPECT_EQ(error_of(parse_backend_spec("diffusion=CUDA0&default", kDevices)),
              "\"default\" cannot be part of a device list (\"CUDA0&default\")");
    EXPECT_EQ(error_of(parse_backend_spec("Default&RPC0", kDevices)),
              "\"Default\" cannot be part of a device list (\"Default&RPC0\")");
}

TEST(BackendSpec, DiskIsNotAComputeDevice) {
    EXPECT_EQ(error_of(parse_backend_spec("vae=disk", kDevices)),
              "\"disk\" is not a compute device; it is only valid in --params-backend");
    EXPECT_EQ(error_of(parse_backend_spec("CUDA0&DISK", kDevices)),
              "\"DISK\" is not a compute device; it is only valid in --params-backend");
}

TEST(BackendSpec, MalformedLists) {
    EXPECT_EQ(error_of(parse_backend_spec("", kDevices)), "empty spec");
    EXPECT_EQ(error_of(parse_backend_spec("diffusion=CUDA0,", kDevices)),
              "empty entry in \"diffusion=CUDA0,\"");
    EXPECT_EQ(error_of(parse_backend_spec("diffusion=", kDevices)),
              "missing value after '=' in \"diffusion=\"");
    EXPECT_EQ(error_of(parse_backend_spec("=CUDA0", kDevices)),
              "missing name before '=' in \"=CUDA0\"");
    EXPECT_EQ(error_of(parse_backend_spec("te=CUDA0=CUDA1", kDevices)),
              "more than one '=' in \"te=CUDA0=CUDA1\"");
    EXPECT_EQ(error_of(parse_backend_spec("CUDA0,vae=CPU", kDevices)),
              "entry \"CUDA0\" has no name; in a list write NAME=VALUE (all=CUDA0 for every one)");
    EXPECT_EQ(error_of(parse_backend_spec("diffusion=CUDA0&&CUDA1", kDevices)),
              "empty device name in list \"CUDA0&&CUDA1\"");
    EXPECT_EQ(error_of(parse_backend_spec("diffusion=CUDA0&cuda0", kDevices)),
              "device \"CUDA0\" listed twice in \"CUDA0&cuda0\"");
    EXPECT_EQ(error_of(parse_backend_spec("te=CUDA0,T_E=CUDA1", kDevices)),
              "module \"T_E\" given twice (as te)");
    EXPECT_EQ(error_of(parse_backend_spec("te=CUDA0,unet=CUDA1,diffusion=CPU", kDevices)),
              "module \"diffusion\" given twice (as diffusion)");
    EXPECT_EQ(error_of(parse_backend_spec("all=CUDA0,ALL=CUDA1", kDevices)), "\"all\" given twice");
}

TEST(ParamsSpec, DeviceCpuDiskDefault) {
    auto r = parse_params_spec("diffusion=disk,te=cpu,vae=cuda1,controlnet=default", kDevices);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r->get(Module::Diffusion), ParamsLocation::disk());
    EXPECT_EQ(*r->get(Module::TextEncoder), ParamsLocation::on_device("CPU"));
    EXPECT_EQ(*r->get(Module::Vae), ParamsLocation::on_device("CUDA1"));
    EXPECT_EQ(r->get(Module::ControlNet)->kind, ParamsLocation::Kind::Default);
    EXPECT_FALSE(r->get(Module::Upscaler).has_value());
    EXPECT_EQ(to_string(*r), "diffusion=disk,te=CPU,vae=CUDA1,controlnet=default");
    EXPECT_EQ(to_string(*parse_params_spec("DISK", kDevices)), "disk");
}

TEST(ParamsSpec, CpuIsAcceptedWithoutADeviceList) {
    auto r = parse_params_spec("te=cpu", {});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r->get(Module::TextEncoder), ParamsLocation::on_device("CPU"));
}

TEST(ParamsSpec, ListIsAnError) {
    EXPECT_EQ(error_of(parse_params_spec("diffusion=CUDA0&CUDA1", kDevices)),
              "device lists are not allowed in --params-backend (\"CUDA0&CUDA1\"); give one "
              "device, cpu or disk");
    EXPECT_EQ(error_of(parse_params_spec("cpu&disk", kDevices)),
              "device lists are not allowed in --params-backend (\"cpu&disk\"); give one "
              "device, cpu or disk");
}

TEST(ParamsSpec, UnknownDeviceAndModule) {
    EXPECT_EQ(error_of(parse_params_spec("te=ram", kDevices)),
              "unknown device \"ram\" (known: CPU, CUDA0, CUDA1, RPC0, RPC1)");
    EXPECT_EQ(error_of(parse_params_spec("text=cpu", kDevices)),
              "unknown module \"text\" (known: diffusion, te, vae, taesd, controlnet, upscaler, "
              "photomaker, pulid, clip_vision, audio_vae)");
}

TEST(SplitModeSpec, GlobalAndPerModule) {
    auto g = parse_split_mode_spec("ROW");
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(*g->get(Module::Diffusion), SplitMode::Row);
    EXPECT_EQ(to_string(*g), "row");
    auto m = parse_split_mode_spec("diffusion=row,te=layer");
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(*m->get(Module::Diffusion), SplitMode::Row);
    EXPECT_EQ(*m->get(Module::TextEncoder), SplitMode::Layer);
    EXPECT_FALSE(m->get(Module::Vae).has_value());
    EXPECT_EQ(to_string(*m), "diffusion=row,te=layer");
    auto a = parse_split_mode_spec("all=row,t_e=layer");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(to_string(*a), "all=row,te=layer");
}

TEST(SplitModeSpec, BadMode) {
    EXPECT_EQ(error_of(parse_split_mode_spec("column")),
              "bad split mode \"column\" (expected layer or row)");
    EXPECT_EQ(error_of(parse_split_mode_spec("diffusion=row,te=tensor")),
              "bad split mode \"tensor\" (expected layer or row)");
    EXPECT_EQ(error_of(parse_split_mode_spec("diffusion=row,decoder=layer")),
              "unknown module \"decoder\" (known: diffusion, te, vae, taesd, controlnet, "
              "upscaler, photomaker, pulid, clip_vision, audio_vae)");
}

TEST(MaxVram, BareAndPerDevice) {
    auto b = parse_max_vram("8", kDevices);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(*b->gib_for("RPC0"), 8.0);
    EXPECT_EQ(to_string(*b), "8");
    auto p = parse_max_vram("rpc0=4, RPC1=-2.5", kDevices);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(*p->gib_for("RPC0"), 4.0);
    EXPECT_EQ(*p->gib_for("rpc1"), -2.5);
    EXPECT_FALSE(p->gib_for("CUDA0").has_value());
    EXPECT_EQ(to_string(*p), "RPC0=4,RPC1=-2.5");
    auto a = parse_max_vram("all=6,CUDA1=-1", kDevices);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(*a->gib_for("CUDA0"), 6.0);
    EXPECT_EQ(*a->gib_for("CUDA1"), -1.0);
    EXPECT_EQ(to_string(*a), "all=6,CUDA1=-1");
}

TEST(MaxVram, BadTokens) {
    EXPECT_EQ(error_of(parse_max_vram("abc", kDevices)),
              "bad --max-vram value \"abc\" (expected GiB, e.g. 8 or -2)");
    EXPECT_EQ(error_of(parse_max_vram("RPC0=4GB", kDevices)),
              "bad --max-vram value \"4GB\" (expected GiB, e.g. 8 or -2)");
    EXPECT_EQ(error_of(parse_max_vram("RPC0=nan", kDevices)),
              "bad --max-vram value \"nan\" (expected GiB, e.g. 8 or -2)");
    EXPECT_EQ(error_of(parse_max_vram("RPC0=inf", kDevices)),
              "bad --max-vram value \"inf\" (expected GiB, e.g. 8 or -2)");
    EXPECT_EQ(
        error_of(parse_max_vram("0", kDevices)),
        "--max-vram value \"0\" is zero (give a positive budget or a negative margin in GiB)");
    EXPECT_EQ(error_of(parse_max_vram("RPC0=4,RPC1=-0.0", kDevices)),
              "--max-vram value \"-0.0\" is zero (give a positive budget or a negative margin "
              "in GiB)");
    EXPECT_EQ(error_of(parse_max_vram("RPC7=4", kDevices)),
              "unknown device \"RPC7\" (known: CPU, CUDA0, CUDA1, RPC0, RPC1)");
    EXPECT_EQ(error_of(parse_max_vram("RPC0=4,rpc0=2", kDevices)), "device \"RPC0\" given twice");
    EXPECT_EQ(error_of(parse_max_vram("4,RPC0=2", kDevices)),
              "entry \"4\" has no name; in a list write NAME=VALUE (all=4 for every one)");
    EXPECT_EQ(error_of(parse_max_vram("RPC0=", kDevices)), "missing value after '=' in \"RPC0=\"");
}

TEST(MaxVram, Budgets) {
    const uint64_t GiB = uint64_t(1) << 30, MiB = uint64_t(1) << 20;
    DeviceInfo d{"CUDA0", DeviceType::Gpu, 24 * GiB, 24 * GiB, "CUDA", true};
    EXPECT_EQ(device_budget(d, {}), 24 * GiB - 512 * MiB);
    EXPECT_EQ(device_budget(d, *parse_max_vram("8", kDevices)), 8 * GiB);
    EXPECT_EQ(device_budget(d, *parse_max_vram("30", kDevices)), 24 * GiB);  // min(GiB, free)
    EXPECT_EQ(device_budget(d, *parse_max_vram("CUDA0=-2", kDevices)), 22 * GiB);
    EXPECT_EQ(device_budget(d, *parse_max_vram("CUDA0=-30", kDevices)), 0u);  // never below 0
    EXPECT_EQ(device_budget(d, *parse_max_vram("CUDA0=0.5", kDevices)), 512 * MiB);
    EXPECT_EQ(device_budget(d, *parse_max_vram("CUDA1=4", kDevices)), 24 * GiB - 512 * MiB);
    d.free_bytes = 256 * MiB;
    EXPECT_EQ(device_budget(d, {}), 0u);
    // Split shares use the raw free memory unless --max-vram names the device.
    d.free_bytes = 24 * GiB;
    EXPECT_EQ(split_free_bytes(d, {}), 24 * GiB);
    EXPECT_EQ(split_free_bytes(d, *parse_max_vram("CUDA0=4", kDevices)), 4 * GiB);
}

TEST(PlacementSpec, AllFlagsTogether) {
    PlacementArgs args;
    args.backend = "all=CUDA0,diffusion=RPC0&RPC1";
    args.params_backend = "te=cpu";
    args.split_mode = "diffusion=row";
    args.max_vram = "RPC0=4,RPC1=-2";
    auto r = parse_placement_spec(args, kDevices);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ModulePlacement d = r->module(Module::Diffusion);
    EXPECT_EQ(d.devices, (DeviceList{"RPC0", "RPC1"}));
    EXPECT_FALSE(d.params.has_value());
    EXPECT_EQ(d.split_mode, SplitMode::Row);
    ModulePlacement te = r->module(Module::TextEncoder);
    EXPECT_EQ(te.devices, (DeviceList{"CUDA0"}));
    ASSERT_TRUE(te.params.has_value());
    EXPECT_EQ(*te.params, ParamsLocation::on_device("CPU"));
    EXPECT_EQ(te.split_mode, SplitMode::Layer);
    EXPECT_EQ(to_string(*r),
              "--backend 'all=CUDA0,diffusion=RPC0&RPC1' --params-backend te=CPU "
              "--split-mode diffusion=row --max-vram RPC0=4,RPC1=-2");
}

TEST(PlacementSpec, NothingGivenMeansDefaults) {
    auto r = parse_placement_spec({}, kDevices);
    ASSERT_TRUE(r.ok());
    ModulePlacement m = r->module(Module::Vae);
    EXPECT_TRUE(m.devices.empty());
    EXPECT_FALSE(m.params.has_value());
    EXPECT_EQ(m.split_mode, SplitMode::Layer);
    EXPECT_EQ(to_string(*r), "");
}

TEST(PlacementSpec, ExplicitDefaultParamsAreNotExplicit) {
    PlacementArgs args;
    args.params_backend = "all=disk,vae=default";
    auto r = parse_placement_spec(args, kDevices);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->module(Module::Vae).params.has_value());
    EXPECT_EQ(*r->module(Module::Diffusion).params, ParamsLocation::disk());
}

TEST(PlacementSpec, ErrorsNameTheFlagAndToken) {
    auto err = [](PlacementArgs a) { return error_of(parse_placement_spec(a, kDevices)); };
    PlacementArgs a;
    a.backend = "diffusion=CUDA3";
    EXPECT_EQ(err(a), "--backend: unknown device \"CUDA3\" (known: CPU, CUDA0, CUDA1, RPC0, RPC1)");
    a = {};
    a.backend = "difusion=CUDA0";
    EXPECT_EQ(err(a).rfind("--backend: unknown module \"difusion\"", 0), 0u) << err(a);
    a = {};
    a.backend = "te=default&CUDA0";
    EXPECT_EQ(err(a), "--backend: \"default\" cannot be part of a device list (\"default&CUDA0\")");
    a = {};
    a.backend = "disk";
    EXPECT_EQ(err(a),
              "--backend: \"disk\" is not a compute device; it is only valid in --params-backend");
    a = {};
    a.params_backend = "diffusion=RPC0&RPC1";
    EXPECT_EQ(err(a).rfind("--params-backend: device lists are not allowed", 0), 0u) << err(a);
    a = {};
    a.split_mode = "te=rows";
    EXPECT_EQ(err(a), "--split-mode: bad split mode \"rows\" (expected layer or row)");
    a = {};
    a.max_vram = "RPC0=lots";
    EXPECT_EQ(err(a), "--max-vram: bad --max-vram value \"lots\" (expected GiB, e.g. 8 or -2)");
    a = {};
    a.backend = "";
    EXPECT_EQ(err(a), "--backend: empty spec");
}

}  // namespace
}  // namespace ggdiff::placement
