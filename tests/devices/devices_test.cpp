// Device listing and lookup, and --rpc-servers endpoint validation (no network).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "devices/devices.h"

namespace {

using ggdiff::DeviceInfo;

TEST(Devices, CpuIsListed) {
    bool cpu = false;
    for (const DeviceInfo& d : ggdiff::list_devices()) {
        if (d.name == "CPU") {
            cpu = true;
            EXPECT_EQ(d.type, GGML_BACKEND_DEVICE_TYPE_CPU);
            EXPECT_NE(d.dev, nullptr);
            EXPECT_FALSE(d.description.empty());
            EXPECT_GT(d.total, 0u);
            EXPECT_FALSE(d.is_gpu_like());
            EXPECT_FALSE(d.is_rpc());
        }
    }
    EXPECT_TRUE(cpu);
}

TEST(Devices, NamesAreUniqueCaseInsensitively) {
    std::set<std::string> seen;
    for (const std::string& name : ggdiff::device_names()) {
        EXPECT_FALSE(name.empty());
        EXPECT_EQ(name.find_first_of(" \t,&="), std::string::npos) << name;
        std::string low;
        for (char c : name) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        EXPECT_TRUE(seen.insert(low).second) << "duplicate device name " << name;
    }
    EXPECT_EQ(seen.size(), ggdiff::list_devices().size());
}

TEST(Devices, FindDeviceIsCaseInsensitive) {
    ggml_backend_dev_t cpu = ggdiff::find_device("CPU");
    ASSERT_NE(cpu, nullptr);
    EXPECT_EQ(ggdiff::find_device("cpu"), cpu);
    EXPECT_EQ(ggdiff::find_device("Cpu"), cpu);
    EXPECT_EQ(std::string(ggml_backend_dev_name(cpu)), "CPU");
    for (const DeviceInfo& d : ggdiff::list_devices())
        EXPECT_EQ(ggdiff::find_device(d.name), d.dev);
}

TEST(Devices, UnknownDeviceIsNull) {
    EXPECT_EQ(ggdiff::find_device("NoSuchDevice"), nullptr);
    EXPECT_EQ(ggdiff::find_device(""), nullptr);
    EXPECT_EQ(ggdiff::find_device("CPU "), nullptr);
    EXPECT_EQ(ggdiff::find_device("RPC0"), nullptr);  // no --rpc-servers in this process
}

TEST(Devices, CpuBackendTakesThreads) {
    ggml_backend_dev_t cpu = ggdiff::find_device("CPU");
    ASSERT_NE(cpu, nullptr);
    EXPECT_NE(ggdiff::device_proc(cpu, "ggml_backend_set_n_threads"), nullptr);
    EXPECT_EQ(ggdiff::device_proc(cpu, "no_such_function"), nullptr);
    ggml_backend_t b = ggml_backend_dev_init(cpu, nullptr);
    ASSERT_NE(b, nullptr);
    ggdiff::set_backend_threads(b, 2);
    ggdiff::set_backend_threads(b, 0);  // ignored
    ggml_backend_free(b);
    EXPECT_GE(ggdiff::default_threads(), 1);
}

TEST(Devices, GgdiffThreadsSetsTheDefaultThreadCount) {
    const char* saved = std::getenv("GGDIFF_THREADS");
    const std::string keep = saved ? saved : "";
    unsetenv("GGDIFF_THREADS");
    const int cores = ggdiff::default_threads();
    EXPECT_GE(cores, 1);
    setenv("GGDIFF_THREADS", "3", 1);
    EXPECT_EQ(ggdiff::default_threads(), 3);
    setenv("GGDIFF_THREADS", "1", 1);
    EXPECT_EQ(ggdiff::default_threads(), 1);
    for (const char* bad : {"0", "-2", "two", "4x", "99999"}) {
        setenv("GGDIFF_THREADS", bad, 1);
        EXPECT_EQ(ggdiff::default_threads(), cores) << bad;  // ignored, with a warning
    }
    if (saved) {
        setenv("GGDIFF_THREADS", keep.c_str(), 1);
    } else {
        unsetenv("GGDIFF_THREADS");
    }
}

// ---- --rpc-servers validation -----------------------------------------------------------

TEST(RpcEndpoint, GoodEndpointsParse) {
    struct Case {
        const char* text;
        const char* host;
        int port;
    };
    for (const Case& c :
         {Case{"127.0.0.1:50052", "127.0.0.1", 50052}, Case{"localhost:1", "localhost", 1},
          Case{"  gpu-box_2.lan:65535 ", "gpu-box_2.lan", 65535},
          Case{"10.0.0.7:080", "10.0.0.7", 80}}) {
        auto ep = ggdiff::parse_rpc_endpoint(c.text);
        ASSERT_TRUE(ep.ok()) << c.text << ": " << ep.status().message();
        EXPECT_EQ(ep->host, c.host);
        EXPECT_EQ(ep->port, c.port);
        EXPECT_EQ(ep->text(), std::string(c.host) + ":" + std::to_string(c.port));
    }
}

TEST(RpcEndpoint, BadEndpointsNameTheTokenAndTheProblem) {
    struct Case {
        const char* text;
        const char* why;
    };
    for (const Case& c : {
             Case{"127.0.0.1", "no port"},
             Case{"127.0.0.1:", "no port"},
             Case{":50052", "no host"},
             Case{"host:0", "not a number in 1-65535"},
             Case{"host:65536", "not a number in 1-65535"},
             Case{"host:123456", "not a number in 1-65535"},
             Case{"host:-1", "not a number in 1-65535"},
             Case{"host:http", "not a number in 1-65535"},
             Case{"host:5 0", "contains a space"},
             Case{"[::1]:50052", "IPv6"},
             Case{"::1:50052", "IPv6"},
             Case{"fe80::1", "IPv6"},
             Case{"ho/st:1", "invalid host"},
             Case{"user@host:1", "invalid host"},
         }) {
        auto ep = ggdiff::parse_rpc_endpoint(c.text);
        ASSERT_FALSE(ep.ok()) << c.text;
        const std::string& msg = ep.status().message();
        EXPECT_NE(msg.find("--rpc-servers"), std::string::npos) << msg;
        EXPECT_NE(msg.find(c.text), std::string::npos) << msg;
        EXPECT_NE(msg.find(c.why), std::string::npos) << msg;
    }
    auto empty = ggdiff::parse_rpc_endpoint("  ");
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.status().message().find("empty"), std::string::npos);
}

TEST(RpcEndpoint, ListsSplitTrimAndDropRepeats) {
    auto none = ggdiff::parse_rpc_servers("");
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty());
    auto blank = ggdiff::parse_rpc_servers("   ");
    ASSERT_TRUE(blank.ok());
    EXPECT_TRUE(blank->empty());

    auto two = ggdiff::parse_rpc_servers("a:1, b:2 ,a:1");
    ASSERT_TRUE(two.ok()) << two.status().message();
    ASSERT_EQ(two->size(), 2u);
    EXPECT_EQ((*two)[0].text(), "a:1");
    EXPECT_EQ((*two)[1].text(), "b:2");
}

TEST(RpcEndpoint, BadListsNameTheBadEntry) {
    for (const char* csv : {"a:1,,b:2", "a:1,", ",a:1"}) {
        auto r = ggdiff::parse_rpc_servers(csv);
        ASSERT_FALSE(r.ok()) << csv;
        EXPECT_NE(r.status().message().find("empty entry"), std::string::npos)
            << r.status().message();
    }
    auto r = ggdiff::parse_rpc_servers("a:1,b:x,c:3");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("\"b:x\""), std::string::npos) << r.status().message();
}

TEST(RpcEndpoint, AddRejectsBadSyntaxBeforeAnyNetworkAndAddsNothing) {
    const size_t before = ggml_backend_dev_count();
    for (const char* csv : {"127.0.0.1", "127.0.0.1:1,,", "127.0.0.1:99999", "[::1]:1"}) {
        ggdiff::Status st = ggdiff::add_rpc_servers(csv);
        EXPECT_FALSE(st.ok()) << csv;
    }
    // A bad entry after a good one: nothing is probed or added.
    ggdiff::Status st = ggdiff::add_rpc_servers("127.0.0.1:1,nope");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("\"nope\""), std::string::npos) << st.message();
    EXPECT_TRUE(ggdiff::add_rpc_servers("").ok());
    EXPECT_TRUE(ggdiff::add_rpc_servers(" ").ok());
    EXPECT_EQ(ggml_backend_dev_count(), before);
}

}  // namespace
