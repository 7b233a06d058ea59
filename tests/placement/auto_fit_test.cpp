// Auto-fit planner: resident, time-share, split, CPU fallback, no GPU; plan JSON and table.
#include <gtest/gtest.h>

#include "placement/auto_fit.h"
#include "placement/auto_fit_report.h"
#include "placement/units.h"

namespace ggdiff::placement {
namespace {

DeviceInfo device(const std::string& name, uint64_t free_bytes, DeviceType type = DeviceType::Gpu) {
    DeviceInfo d;
    d.name = name;
    d.type = type;
    d.free_bytes = free_bytes;
    d.total_bytes = free_bytes;
    d.registry = type == DeviceType::Cpu ? "CPU" : "CUDA";
    return d;
}

// CPU plus three GPUs of 24/12/8 GiB free (budgets 23.5/11.5/7.5 GiB).
std::vector<DeviceInfo> three_gpus() {
    return {device("CPU", 64 * kGiB, DeviceType::Cpu), device("CUDA0", 24 * kGiB),
            device("CUDA1", 12 * kGiB), device("CUDA2", 8 * kGiB)};
}

AutoFitInput input(std::vector<DeviceInfo> devices, uint64_t diffusion, uint64_t te, uint64_t vae) {
    AutoFitInput in;
    in.devices = std::move(devices);
    in.components = standard_components(diffusion, te, vae);
    return in;
}

std::vector<std::string> targets(const AutoFitPlan& p, Module m) {
    for (const FitComponent& c : p.components)
        if (c.module == m) return c.targets;
    return {"<missing>"};
}

TEST(AutoFit, StandardComponents) {
    auto c = standard_components(10, 0, 3);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].module, Module::Diffusion);
    EXPECT_EQ(c[0].reserve_bytes, 2 * kGiB);
    EXPECT_TRUE(c[0].splittable);
    EXPECT_EQ(c[1].module, Module::Vae);
    EXPECT_EQ(c[1].reserve_bytes, kGiB);
    EXPECT_FALSE(c[1].splittable);
    auto all = standard_components(1, 2, 3);
    EXPECT_EQ(all[1].module, Module::TextEncoder);
    EXPECT_EQ(all[1].reserve_bytes, 2 * kGiB);
    EXPECT_TRUE(all[1].splittable);
}

TEST(AutoFit, BudgetsOnlyForGpuDevices) {
    AutoFitInput in = input(three_gpus(), kGiB, kGiB, kGiB);
    in.max_vram.per_device = {{"CUDA0", 4.0}, {"CUDA1", -2.0}};
    AutoFitPlan p = plan_auto_fit(in);
    ASSERT_EQ(p.devices.size(), 3u);
    EXPECT_EQ(p.devices[0].name, "CUDA0");
    EXPECT_EQ(p.devices[0].budget_bytes, 4 * kGiB);
    EXPECT_EQ(p.devices[1].budget_bytes, 10 * kGiB);
    EXPECT_EQ(p.devices[2].budget_bytes, 8 * kGiB - 512 * kMiB);
}

TEST(AutoFit, ResidentWhenEverythingFits) {
    // diffusion 13 -> CUDA0 (15 <= 23.5); te 8: CUDA0 has 10.5 left, CUDA1 11.5 -> CUDA1;
    // vae: CUDA0 10.5 left, CUDA1 3.5, CUDA2 7.5 -> CUDA0.
    AutoFitPlan p = plan_auto_fit(input(three_gpus(), 13 * kGiB, 8 * kGiB, 160 * kMiB));
    EXPECT_EQ(p.mode, FitMode::Resident);
    EXPECT_FALSE(p.time_share());
    EXPECT_EQ(targets(p, Module::Diffusion), (std::vector<std::string>{"CUDA0"}));
    EXPECT_EQ(targets(p, Module::TextEncoder), (std::vector<std::string>{"CUDA1"}));
    EXPECT_EQ(targets(p, Module::Vae), (std::vector<std::string>{"CUDA0"}));
    for (const FitComponent& c : p.components) {
        EXPECT_FALSE(c.disk_params);
        EXPECT_FALSE(c.split);
    }
    EXPECT_EQ(p.devices[0].planned_bytes, 13 * kGiB + 160 * kMiB + 2 * kGiB);
    EXPECT_EQ(p.devices[1].planned_bytes, 8 * kGiB + 2 * kGiB);
    EXPECT_EQ(p.devices[2].planned_bytes, 0u);
    EXPECT_EQ(p.backend(), "diffusion=CUDA0,te=CUDA1,vae=CUDA0");
    EXPECT_EQ(p.params_backend(), "");
    EXPECT_EQ(p.split_mode(), "");
    EXPECT_EQ(plan_args(p), "--backend diffusion=CUDA0,te=CUDA1,vae=CUDA0");
    EXPECT_TRUE(p.warnings.empty());
}

TEST(AutoFit, ResidentCountsTheLargestReserveOnEachDevice) {
    // A (budget 10) holds diffusion 7 + te 1 + 2 reserve = 10; the VAE goes to B (budget
    // 1.5) since there only its own 1 GiB reserve is needed.
    AutoFitPlan p = plan_auto_fit(input(
        {device("A", 10 * kGiB + 512 * kMiB), device("B", 2 * kGiB)}, 7 * kGiB, kGiB, 400 * kMiB));
    EXPECT_EQ(p.mode, FitMode::Resident);
    EXPECT_EQ(p.backend(), "diffusion=A,te=A,vae=B");
}

TEST(AutoFit, TimeShareWhenTheSumDoesNotFit) {
    // Resident: diffusion 20 -> CUDA0, then te 15 fits nowhere. Time-share: each on the
    // largest budget where params + reserve fit, with disk params.
    AutoFitPlan p = plan_auto_fit(input(three_gpus(), 20 * kGiB, 15 * kGiB, 160 * kMiB));
    EXPECT_EQ(p.mode, FitMode::TimeShare);
    EXPECT_TRUE(p.time_share());
    EXPECT_EQ(p.backend(), "diffusion=CUDA0,te=CUDA0,vae=CUDA0");
    EXPECT_EQ(p.params_backend(), "diffusion=disk,te=disk,vae=disk");
    EXPECT_EQ(plan_args(p),
              "--backend diffusion=CUDA0,te=CUDA0,vae=CUDA0 --params-backend "
              "diffusion=disk,te=disk,vae=disk");
    for (const FitComponent& c : p.components) EXPECT_TRUE(c.disk_params);
}

TEST(AutoFit, TimeSharePicksTheLargestBudgetThatFits) {
    // CUDA0 capped to 4 GiB: the 9 GiB te goes to CUDA1 (11.5), the VAE to CUDA1 too.
    AutoFitInput in = input(three_gpus(), 30 * kGiB, 9 * kGiB, 160 * kMiB);
    in.max_vram.per_device = {{"CUDA0", 4.0}};
    AutoFitPlan p = plan_auto_fit(in);
    EXPECT_EQ(p.mode, FitMode::TimeShare);
    // diffusion 30 > room (2 + 9.5 + 5.5 = 17) -> CPU.
    EXPECT_EQ(p.backend(), "diffusion=CPU,te=CUDA1,vae=CUDA1");
    EXPECT_EQ(p.params_backend(), "te=disk,vae=disk");
}

TEST(AutoFit, SplitsWhatFitsNoSingleDevice) {
    // diffusion 30 GiB fits no device (32 > 23.5) but fits in 21.5 + 9.5 + 5.5 = 36.5:
    // layer split over all devices, largest budget first.
    std::vector<DeviceInfo> devs = {device("CUDA2", 8 * kGiB),
                                    device("CPU", 64 * kGiB, DeviceType::Cpu),
                                    device("CUDA0", 24 * kGiB), device("CUDA1", 12 * kGiB)};
    AutoFitPlan p = plan_auto_fit(input(devs, 30 * kGiB, 9 * kGiB, 160 * kMiB));
    EXPECT_EQ(p.mode, FitMode::TimeShare);
    ASSERT_EQ(p.components.size(), 3u);
    const FitComponent& d = p.components[0];
    EXPECT_EQ(d.module, Module::Diffusion);
    EXPECT_TRUE(d.split);
    EXPECT_EQ(d.split_mode, SplitMode::Layer);
    EXPECT_TRUE(d.disk_params);
    EXPECT_EQ(d.targets, (std::vector<std::string>{"CUDA0", "CUDA1", "CUDA2"}));
    EXPECT_EQ(p.backend(), "diffusion=CUDA0&CUDA1&CUDA2,te=CUDA0,vae=CUDA0");
    EXPECT_EQ(p.params_backend(), "diffusion=disk,te=disk,vae=disk");
    EXPECT_EQ(p.split_mode(), "");
    // The derived flags parse back.
    auto spec = parse_backend_spec(p.backend(), {"CPU", "CUDA0", "CUDA1", "CUDA2"});
    ASSERT_TRUE(spec.ok());
    EXPECT_EQ(*spec, p.spec.backend);
}

TEST(AutoFit, RowSplitModeIsCarriedIntoTheDerivedFlags) {
    AutoFitInput in = input(three_gpus(), 30 * kGiB, 9 * kGiB, 160 * kMiB);
    in.split_mode = *parse_split_mode_spec("diffusion=row");
    AutoFitPlan p = plan_auto_fit(in);
    EXPECT_EQ(p.components[0].split_mode, SplitMode::Row);
    EXPECT_EQ(p.split_mode(), "diffusion=row");
    EXPECT_EQ(plan_args(p),
              "--backend 'diffusion=CUDA0&CUDA1&CUDA2,te=CUDA0,vae=CUDA0' --params-backend "
              "diffusion=disk,te=disk,vae=disk --split-mode diffusion=row");
}

TEST(AutoFit, SplitSkipsDevicesWithoutRoomForTheReserve) {
    // CUDA2 capped at 1.5 GiB cannot hold the 2 GiB reserve: split over CUDA0 and CUDA1.
    AutoFitInput in = input(three_gpus(), 30 * kGiB, 0, 0);
    in.max_vram.per_device = {{"CUDA2", 1.5}};
    AutoFitPlan p = plan_auto_fit(in);
    EXPECT_EQ(p.backend(), "diffusion=CUDA0&CUDA1");
}

TEST(AutoFitReport, ResidentAndCpuTables) {
    AutoFitPlan r = plan_auto_fit(input(three_gpus(), 13 * kGiB, 8 * kGiB, 160 * kMiB));
    EXPECT_EQ(plan_to_table(r),
              "auto-fit: resident plan (every component stays loaded)\n"
              "  device       free     budget\n"
              "  CUDA0   24.00 GiB  23.50 GiB\n"
              "  CUDA1   12.00 GiB  11.50 GiB\n"
              "  CUDA2    8.00 GiB   7.50 GiB\n"
              "  component     params  compute   reserve  target\n"
              "  diffusion  13.00 GiB        -  2.00 GiB  CUDA0\n"
              "  te          8.00 GiB        -  2.00 GiB  CUDA1\n"
              "  vae         0.16 GiB        -  1.00 GiB  CUDA0\n"
              "  reserve: the standard compute reserves (nothing measured)\n"
              "  derived: --backend diffusion=CUDA0,te=CUDA1,vae=CUDA0\n");
    AutoFitPlan c = plan_auto_fit(input(three_gpus(), 40 * kGiB, 0, 0));
    EXPECT_EQ(plan_to_table(c),
              "auto-fit: time-share plan (components load for their phase and are freed after)\n"
              "  device       free     budget\n"
              "  CUDA0   24.00 GiB  23.50 GiB\n"
              "  CUDA1   12.00 GiB  11.50 GiB\n"
              "  CUDA2    8.00 GiB   7.50 GiB\n"
              "  component     params  compute   reserve  target\n"
              "  diffusion  40.00 GiB        -  2.00 GiB  CPU (fits on no GPU)\n"
              "  reserve: the standard compute reserves (nothing measured)\n"
              "  derived: --backend diffusion=CPU\n");
    AutoFitPlan n = plan_auto_fit(input({device("CPU", 8 * kGiB, DeviceType::Cpu)}, kGiB, 0, 0));
    EXPECT_EQ(plan_to_table(n),
              "auto-fit: no GPU devices; using the default device\n"
              "  component    params  compute   reserve  target\n"
              "  diffusion  1.00 GiB        -  2.00 GiB  default device\n"
              "  reserve: the standard compute reserves (nothing measured)\n");
}

TEST(AutoFit, FitsNowhereRunsOnTheCpu) {
    // diffusion 40 > 36.5 -> CPU; a 30 GiB VAE is not splittable -> CPU.
    AutoFitPlan p = plan_auto_fit(input(three_gpus(), 40 * kGiB, 9 * kGiB, 30 * kGiB));
    EXPECT_EQ(p.mode, FitMode::TimeShare);
    EXPECT_EQ(p.backend(), "diffusion=CPU,te=CUDA0,vae=CPU");
    EXPECT_EQ(p.params_backend(), "te=disk");
    ASSERT_EQ(p.warnings.size(), 2u);
    EXPECT_EQ(
        p.warnings[0],
        "auto-fit: diffusion (40.00 GiB + 2.00 GiB compute) fits on no GPU; running it on CPU");
    EXPECT_EQ(p.warnings[1],
              "auto-fit: vae (30.00 GiB + 1.00 GiB compute) fits on no GPU; running it on CPU");
    EXPECT_TRUE(p.components[0].on_cpu);
    EXPECT_FALSE(p.components[0].disk_params);
}

TEST(AutoFit, NoGpuUsesTheDefaultDevice) {
    AutoFitPlan p = plan_auto_fit(
        input({device("CPU", 64 * kGiB, DeviceType::Cpu)}, 2 * kGiB, kGiB, 160 * kMiB));
    EXPECT_EQ(p.mode, FitMode::DefaultDevice);
    EXPECT_TRUE(p.devices.empty());
    EXPECT_EQ(p.backend(), "");
    EXPECT_EQ(p.params_backend(), "");
    EXPECT_EQ(plan_args(p), "");
    EXPECT_EQ(p.warnings,
              (std::vector<std::string>{"auto-fit: no GPU devices; using the default device"}));
    ASSERT_EQ(p.components.size(), 3u);
    EXPECT_TRUE(p.components[0].targets.empty());
    EXPECT_EQ(plan_to_json(p),
              "{\"mode\":\"default-device\",\"time_share\":false,\"devices\":[],\"components\":["
              "{\"module\":\"diffusion\",\"params_bytes\":2147483648,\"reserve_bytes\":2147483648,"
              "\"compute_measured_bytes\":null,\"default_reserve_bytes\":2147483648,"
              "\"splittable\":true,\"targets\":[],\"split\":false,\"split_mode\":null,"
              "\"on_cpu\":false,\"params\":\"compute\"},"
              "{\"module\":\"te\",\"params_bytes\":1073741824,\"reserve_bytes\":2147483648,"
              "\"compute_measured_bytes\":null,\"default_reserve_bytes\":2147483648,"
              "\"splittable\":true,\"targets\":[],\"split\":false,\"split_mode\":null,"
              "\"on_cpu\":false,\"params\":\"compute\"},"
              "{\"module\":\"vae\",\"params_bytes\":167772160,\"reserve_bytes\":1073741824,"
              "\"compute_measured_bytes\":null,\"default_reserve_bytes\":1073741824,"
              "\"splittable\":false,\"targets\":[],\"split\":false,\"split_mode\":null,"
              "\"on_cpu\":false,\"params\":\"compute\"}],"
              "\"backend\":\"\",\"params_backend\":\"\",\"split_mode\":\"\",\"args\":\"\","
              "\"warnings\":[\"auto-fit: no GPU devices; using the default device\"]}");
}

TEST(AutoFit, TwoRpcWorkersCappedByMaxVramForceASplit) {
    // The twin test's setup: RPC devices report host memory; --max-vram RPC0=3,RPC1=3.
    std::vector<DeviceInfo> devs = {device("CPU", 64 * kGiB, DeviceType::Cpu),
                                    device("RPC0", 64 * kGiB), device("RPC1", 64 * kGiB)};
    AutoFitInput in = input(devs, 1640 * kMiB, 235 * kMiB, 160 * kMiB);
    in.max_vram.per_device = {{"RPC0", 3.0}, {"RPC1", 3.0}};
    AutoFitPlan p = plan_auto_fit(in);
    EXPECT_EQ(p.mode, FitMode::TimeShare);
    EXPECT_EQ(plan_args(p),
              "--backend 'diffusion=RPC0&RPC1,te=RPC0,vae=RPC0' --params-backend "
              "diffusion=disk,te=disk,vae=disk");
}

TEST(AutoFitReport, JsonAndTable) {
    AutoFitPlan p = plan_auto_fit(input(three_gpus(), 30 * kGiB, 9 * kGiB, 160 * kMiB));
    EXPECT_EQ(plan_to_json(p),
              "{\"mode\":\"time-share\",\"time_share\":true,\"devices\":["
              "{\"name\":\"CUDA0\",\"free_bytes\":25769803776,\"budget_bytes\":25232932864},"
              "{\"name\":\"CUDA1\",\"free_bytes\":12884901888,\"budget_bytes\":12348030976},"
              "{\"name\":\"CUDA2\",\"free_bytes\":8589934592,\"budget_bytes\":8053063680}],"
              "\"components\":["
              "{\"module\":\"diffusion\",\"params_bytes\":32212254720,\"reserve_bytes\":2147483648,"
              "\"compute_measured_bytes\":null,\"default_reserve_bytes\":2147483648,"
              "\"splittable\":true,\"targets\":[\"CUDA0\",\"CUDA1\",\"CUDA2\"],\"split\":true,"
              "\"split_mode\":\"layer\",\"on_cpu\":false,\"params\":\"disk\"},"
              "{\"module\":\"te\",\"params_bytes\":9663676416,\"reserve_bytes\":2147483648,"
              "\"compute_measured_bytes\":null,\"default_reserve_bytes\":2147483648,"
              "\"splittable\":true,\"targets\":[\"CUDA0\"],\"split\":false,\"split_mode\":null,"
              "\"on_cpu\":false,\"params\":\"disk\"},"
              "{\"module\":\"vae\",\"params_bytes\":167772160,\"reserve_bytes\":1073741824,"
              "\"compute_measured_bytes\":null,\"default_reserve_bytes\":1073741824,"
              "\"splittable\":false,\"targets\":[\"CUDA0\"],\"split\":false,\"split_mode\":null,"
              "\"on_cpu\":false,\"params\":\"disk\"}],"
              "\"backend\":\"diffusion=CUDA0&CUDA1&CUDA2,te=CUDA0,vae=CUDA0\","
              "\"params_backend\":\"diffusion=disk,te=disk,vae=disk\",\"split_mode\":\"\","
              "\"args\":\"--backend 'diffusion=CUDA0&CUDA1&CUDA2,te=CUDA0,vae=CUDA0' "
              "--params-backend diffusion=disk,te=disk,vae=disk\",\"warnings\":[]}");
    EXPECT_EQ(
        plan_to_table(p),
        "auto-fit: time-share plan (components load for their phase and are freed after)\n"
        "  device       free     budget\n"
        "  CUDA0   24.00 GiB  23.50 GiB\n"
        "  CUDA1   12.00 GiB  11.50 GiB\n"
        "  CUDA2    8.00 GiB   7.50 GiB\n"
        "  component     params  compute   reserve  target\n"
        "  diffusion  30.00 GiB        -  2.00 GiB  CUDA0&CUDA1&CUDA2 (layer split), params from "
        "disk\n"
        "  te          9.00 GiB        -  2.00 GiB  CUDA0, params from disk\n"
        "  vae         0.16 GiB        -  1.00 GiB  CUDA0, params from disk\n"
        "  reserve: the standard compute reserves (nothing measured)\n"
        "  derived: --backend 'diffusion=CUDA0&CUDA1&CUDA2,te=CUDA0,vae=CUDA0' "
        "--params-backend diffusion=disk,te=disk,vae=disk\n");
}

}  // namespace
}  // namespace ggdiff::placement

namespace ggdiff::placement {
namespace {

TEST(AutoFit, MeasuredReservesReplaceTheStandardOnes) {
    std::vector<ComponentSize> c = standard_components(kGiB, 500 * kMiB, 160 * kMiB);
    apply_measured_reserves(c, {{Module::Diffusion, 300 * kMiB}, {Module::Vae, 0}});
    ASSERT_EQ(c.size(), 3u);
    // 300 MiB + 300/16 margin = 318.75 MiB; the text encoder (not measured) and the VAE
    // (measured as 0) keep the standard 2 GiB and 1 GiB.
    EXPECT_EQ(c[0].reserve_bytes, 300 * kMiB + 300 * kMiB / 16);
    EXPECT_EQ(c[0].measured_bytes, 300 * kMiB);
    EXPECT_EQ(c[0].default_reserve_bytes, 2 * kGiB);
    EXPECT_EQ(c[1].reserve_bytes, 2 * kGiB);
    EXPECT_EQ(c[1].measured_bytes, 0u);
    EXPECT_EQ(c[2].reserve_bytes, kGiB);
    // The margin never goes below 1 MiB.
    EXPECT_EQ(compute_margin(2 * kMiB), kMiB);
    EXPECT_EQ(compute_margin(64 * kMiB), 4 * kMiB);
}

TEST(AutoFit, MeasuredReservesKeepSmallCardsInThePlan) {
    // Two 1.5 GiB cards (budgets 1 GiB each): with the standard 2 GiB reserves nothing fits a
    // card and the 1.2 GiB denoiser runs on the CPU; with its 200 MiB compute buffer measured
    // (212.5 MiB reserved) it is split over both cards, and the rest fits too.
    auto make = [](bool measured) {
        AutoFitInput in = input({device("CPU", 64 * kGiB, DeviceType::Cpu),
                                 device("RPC0", 1536 * kMiB), device("RPC1", 1536 * kMiB)},
                                1200 * kMiB, 300 * kMiB, 100 * kMiB);
        if (measured) {
            apply_measured_reserves(in.components, {{Module::Diffusion, 200 * kMiB},
                                                    {Module::TextEncoder, 20 * kMiB},
                                                    {Module::Vae, 150 * kMiB}});
        }
        return plan_auto_fit(in);
    };
    AutoFitPlan standard = make(false);
    EXPECT_EQ(targets(standard, Module::Diffusion), (std::vector<std::string>{"CPU"}));
    AutoFitPlan measured = make(true);
    EXPECT_EQ(measured.mode, FitMode::TimeShare);
    EXPECT_EQ(targets(measured, Module::Diffusion), (std::vector<std::string>{"RPC0", "RPC1"}));
    EXPECT_EQ(targets(measured, Module::TextEncoder), (std::vector<std::string>{"RPC0"}));
    EXPECT_EQ(targets(measured, Module::Vae), (std::vector<std::string>{"RPC0"}));
    // The report shows both figures.
    const std::string json = plan_to_json(measured);
    EXPECT_NE(json.find("\"compute_measured_bytes\":209715200"), std::string::npos) << json;
    EXPECT_NE(json.find("\"default_reserve_bytes\":2147483648"), std::string::npos) << json;
    const std::string table = plan_to_table(measured);
    EXPECT_NE(table.find("200.0 MiB  212.5 MiB"), std::string::npos) << table;
    EXPECT_NE(table.find("compute: measured at the requested size"), std::string::npos) << table;
}

}  // namespace
}  // namespace ggdiff::placement
