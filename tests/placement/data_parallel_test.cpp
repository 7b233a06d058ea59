// Data-parallel placement: '|' lists in --backend (parsing, errors, round trips), the
// per-replica resolution of a spec, and the item assignment and its log line.
#include <gtest/gtest.h>

#include "placement/backend_spec.h"
#include "placement/data_parallel.h"
#include "placement/placement_spec.h"

namespace ggdiff::placement {
namespace {

const std::vector<std::string> kDevices = {"CPU", "CUDA0", "CUDA1", "RPC0", "RPC1", "RPC2"};

template <class T>
std::string error_of(const Result<T>& r) {
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
}

BackendValue replicas(std::vector<DeviceList> lists) {
    BackendValue v;
    v.replicas = std::move(lists);
    return v;
}

TEST(DataParallelSpec, PipeListIsOneDevicePerReplica) {
    auto r = parse_backend_spec("all=rpc0|RPC1", kDevices);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_TRUE(r->all.has_value());
    EXPECT_EQ(*r->all, replicas({{"RPC0"}, {"RPC1"}}));  // canonical spelling
    EXPECT_TRUE(r->all->data_parallel());
    EXPECT_EQ(r->all->for_replica(0), (DeviceList{"RPC0"}));
    EXPECT_EQ(r->all->for_replica(1), (DeviceList{"RPC1"}));
    EXPECT_EQ(to_string(*r), "RPC0|RPC1");
    EXPECT_EQ(replica_count(*r), 2u);
}

TEST(DataParallelSpec, BareValueSpacesAndCpu) {
    auto r = parse_backend_spec(" RPC0 | cpu |CUDA1", kDevices);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r->all, replicas({{"RPC0"}, {"CPU"}, {"CUDA1"}}));
    EXPECT_EQ(replica_count(*r), 3u);
}

TEST(DataParallelSpec, ModulesWithoutPipeAreTheSameInEveryReplica) {
    auto r = parse_backend_spec("diffusion=RPC0|RPC1,te=CUDA0&CUDA1,vae=CPU", kDevices);
    ASSERT_TRUE(r.ok()) << r.status().message();
    PlacementSpec spec;
    spec.backend = *r;
    EXPECT_EQ(spec.module(Module::Diffusion, 0).devices, (DeviceList{"RPC0"}));
    EXPECT_EQ(spec.module(Module::Diffusion, 1).devices, (DeviceList{"RPC1"}));
    EXPECT_EQ(spec.module(Module::TextEncoder, 0).devices, (DeviceList{"CUDA0", "CUDA1"}));
    EXPECT_EQ(spec.module(Module::TextEncoder, 1).devices, (DeviceList{"CUDA0", "CUDA1"}));
    EXPECT_EQ(spec.module(Module::Vae, 1).devices, (DeviceList{"CPU"}));
    EXPECT_TRUE(spec.module(Module::ControlNet, 1).devices.empty());  // not given: default
    EXPECT_EQ(replica_count(*r), 2u);
    EXPECT_EQ(replica_name(*r, 0), "RPC0");
    EXPECT_EQ(replica_name(*r, 1), "RPC1");
}

TEST(DataParallelSpec, AllAndModuleListsOfTheSameLength) {
    auto r = parse_backend_spec("all=RPC0|RPC1,te=CUDA0|CUDA1,vae=RPC2", kDevices);
    ASSERT_TRUE(r.ok()) << r.status().message();
    PlacementSpec spec;
    spec.backend = *r;
    EXPECT_EQ(spec.module(Module::Diffusion, 1).devices, (DeviceList{"RPC1"}));
    EXPECT_EQ(spec.module(Module::TextEncoder, 1).devices, (DeviceList{"CUDA1"}));
    EXPECT_EQ(spec.module(Module::Vae, 0).devices, (DeviceList{"RPC2"}));
    EXPECT_EQ(spec.module(Module::Vae, 1).devices, (DeviceList{"RPC2"}));
    // A replica is named by the distinct devices of its '|' entries, all= first.
    EXPECT_EQ(replica_devices(*r, 0), (std::vector<std::string>{"RPC0", "CUDA0"}));
    EXPECT_EQ(replica_name(*r, 0), "RPC0+CUDA0");
    EXPECT_EQ(replica_name(*r, 1), "RPC1+CUDA1");
    EXPECT_EQ(to_string(*r), "all=RPC0|RPC1,te=CUDA0|CUDA1,vae=RPC2");
}

TEST(DataParallelSpec, WithoutPipeThereIsOneReplica) {
    for (const char* s : {"CUDA0", "all=RPC0,diffusion=RPC0&RPC1", "default"}) {
        auto r = parse_backend_spec(s, kDevices);
        ASSERT_TRUE(r.ok()) << s;
        EXPECT_EQ(replica_count(*r), 1u) << s;
        EXPECT_EQ(replica_name(*r, 0), "") << s;
    }
    EXPECT_EQ(replica_count(BackendSpec{}), 1u);
}

TEST(DataParallelSpec, ToStringRoundTrips) {
    for (const char* s : {"RPC0|RPC1", "CPU|CUDA0|RPC2", "all=RPC0|RPC1,vae=CPU",
                          "diffusion=CUDA0|CUDA1,te=RPC0&RPC1", "all=RPC0|RPC1,te=RPC1|RPC0"}) {
        auto r = parse_backend_spec(s, kDevices);
        ASSERT_TRUE(r.ok()) << s << ": " << r.status().message();
        EXPECT_EQ(to_string(*r), s);
        EXPECT_EQ(*parse_backend_spec(to_string(*r), kDevices), *r) << s;
    }
}

TEST(DataParallelSpec, Errors) {
    EXPECT_EQ(error_of(parse_backend_spec("all=RPC0|RPC9", kDevices)),
              "unknown device \"RPC9\" (known: CPU, CUDA0, CUDA1, RPC0, RPC1, RPC2)");
    EXPECT_EQ(error_of(parse_backend_spec("RPC0|RPC1&RPC0", kDevices)),
              "cannot mix '|' (data parallel: one replica per device) and '&' (layer split) in "
              "\"RPC0|RPC1&RPC0\"; give a module one or the other");
    EXPECT_EQ(error_of(parse_backend_spec("diffusion=CUDA0&CUDA1|RPC0", kDevices)),
              "cannot mix '|' (data parallel: one replica per device) and '&' (layer split) in "
              "\"CUDA0&CUDA1|RPC0\"; give a module one or the other");
    EXPECT_EQ(error_of(parse_backend_spec("all=RPC0|rpc0", kDevices)),
              "device \"RPC0\" listed twice in \"RPC0|rpc0\"");
    EXPECT_EQ(error_of(parse_backend_spec("all=RPC0||RPC1", kDevices)),
              "empty device name in list \"RPC0||RPC1\"");
    EXPECT_EQ(error_of(parse_backend_spec("all=RPC0|", kDevices)),
              "empty device name in list \"RPC0|\"");
    EXPECT_EQ(error_of(parse_backend_spec("te=default|RPC0", kDevices)),
              "\"default\" cannot be part of a device list (\"default|RPC0\")");
    EXPECT_EQ(error_of(parse_backend_spec("RPC0|disk", kDevices)),
              "\"disk\" is not a compute device; it is only valid in --params-backend");
}

TEST(DataParallelSpec, ListsOfDifferentLengths) {
    EXPECT_EQ(error_of(parse_backend_spec("all=RPC0|RPC1,te=RPC0|RPC1|RPC2", kDevices)),
              "'|' lists of different lengths: all=RPC0|RPC1 has 2 devices, te=RPC0|RPC1|RPC2 "
              "has 3; every '|' list needs one device per replica");
    EXPECT_EQ(error_of(parse_backend_spec("vae=CPU|RPC2|CUDA0,diffusion=RPC0|RPC1", kDevices)),
              "'|' lists of different lengths: diffusion=RPC0|RPC1 has 2 devices, "
              "vae=CPU|RPC2|CUDA0 has 3; every '|' list needs one device per replica");
}

TEST(DataParallelSpec, PlacementFlagsNameTheFlag) {
    PlacementArgs a;
    a.backend = "all=RPC0|RPC9";
    EXPECT_EQ(error_of(parse_placement_spec(a, kDevices)),
              "--backend: unknown device \"RPC9\" (known: CPU, CUDA0, CUDA1, RPC0, RPC1, RPC2)");
    a = {};
    a.params_backend = "diffusion=RPC0|RPC1";
    EXPECT_EQ(error_of(parse_placement_spec(a, kDevices)),
              "--params-backend: device lists are not allowed in --params-backend "
              "(\"RPC0|RPC1\"); give one device, cpu or disk");
    a = {};
    a.backend = "all=RPC0|RPC1";
    a.params_backend = "diffusion=cpu";
    auto spec = parse_placement_spec(a, kDevices);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    EXPECT_EQ(spec->module(Module::Diffusion, 1).devices, (DeviceList{"RPC1"}));
    EXPECT_EQ(spec->module(Module::Diffusion, 1).params->kind, ParamsLocation::Kind::Device);
    EXPECT_EQ(to_string(*spec), "--backend 'RPC0|RPC1' --params-backend diffusion=CPU");
}

TEST(DataParallelItems, ItemIOnReplicaIModN) {
    EXPECT_EQ(replica_items(4, 2, 0), (std::vector<int>{0, 2}));
    EXPECT_EQ(replica_items(4, 2, 1), (std::vector<int>{1, 3}));
    EXPECT_EQ(replica_items(5, 3, 0), (std::vector<int>{0, 3}));
    EXPECT_EQ(replica_items(5, 3, 2), (std::vector<int>{2}));
    EXPECT_EQ(replica_items(1, 2, 1), (std::vector<int>{}));
    EXPECT_EQ(replica_items(3, 1, 0), (std::vector<int>{0, 1, 2}));
}

TEST(DataParallelItems, SummaryLine) {
    EXPECT_EQ(data_parallel_summary({"RPC0", "RPC1"}, 4),
              "data parallel: 2 replicas (RPC0, RPC1); items 0,2 on RPC0, 1,3 on RPC1");
    EXPECT_EQ(data_parallel_summary({"RPC0", "RPC1"}, 3),
              "data parallel: 2 replicas (RPC0, RPC1); items 0,2 on RPC0, 1 on RPC1");
    EXPECT_EQ(data_parallel_summary({"RPC0", "RPC1"}, 1),
              "data parallel: 2 replicas (RPC0, RPC1); item 0 on RPC0; RPC1 idle (-b 1)");
    EXPECT_EQ(data_parallel_summary({"A", "B", "C"}, 2),
              "data parallel: 3 replicas (A, B, C); items 0 on A, 1 on B; C idle (-b 2)");
    EXPECT_EQ(data_parallel_summary({"A", "B", "C"}, 7),
              "data parallel: 3 replicas (A, B, C); items 0,3,6 on A, 1,4 on B, 2,5 on C");
}

}  // namespace
}  // namespace ggdiff::placement
