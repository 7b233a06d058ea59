// SHA-256 (FIPS 180-4), incremental: for file hashes shown to users (e.g. LoRA hashes in
// image metadata).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ggdiff {

class Sha256 {
  public:
    Sha256();
    void update(const void* data, size_t n);
    // The digest as 64 lowercase hex digits; the object is spent afterwards.
    std::string hex_digest();

  private:
    void block(const uint8_t* p);
    std::array<uint32_t, 8> h_;
    std::array<uint8_t, 64> buf_{};
    size_t used_ = 0;
    uint64_t total_ = 0;
};

}  // namespace ggdiff
