#include "modes.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

namespace ggdiff::cli {

namespace {

// Prints the malloc'd text a C API call produced, or its error.
int print_result(int rc, char* text) {
    if (rc != 0) {
        print_error(ggdiff_last_error());
        std::free(text);
        return 1;
    }
    std::fputs(text, stdout);
    std::free(text);
    return 0;
}

}  // namespace

int run_list_devices(const CliRun& cli) {
    char* text = nullptr;
    const int rc = ggdiff_list_devices(cli.text("rpc-servers").c_str(), &text);
    return print_result(rc, text);
}

int run_info(const CliRun& cli) {
    char* text = nullptr;
    const int rc = ggdiff_model_info(cli.options.get(), &text);
    return print_result(rc, text);
}

int run_convert(const CliRun& cli) {
    // -o names the GGUF (or .safetensors) file here; sd-cli's default is output.gguf.
    const std::string out = cli.given("output") ? cli.text("output") : "output.gguf";
    auto progress = [](const char*, int done, int total, double, void*) {
        print_progress("convert", done, total, 0.0);
        return 1;
    };
    if (ggdiff_convert(cli.options.get(), out.c_str(), progress, nullptr) != 0) {
        print_error(ggdiff_last_error());
        return 1;
    }
    std::fprintf(stderr, "wrote %s\n", escape_controls(out).c_str());
    return 0;
}

int run_metadata(const CliRun& cli) {
    const std::string format = cli.flag("metadata-raw") ? "raw" : cli.text("metadata-format");
    char* text = nullptr;
    const int rc = ggdiff_image_metadata(cli.text("image").c_str(), format.c_str(), &text);
    if (rc == 0) {
        std::printf("%s\n", text);
        std::free(text);
        return 0;
    }
    return print_result(rc, text);
}

int run_upscale(const CliRun& cli) {
    // sd-cli: -M upscale -i IMAGE --upscale-model ESRGAN [-o OUT]; no diffusion model.
    if (!cli.given("init-img")) {
        print_error("-M upscale needs the image to upscale: -i IMAGE");
        return 1;
    }
    if (!cli.given("upscale-model")) {
        print_error("-M upscale needs an upscaler: --upscale-model ESRGAN_FILE");
        return 1;
    }
    const std::string input = cli.text("init-img");
    const std::string output = cli.text("output");
    if (ggdiff_image_check_path(output.c_str()) != 0) {
        print_error(std::string("-o: ") + ggdiff_last_error());
        return 1;
    }
    std::ifstream in(input, std::ios::binary);
    if (!in) {
        print_error("-i " + input + ": cannot open the file");
        return 1;
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    ggdiff_image* image = nullptr;
    if (ggdiff_image_decode(bytes.data(), bytes.size(), 0, &image) != 0) {
        print_error("-i " + input + ": " + ggdiff_last_error());
        return 1;
    }
    ggdiff_upscaler* upscaler = nullptr;
    if (ggdiff_upscaler_load(cli.options.get(), &upscaler) != 0) {
        print_error(ggdiff_last_error());
        ggdiff_images_free(image, 1);
        return 1;
    }
    auto progress = [](const char* phase, int step, int total, double secs, void*) {
        print_progress(phase, step, total, secs);
        return 1;
    };
    ggdiff_image* out = nullptr;
    int rc = ggdiff_upscale(upscaler, cli.options.get(), image, progress, nullptr, &out);
    if (rc != 0) {
        print_error(ggdiff_last_error());
    } else if (ggdiff_image_save(out, output.c_str(), cli.flag("disable-image-metadata") ? 0 : 1) !=
               0) {
        print_error(ggdiff_last_error());
        rc = 1;
    } else {
        std::fprintf(stderr, "saved %s (%dx%d)\n", escape_controls(output).c_str(), out->width,
                     out->height);
    }
    ggdiff_images_free(out, out ? 1 : 0);
    ggdiff_images_free(image, 1);
    ggdiff_upscaler_free(upscaler);
    return rc != 0 ? 1 : 0;
}

std::string escape_controls(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    char buf[8];
    for (size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
        if (c < 0x20 || c == 0x7f) {
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {  // U+0080..U+009F in UTF-8
            std::snprintf(buf, sizeof buf, "\\u%04x", next);
            out += buf;
            ++i;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

void print_error(const std::string& message) {
    std::fprintf(stderr, "error: %s\n", escape_controls(message).c_str());
}

void print_progress(const char* phase, int step, int total, double secs) {
    if (total <= 0) return;
    constexpr int kWidth = 30;
    const int filled = step * kWidth / total;
    char bar[kWidth + 1];
    for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : '.';
    bar[kWidth] = '\0';
    const double per = step > 0 ? secs / step : 0.0;
    const bool tty = isatty(fileno(stderr));
    if (!tty && step != total) return;  // logs get one line per phase
    if (per >= 1.0 || per == 0.0) {
        std::fprintf(stderr, "\r%-9s %3d/%-3d [%s] %.2f s/it", phase, step, total, bar, per);
    } else {
        std::fprintf(stderr, "\r%-9s %3d/%-3d [%s] %.2f it/s", phase, step, total, bar, 1.0 / per);
    }
    if (step >= total) std::fprintf(stderr, "  (%.2fs)\n", secs);
    std::fflush(stderr);
}

}  // namespace ggdiff::cli
