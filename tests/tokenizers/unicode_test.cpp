#include "tokenizers/unicode.h"

#include <gtest/gtest.h>

namespace ggdiff {
namespace {

TEST(Unicode, Utf8) {
    EXPECT_EQ(unicode::decode_utf8("a\xC3\xA9\xE6\x9D\xB1\xF0\x9F\x90\xB1"),
              U"a\u00E9\u6771\U0001F431");
    EXPECT_EQ(unicode::encode_utf8(U"a\u00E9\u6771\U0001F431"),
              "a\xC3\xA9\xE6\x9D\xB1\xF0\x9F\x90\xB1");
    // Invalid: stray continuation, truncated sequence, overlong form, surrogate.
    EXPECT_EQ(unicode::decode_utf8("\x80"), U"\uFFFD");
    EXPECT_EQ(unicode::decode_utf8("\xE6\x9D"), U"\uFFFD\uFFFD");
    EXPECT_EQ(unicode::decode_utf8("\xC0\xAF"), U"\uFFFD\uFFFD");
    EXPECT_EQ(unicode::decode_utf8("\xED\xA0\x80"), U"\uFFFD\uFFFD\uFFFD");
}

TEST(Unicode, Classes) {
    for (char32_t c :
         {U'a', U'Z', U'\u00E9', U'\u0416', U'\u6771', U'\u30BF', U'\u05D0', U'\u0628'}) {
        EXPECT_TRUE(unicode::is_letter(c)) << static_cast<unsigned>(c);
    }
    for (char32_t c : {U'0', U'\u00BD', U'\u00B2', U'\u0663', U'\u2167'}) {
        EXPECT_TRUE(unicode::is_number(c)) << static_cast<unsigned>(c);
        EXPECT_FALSE(unicode::is_letter(c)) << static_cast<unsigned>(c);
    }
    for (char32_t c : {U' ', U'\t', U'\n', U'\u00A0', U'\u3000', U'\u2028'}) {
        EXPECT_TRUE(unicode::is_space(c)) << static_cast<unsigned>(c);
    }
    for (char32_t c : {U'!', U',', U'\'', U'\u0301', U'\U0001F431', U'\u3002'}) {
        EXPECT_FALSE(unicode::is_letter(c) || unicode::is_number(c) || unicode::is_space(c))
            << static_cast<unsigned>(c);
    }
}

TEST(Unicode, Lower) {
    EXPECT_EQ(unicode::to_lower(U"ABC xyz \u00C0\u00DE \u0391\u03A9 \u0416\u0401 \u0100\u0178"),
              U"abc xyz \u00E0\u00FE \u03B1\u03C9 \u0436\u0451 \u0101\u00FF");
    EXPECT_EQ(unicode::to_lower(U"\u0130"), U"i\u0307");
    EXPECT_EQ(unicode::to_lower(U"\u00DF\u6771"), U"\u00DF\u6771");
}

}  // namespace
}  // namespace ggdiff
