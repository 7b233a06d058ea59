// Helpers for the RPC suite: free loopback ports, ggdiff-rpc worker processes that are
// always stopped, running a binary with a deadline, and fake TCP servers.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace rpc_test {

inline std::string binary(const char* name) {
    return std::string(GGDIFF_BINARY_DIR) + "/" + name;
}

inline bool file_exists(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// A loopback port nothing listens on right now (the kernel's pick for port 0).
inline int free_port() {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    int port = -1;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
        socklen_t len = sizeof(a);
        if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) port = ntohs(a.sin_port);
    }
    close(fd);
    return port;
}

// True when something accepts TCP connections on 127.0.0.1:port.
inline bool port_accepts(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    return ok;
}

inline std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// fork + exec with stdout/stderr to files; the child dies with the test process.
inline pid_t spawn(const std::vector<std::string>& argv, const std::string& out_path,
                   const std::string& err_path) {
    // Everything the child needs is prepared before fork (no allocation after it).
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) return pid;  // parent (or -1)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || err < 0 || in < 0) _exit(126);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execv(args[0], args.data());
    _exit(127);
}

// Waits for pid up to timeout_ms; true (and *status) when it ended.
inline bool wait_for_exit(pid_t pid, int timeout_ms, int* status) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid) return true;
        if (r < 0 && errno != EINTR) return true;  // not our child any more
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

inline std::string temp_path(const std::string& name) {
    std::string dir = GGDIFF_TEST_TMP;
    mkdir(dir.c_str(), 0755);
    return dir + "/" + name + "." + std::to_string(getpid());
}

struct RunResult {
    bool finished = false;  // false: killed at the deadline
    bool exited = false;    // ended by exit(), not by a signal
    int code = -1;          // exit code, or the signal number when !exited
    std::string out, err;
};

// Runs a binary to completion (killed after timeout_ms) and returns its output.
inline RunResult run(const std::vector<std::string>& argv, int timeout_ms = 60000) {
    static std::atomic<int> counter{0};
    const std::string tag = "run" + std::to_string(counter++);
    const std::string out_path = temp_path(tag + ".out"), err_path = temp_path(tag + ".err");
    RunResult r;
    pid_t pid = spawn(argv, out_path, err_path);
    if (pid < 0) return r;
    int status = 0;
    r.finished = wait_for_exit(pid, timeout_ms, &status);
    if (!r.finished) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    r.exited = WIFEXITED(status);
    r.code = r.exited ? WEXITSTATUS(status) : (WIFSIGNALED(status) ? WTERMSIG(status) : -1);
    r.out = read_file(out_path);
    r.err = read_file(err_path);
    unlink(out_path.c_str());
    unlink(err_path.c_str());
    return r;
}

// One ggdiff-rpc process on a free loopback port; stopped by stop() or the destructor.
class Worker {
  public:
    Worker() = default;
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;
    ~Worker() { stop(); }

    // Starts the worker and waits (bounded) until it accepts connections. Retries on a
    // new port when the chosen one was taken in the meantime. mem_mib > 0: `--mem mem_mib`.
    bool start(std::string* error, int threads = 1, int mem_mib = 0) {
        const std::string exe = binary("ggdiff-rpc");
        if (!file_exists(exe)) {
            *error = exe + " is missing: build the ggdiff-rpc target";
            return false;
        }
        for (int attempt = 0; attempt < 4; ++attempt) {
            port_ = free_port();
            if (port_ <= 0) continue;
            log_ = temp_path("worker" + std::to_string(port_) + ".log");
            std::vector<std::string> argv = {exe, "--host", "127.0.0.1", "--port",
                                             std::to_string(port_)};
            argv.insert(argv.end(), {"--threads", std::to_string(threads)});
            if (mem_mib > 0) argv.insert(argv.end(), {"--mem", std::to_string(mem_mib)});
            pid_ = spawn(argv, log_, log_ + ".err");
            if (pid_ < 0) {
                *error = "fork failed";
                return false;
            }
            // Loading ggml's backends takes a moment on a busy machine: allow 20 s.
            auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (std::chrono::steady_clock::now() < deadline) {
                int status = 0;
                if (waitpid(pid_, &status, WNOHANG) == pid_) {
                    pid_ = -1;  // exited early (port taken?): try another port
                    *error = "ggdiff-rpc exited early: " + read_file(log_ + ".err");
                    break;
                }
                if (port_accepts(port_)) return true;
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            if (pid_ > 0) {
                *error = "ggdiff-rpc did not accept connections on port " + std::to_string(port_) +
                         " within 20 s: " + read_file(log_ + ".err");
                stop();
                return false;
            }
        }
        return false;
    }

    // SIGTERM, then SIGKILL after 3 s; always reaps. Returns the wait status (or -1).
    int stop() {
        if (pid_ <= 0) return -1;
        int status = -1;
        kill(pid_, SIGTERM);
        if (!wait_for_exit(pid_, 3000, &status)) {
            kill(pid_, SIGKILL);
            waitpid(pid_, &status, 0);
        }
        pid_ = -1;
        unlink(log_.c_str());
        unlink((log_ + ".err").c_str());
        return status;
    }

    bool running() const { return pid_ > 0; }
    int port() const { return port_; }
    pid_t pid() const { return pid_; }
    std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
    std::string log() const { return read_file(log_) + read_file(log_ + ".err"); }

  private:
    pid_t pid_ = -1;
    int port_ = -1;
    std::string log_;
};

// A TCP server on a kernel-chosen loopback port that is not a ggml RPC server: it either
// closes every connection at once or holds it open without a word until stop().
class FakeServer {
  public:
    enum class Mode { CloseAtOnce, Silent };
    explicit FakeServer(Mode mode) : mode_(mode) {
        fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
            listen(fd_, 8) != 0) {
            return;
        }
        socklen_t len = sizeof(a);
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] { loop(); });
    }
    ~FakeServer() { stop(); }
    // Stops accepting and closes every held connection.
    void stop() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
        for (int c : held_) close(c);
        held_.clear();
        if (fd_ >= 0) close(fd_);
        fd_ = -1;
    }
    int port() const { return port_; }
    std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

  private:
    void loop() {
        while (!stop_) {
            pollfd p{fd_, POLLIN, 0};
            if (poll(&p, 1, 50) <= 0) continue;
            int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) continue;
            if (mode_ == Mode::CloseAtOnce) {
                close(c);
            } else {
                held_.push_back(c);
            }
        }
    }
    Mode mode_;
    int fd_ = -1;
    int port_ = -1;
    std::atomic<bool> stop_{false};
    std::vector<int> held_;
    std::thread thread_;
};

}  // namespace rpc_test
