// Runs fuzz inputs through a target without libFuzzer: every file named on the command line,
// and every file under every folder named (sorted, recursively). This is how the normal build
// replays the committed corpora and past crash inputs as ctest tests. Fails when an input
// crashes the target (the process dies) or when no input was found at all.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    std::vector<fs::path> inputs;
    for (int i = 1; i < argc; ++i) {
        const fs::path p(argv[i]);
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            for (const auto& e : fs::recursive_directory_iterator(p, ec)) {
                if (e.is_regular_file() && e.path().filename().string()[0] != '.') {
                    inputs.push_back(e.path());
                }
            }
        } else if (fs::is_regular_file(p, ec)) {
            inputs.push_back(p);
        }
    }
    std::sort(inputs.begin(), inputs.end());
    if (inputs.empty()) {
        std::fprintf(stderr, "no inputs found\n");
        return 1;
    }
    double slowest = 0;
    std::string slowest_name;
    for (const fs::path& p : inputs) {
        std::ifstream in(p, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), {});
        const auto t0 = std::chrono::steady_clock::now();
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (s > slowest) slowest = s, slowest_name = p.string();
    }
    std::printf("replayed %zu inputs; slowest %.3f s (%s)\n", inputs.size(), slowest,
                slowest_name.c_str());
    return 0;
}
