// Typed reading of JSON request bodies: every wrong type or out-of-range value becomes a
// 400 RequestError naming the field by its full path ("sample_params.sample_steps").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ggdiff::server {

// Parses a request body that must be a JSON object; errors name "body".
nlohmann::json parse_json_object(const std::string& body);

// A view of one JSON object; `prefix` is the path of the object itself ("" at the top).
// Absent keys and null values read as nullopt.
class Fields {
  public:
    explicit Fields(const nlohmann::json& object, std::string prefix = "");

    std::string path(const std::string& key) const;
    bool has(const std::string& key) const;

    std::optional<int64_t> integer(const std::string& key, int64_t min, int64_t max) const;
    std::optional<double> number(const std::string& key, double min, double max) const;
    std::optional<bool> boolean(const std::string& key) const;
    std::optional<std::string> string(const std::string& key, size_t max_bytes = 1 << 20) const;
    // Either true/false or 0/1 (A1111 sends some flags as numbers).
    std::optional<bool> flag(const std::string& key) const;
    // A nested object (nullopt when absent or null); errors when it is another type.
    std::optional<Fields> object(const std::string& key) const;
    // An array (empty when absent or null); errors when it is another type or longer than
    // max_items.
    std::vector<nlohmann::json> array(const std::string& key, size_t max_items) const;
    // A string from `allowed` (compared case-insensitively); returns the allowed spelling.
    std::optional<std::string> one_of(const std::string& key,
                                      const std::vector<std::string>& allowed) const;

    const nlohmann::json& json() const { return *object_; }

  private:
    const nlohmann::json* get(const std::string& key) const;
    const nlohmann::json* object_;
    std::string prefix_;
};

// The JSON type name for messages ("a string", "an array", ...).
std::string json_type_phrase(const nlohmann::json& value);

}  // namespace ggdiff::server
