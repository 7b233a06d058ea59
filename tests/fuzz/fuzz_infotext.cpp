// Fuzz target: A1111 infotext parsing (seeds in corpus/infotext). Short single lines are
// checked against A1111's regular expression itself (std::regex); parsed infotexts must format
// and convert to JSON.
#include <nlohmann/json.hpp>
#include <regex>

#include "fuzz_util.h"
#include "image/infotext.h"

namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

Pairs regex_params(const std::string& line) {
    static const std::regex re(R"re(\s*(\w[\w \-/]+):\s*("(?:\\.|[^\\"])+"|[^,]*)(?:,|$))re");
    Pairs out;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), re); it != std::sregex_iterator();
         ++it) {
        out.emplace_back((*it)[1].str(), (*it)[2].str());
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace ggdiff;
    const std::string text(reinterpret_cast<const char*>(data), size);
    const Pairs pairs = infotext_find_params(text);
    bool plain = size <= 96;
    for (unsigned char c : text) plain = plain && c >= 0x20 && c < 0x7f;
    if (plain) GGDIFF_FUZZ_CHECK(pairs == regex_params(text));

    Result<GenerationInfo> info = parse_infotext(text);
    (void)format_metadata(text, "json");
    if (!info.ok()) return 0;
    (void)infotext_to_json(*info).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const std::string again = format_infotext(*info);
    (void)parse_infotext(again);
    return 0;
}
