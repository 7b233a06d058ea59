#include "core/base64.h"
#include "test_helpers.h"

namespace ggdiff {
namespace {

std::string decoded(const std::string& text) {
    auto r = base64_decode(text);
    EXPECT_TRUE(r.ok()) << text << ": " << r.status().message();
    return r.ok() ? std::string(r->begin(), r->end()) : std::string();
}

TEST(Base64, Rfc4648Vectors) {
    const std::pair<std::string, std::string> vectors[] = {
        {"", ""},
        {"f", "Zg=="},
        {"fo", "Zm8="},
        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
    };
    for (const auto& [plain, enc] : vectors) {
        EXPECT_EQ(base64_encode(std::vector<uint8_t>(plain.begin(), plain.end())), enc);
        EXPECT_EQ(decoded(enc), plain);
    }
}

TEST(Base64, RoundTripAllLengthsAndBytes) {
    std::vector<uint8_t> data;
    for (int n = 0; n < 300; ++n) {
        auto r = base64_decode(base64_encode(data));
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(*r, data) << n;
        data.push_back(static_cast<uint8_t>(n * 97 + 13));
    }
}

TEST(Base64, LenientForms) {
    EXPECT_EQ(decoded("Zm9v\nYmFy\r\n"), "foobar");
    EXPECT_EQ(decoded("Zm9vYg"), "foob");  // missing padding
    EXPECT_EQ(decoded("data:image/png;base64,Zm9vYmFy"), "foobar");
    EXPECT_EQ(decoded("-_-_"), decoded("+/+/"));  // URL-safe alphabet
}

TEST(Base64, ClearErrors) {
    auto r = base64_decode("Zm9v!mFy");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("'!' at offset 4"), std::string::npos)
        << r.status().message();
    r = base64_decode("Zm9vY");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("truncated"), std::string::npos);
    EXPECT_FALSE(base64_decode("Zg===").ok());
    EXPECT_FALSE(base64_decode("Zg=x").ok());
    EXPECT_TRUE(base64_decode("Zm8").ok());  // unpadded 3 digits is fine
    EXPECT_FALSE(base64_decode("data:image/png,Zm9v").ok());
    r = base64_decode(std::string("Zm\x01v"));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("0x01"), std::string::npos);
}

}  // namespace
}  // namespace ggdiff
