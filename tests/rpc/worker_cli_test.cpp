// ggdiff-rpc's command line: help, bad values, unknown devices, a busy port, the
// non-loopback warning, and a clean stop on SIGTERM / SIGINT.
#include <gtest/gtest.h>

#include "rpc_test_util.h"

namespace {

using rpc_test::RunResult;
using rpc_test::Worker;

std::string worker_bin() {
    return rpc_test::binary("ggdiff-rpc");
}

TEST(RpcWorkerCli, HelpListsTheOptions) {
    ASSERT_TRUE(rpc_test::file_exists(worker_bin())) << "build the ggdiff-rpc target";
    RunResult r = rpc_test::run({worker_bin(), "--help"});
    ASSERT_TRUE(r.finished && r.exited);
    EXPECT_EQ(r.code, 0);
    for (const char* opt : {"--host", "--port", "--threads", "--device", "--mem"}) {
        EXPECT_NE(r.out.find(opt), std::string::npos) << opt << "\n" << r.out;
    }
    // --help says what --mem does.
    EXPECT_NE(r.out.find("free = total"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("refused"), std::string::npos) << r.out;
}

TEST(RpcWorkerCli, BadValuesAreRejectedNamingTheFlag) {
    struct Case {
        std::vector<std::string> args;
        const char* flag;
    };
    const Case cases[] = {
        {{"--port", "0"}, "--port"},    {{"--port", "65536"}, "--port"},
        {{"--port", "http"}, "--port"}, {{"--threads", "0"}, "--threads"},
        {{"--bogus"}, "--bogus"},       {{"--host", "::1", "--port", "1"}, "IPv6"},
        {{"--mem", "0"}, "--mem"},      {{"--mem", "-5"}, "--mem"},
        {{"--mem", "lots"}, "--mem"},
    };
    for (const Case& c : cases) {
        std::vector<std::string> argv = {worker_bin()};
        argv.insert(argv.end(), c.args.begin(), c.args.end());
        RunResult r = rpc_test::run(argv, 20000);
        ASSERT_TRUE(r.finished) << c.args[0];
        EXPECT_TRUE(r.exited) << c.args[0] << ": died of signal " << r.code;
        EXPECT_NE(r.code, 0) << c.args[0];
        EXPECT_NE((r.out + r.err).find(c.flag), std::string::npos) << r.out << r.err;
    }
}

TEST(RpcWorkerCli, UnknownDeviceIsAnError) {
    RunResult r = rpc_test::run(
        {worker_bin(), "--port", std::to_string(rpc_test::free_port()), "--device", "NoSuchGPU"},
        20000);
    ASSERT_TRUE(r.finished && r.exited);
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("unknown device \"NoSuchGPU\""), std::string::npos) << r.err;
}

TEST(RpcWorkerCli, BusyPortIsAnError) {
    Worker w;
    std::string error;
    ASSERT_TRUE(w.start(&error)) << error;
    RunResult r = rpc_test::run({worker_bin(), "--port", std::to_string(w.port())}, 20000);
    ASSERT_TRUE(r.finished) << "a second worker on a busy port must not hang";
    EXPECT_TRUE(r.exited && r.code == 1) << r.code << "\n" << r.err;
    EXPECT_NE(r.err.find(w.endpoint()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("in use"), std::string::npos) << r.err;
}

TEST(RpcWorkerCli, StopsCleanlyOnSigtermAndSigint) {
    for (int sig : {SIGTERM, SIGINT}) {
        Worker w;
        std::string error;
        ASSERT_TRUE(w.start(&error)) << error;
        ASSERT_EQ(kill(w.pid(), sig), 0);
        int status = 0;
        ASSERT_TRUE(rpc_test::wait_for_exit(w.pid(), 5000, &status)) << "signal " << sig;
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "signal " << sig;
        EXPECT_FALSE(rpc_test::port_accepts(w.port()));
        w.stop();  // already reaped: a no-op
    }
}

TEST(RpcWorkerCli, WarnsWhenNotOnLoopback) {
    const int port = rpc_test::free_port();
    const std::string out = rpc_test::temp_path("warn.out"), err = rpc_test::temp_path("warn.err");
    pid_t pid = rpc_test::spawn({worker_bin(), "--host", "0.0.0.0", "--port", std::to_string(port)},
                                out, err);
    ASSERT_GT(pid, 0);
    bool up = false;
    for (int i = 0; i < 400 && !up; ++i) {
        up = rpc_test::port_accepts(port);
        if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid, SIGTERM);
    int status = 0;
    if (!rpc_test::wait_for_exit(pid, 5000, &status)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    const std::string log = rpc_test::read_file(err);
    unlink(out.c_str());
    unlink(err.c_str());
    EXPECT_TRUE(up) << log;
    EXPECT_NE(log.find("WARNING"), std::string::npos) << log;
    EXPECT_NE(log.find("not loopback"), std::string::npos) << log;
}

}  // namespace
