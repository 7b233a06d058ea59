// -M vid_gen: generate, then write each batch item's frames as sd-cli does: a printf pattern
// in -o (frame_%03d.png) gives one image per frame; otherwise an item of several frames
// becomes one video (NAME.avi or NAME.webp) and an item of one frame one image.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "modes.h"

namespace ggdiff::cli {

namespace {

std::string lower(std::string s) {
    for (char& c : s) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return s;
}

bool is_image_ext(const std::string& ext) {
    const std::string e = lower(ext);
    return e == ".png" || e == ".jpg" || e == ".jpeg" || e == ".webp";
}

bool is_video_ext(const std::string& ext) {
    const std::string e = lower(ext);
    return e == ".avi" || e == ".webm";
}

// The name without an image or video extension (as sd-cli strips them); other extensions stay
// part of the name.
std::string base_name(const std::string& output) {
    const std::filesystem::path p(output);
    const std::string ext = p.extension().string();
    if (is_image_ext(ext) || is_video_ext(ext)) {
        return output.substr(0, output.size() - ext.size());
    }
    return output;
}

// NAME, NAME_1, NAME_2, ... (or NAME_N from --output-begin-idx), as img_gen names a batch.
std::string item_name(const std::string& name, int item, int64_t begin_idx) {
    if (begin_idx < 0 && item == 0) return name;
    const std::filesystem::path p(name);
    const int64_t n = begin_idx < 0 ? item : begin_idx + item;
    return (p.parent_path() /
            (p.stem().string() + "_" + std::to_string(n) + p.extension().string()))
        .string();
}

}  // namespace

bool parse_frame_pattern(const std::string& output, FramePattern& out, std::string& error) {
    out = FramePattern{};
    for (size_t i = 0; i < output.size(); ++i) {
        if (output[i] != '%') continue;
        if (i + 1 < output.size() && output[i + 1] == '%') {
            ++i;  // a literal '%'
            continue;
        }
        // %d or %Nd with up to three digits of width (a leading 0 pads with zeros).
        size_t j = i + 1;
        while (j < output.size() && j - i - 1 < 3 && output[j] >= '0' && output[j] <= '9') ++j;
        if (j >= output.size() || output[j] != 'd') {
            const size_t end = std::min(output.size(), j + 1);
            error = "-o: '" + output.substr(i, end - i) +
                    "' is not a frame number: a pattern takes one %d (or %03d ...) and %% for "
                    "a literal '%'";
            return false;
        }
        if (out.has_pattern) {
            error = "-o: more than one frame number (%d) in '" + output + "'";
            return false;
        }
        out.has_pattern = true;
        out.at = i;
        out.spec = output.substr(i, j + 1 - i);
        i = j;
    }
    if (out.has_pattern) {
        // sd-cli: an image extension stays, a video one becomes .png, anything else gets .png.
        const std::string ext = std::filesystem::path(output).extension().string();
        out.template_text = is_image_ext(ext) ? output : base_name(output) + ".png";
    }
    return true;
}

std::string format_frame_name(const FramePattern& p, int64_t index) {
    std::string out;
    const std::string& t = p.template_text;
    for (size_t i = 0; i < t.size(); ++i) {
        if (t[i] == '%' && i + 1 < t.size() && t[i + 1] == '%') {
            out += '%';
            ++i;
        } else if (t[i] == '%') {
            size_t j = i + 1;
            while (j < t.size() && t[j] != 'd') ++j;
            char buf[64];
            const std::string spec = t.substr(i, j - i) + "lld";
            std::snprintf(buf, sizeof buf, spec.c_str(), static_cast<long long>(index));
            out += buf;
            i = j;
        } else {
            out += t[i];
        }
    }
    return out;
}

std::string video_file_name(const std::string& output, int item, int64_t begin_idx) {
    const std::string ext = std::filesystem::path(output).extension().string();
    const std::string keep = lower(ext) == ".avi" || lower(ext) == ".webp" ? ext : ".avi";
    return item_name(base_name(output) + keep, item, begin_idx);
}

std::string frame_file_name(const std::string& output, int item, int64_t begin_idx) {
    const std::string ext = std::filesystem::path(output).extension().string();
    return item_name(is_image_ext(ext) ? output : base_name(output) + ".png", item, begin_idx);
}

namespace {

struct VideoState {
    ggdiff_model* model = nullptr;  // for the items' sound tracks
    std::string output;
    FramePattern pattern;
    int64_t begin_idx = -1;
    int frames = 1;  // per batch item
    int fps = 16;
    bool metadata = true;
    int failures = 0;
    // The frames of the item being made (copied: the library's are valid during the call).
    std::vector<std::vector<unsigned char>> pixels;
    std::vector<ggdiff_image> images;
    std::string parameters;
    std::string preview_path;
    bool preview_failed = false;
};

void saved_image(const std::string& path, const ggdiff_image* image) {
    std::fprintf(stderr, "saved %s (seed %lld)\n", escape_controls(path).c_str(),
                 static_cast<long long>(image->seed));
}

// The item's sound track (audio-video models) as a WAV file beside its frames.
void save_audio_track(VideoState* st, const std::string& path) {
    ggdiff_audio audio{};
    if (ggdiff_generated_audio(st->model, &audio) != 0 || !audio.samples) return;
    if (ggdiff_audio_save_wav(&audio, path.c_str()) != 0) {
        print_error(ggdiff_last_error());
        st->failures++;
        return;
    }
    std::fprintf(stderr, "saved %s (%lld samples, %d Hz)\n", escape_controls(path).c_str(),
                 static_cast<long long>(audio.frames), audio.sample_rate);
}

void on_frame(const ggdiff_image* image, int index, void* user) {
    auto* st = static_cast<VideoState*>(user);
    const int item = index / st->frames;
    const int frame = index % st->frames;
    if (st->pattern.has_pattern || st->frames == 1) {
        const std::string path =
            st->pattern.has_pattern
                ? format_frame_name(st->pattern, std::max<int64_t>(0, st->begin_idx) + index)
                : frame_file_name(st->output, item, st->begin_idx);
        if (ggdiff_image_save(image, path.c_str(), st->metadata ? 1 : 0) != 0) {
            print_error(ggdiff_last_error());
            st->failures++;
            return;
        }
        saved_image(path, image);
        if (frame + 1 == st->frames) {
            // Named after the item's first frame.
            const std::string first =
                st->pattern.has_pattern
                    ? format_frame_name(st->pattern,
                                        std::max<int64_t>(0, st->begin_idx) + index - frame)
                    : path;
            save_audio_track(st, base_name(first) + ".wav");
        }
        return;
    }
    if (frame == 0) {
        st->pixels.clear();
        st->images.clear();
        st->parameters = image->parameters ? image->parameters : "";
    }
    const size_t bytes = static_cast<size_t>(image->width) * image->height * image->channels;
    st->pixels.emplace_back(image->data, image->data + bytes);
    ggdiff_image copy = *image;
    copy.parameters = nullptr;
    st->images.push_back(copy);
    if (frame + 1 < st->frames) return;
    for (size_t i = 0; i < st->images.size(); ++i) st->images[i].data = st->pixels[i].data();
    st->images[0].parameters = st->parameters.empty() ? nullptr : st->parameters.data();
    const std::string path = video_file_name(st->output, item, st->begin_idx);
    ggdiff_audio audio{};
    if (ggdiff_generated_audio(st->model, &audio) != 0) audio = ggdiff_audio{};
    if (ggdiff_video_save_audio(st->images.data(), static_cast<int>(st->images.size()), st->fps,
                                path.c_str(), st->metadata ? 1 : 0,
                                audio.samples ? &audio : nullptr) != 0) {
        print_error(ggdiff_last_error());
        st->failures++;
    } else {
        std::fprintf(stderr, "saved %s (%d frames, %d fps)\n", escape_controls(path).c_str(),
                     static_cast<int>(st->images.size()), st->fps);
        if (audio.samples) {
            const bool avi = lower(std::filesystem::path(path).extension().string()) == ".avi";
            std::fprintf(stderr, "  with %lld samples of sound at %d Hz%s\n",
                         static_cast<long long>(audio.frames), audio.sample_rate,
                         avi ? " (PCM track)"
                             : (" in " + escape_controls(base_name(path) + ".wav")).c_str());
        }
    }
    st->pixels.clear();
    st->images.clear();
}

void on_preview(const ggdiff_image* image, int, int, void* user) {
    auto* st = static_cast<VideoState*>(user);
    if (ggdiff_image_save(image, st->preview_path.c_str(), 0) == 0 || st->preview_failed) return;
    print_error(std::string("--preview-path: ") + ggdiff_last_error());
    st->preview_failed = true;
}

// Every file the run will write, checked before any compute; `frames` 0 = not known yet
// (before the model is loaded): the names of both a video and a single frame are checked.
bool video_outputs_ok(const VideoState& st, int items, int frames) {
    auto check = [](int rc) {
        if (rc == 0) return true;
        print_error(std::string("-o: ") + ggdiff_last_error());
        return false;
    };
    if (st.pattern.has_pattern) {
        const int64_t first = std::max<int64_t>(0, st.begin_idx);
        const int64_t n = static_cast<int64_t>(items) * std::max(1, frames);
        for (int64_t i = 0; i < n; ++i) {
            if (!check(ggdiff_image_check_path(format_frame_name(st.pattern, first + i).c_str())))
                return false;
        }
        return true;
    }
    for (int item = 0; item < items; ++item) {
        if (frames != 1 &&
            !check(ggdiff_video_check_path(video_file_name(st.output, item, st.begin_idx).c_str())))
            return false;
        if (frames <= 1 &&
            !check(ggdiff_image_check_path(frame_file_name(st.output, item, st.begin_idx).c_str())))
            return false;
    }
    return true;
}

int progress_bar(const char* phase, int step, int total, double secs, void*) {
    print_progress(phase, step, total, secs);
    return 1;
}

}  // namespace

int run_vid_gen(const CliRun& cli) {
    ggdiff_options* o = cli.options.get();
    if (cli.flag("fit-dry-run")) {
        // The --auto-fit plan as JSON on stdout, as -M img_gen prints it; no weights are loaded.
        char* json = nullptr;
        const int rc = ggdiff_auto_fit_plan(o, &json);
        if (rc != 0) {
            print_error(ggdiff_last_error());
        } else {
            std::printf("%s\n", json);
        }
        std::free(json);
        return rc;
    }
    VideoState st;
    st.output = cli.text("output");
    st.begin_idx = cli.integer("output-begin-idx");
    st.fps = static_cast<int>(cli.integer("fps"));
    st.metadata = !cli.flag("disable-image-metadata");
    st.preview_path = cli.text("preview-path");
    std::string error;
    if (!parse_frame_pattern(st.output, st.pattern, error)) {
        print_error(error);
        return 1;
    }
    const std::string ext = lower(std::filesystem::path(st.output).extension().string());
    if (!st.pattern.has_pattern && ext == ".webm") {
        print_error(
            "-o: .webm is not supported yet (no WebM encoder in this build); use .avi or "
            ".webp");
        return 1;
    }
    const int items = static_cast<int>(std::max<int64_t>(1, cli.integer("batch-count")));
    if (!video_outputs_ok(st, items, 0)) return 1;
    const bool previews = cli.text("preview") != "none";
    if (previews && ggdiff_image_check_path(st.preview_path.c_str()) != 0) {
        print_error(std::string("--preview-path: ") + ggdiff_last_error());
        return 1;
    }
    ggdiff_model* model = nullptr;
    if (ggdiff_model_load(o, &model) != 0) {
        print_error(ggdiff_last_error());
        return 1;
    }
    st.model = model;
    int count = 0;
    if (ggdiff_image_count(model, o, &count) != 0) {
        print_error(ggdiff_last_error());
        ggdiff_model_free(model);
        return 1;
    }
    st.frames = std::max(1, count / items);
    if (!video_outputs_ok(st, items, st.frames)) {
        ggdiff_model_free(model);
        return 1;
    }
    const std::string video_ext =
        std::filesystem::path(video_file_name(st.output, 0, -1)).extension().string();
    if (!st.pattern.has_pattern && st.frames > 1 && lower(ext) != lower(video_ext)) {
        std::fprintf(stderr, "note: %d frames per video: writing %s (-o %s names no video)\n",
                     st.frames,
                     escape_controls(video_file_name(st.output, 0, st.begin_idx)).c_str(),
                     escape_controls(st.output).c_str());
    } else if (!st.pattern.has_pattern && st.frames == 1 && !is_image_ext(ext)) {
        std::fprintf(stderr, "note: one frame per item: writing the image %s\n",
                     escape_controls(frame_file_name(st.output, 0, st.begin_idx)).c_str());
    }
    if (ggdiff_generate_each_preview(model, o, progress_bar, on_frame,
                                     previews ? on_preview : nullptr, &st) != 0) {
        print_error(ggdiff_last_error());
        st.failures++;
    }
    ggdiff_model_free(model);
    return st.failures ? 1 : 0;
}

}  // namespace ggdiff::cli
