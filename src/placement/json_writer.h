// A minimal JSON writer for the plans this layer prints (the layer links no JSON library).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ggdiff::placement {

// The JSON string literal for `s` (quotes included, control characters escaped).
std::string json_string(const std::string& s);

// Builds compact JSON in order of calls; the caller keeps the nesting balanced.
class JsonWriter {
  public:
    JsonWriter& begin_object();
    JsonWriter& end_object();
    JsonWriter& begin_array();
    JsonWriter& end_array();
    JsonWriter& key(const std::string& k);
    JsonWriter& value(const std::string& v);
    JsonWriter& value(const char* v) { return value(std::string(v)); }
    JsonWriter& value(uint64_t v);
    JsonWriter& value(bool v);
    JsonWriter& null();
    const std::string& str() const { return out_; }

  private:
    void separate();
    std::string out_;
    std::vector<bool> first_;  // per open container: no element written yet
    bool after_key_ = false;
};

}  // namespace ggdiff::placement
