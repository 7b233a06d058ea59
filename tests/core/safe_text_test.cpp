// Escaping for messages and name validation.
#include <gtest/gtest.h>

#include "core/checked_math.h"
#include "core/safe_text.h"

namespace ggdiff {
namespace {

TEST(SafeText, EscapesControlBytesAndInvalidUtf8) {
    EXPECT_EQ(escape_text("plain text, üñí"), "plain text, üñí");
    EXPECT_EQ(escape_text(std::string("a\0b\n\t\r\x1b[0m\x7f", 11)),
              "a\\x00b\\n\\t\\r\\x1b[0m\\x7f");
    EXPECT_EQ(escape_text("\xc2\x9b"
                          "31m"),
              "\\u009b31m");  // C1 CSI
    EXPECT_EQ(escape_text("caf\xe9!"), "caf\\xe9!");
    EXPECT_EQ(escape_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
    EXPECT_EQ(escape_text("abcdef", 3), "abc...");
    EXPECT_EQ(escape_log_text("two\nlines\x1b"), "two\nlines\\x1b");
    EXPECT_EQ(quote_name("x\ny"), "'x\\ny'");
    EXPECT_TRUE(utf8_valid("üñí 日本"));
    EXPECT_FALSE(utf8_valid("\xc0\x80"));  // overlong NUL
    EXPECT_TRUE(check_name("model.diffusion_model.out.0.weight", "tensor name", 100).ok());
    EXPECT_FALSE(check_name("", "tensor name", 100).ok());
    EXPECT_FALSE(check_name(std::string(101, 'a'), "tensor name", 100).ok());
    EXPECT_FALSE(check_name("a\x01", "tensor name", 100).ok());
    EXPECT_FALSE(check_name("\xff", "tensor name", 100).ok());
}

TEST(CheckedMath, NumelAndProducts) {
    int64_t n = -1;
    EXPECT_TRUE(checked_numel({}, &n));
    EXPECT_EQ(n, 1);
    EXPECT_TRUE(checked_numel({1ll << 48, 1ll << 15, 0}, &n));
    EXPECT_EQ(n, 0);
    EXPECT_FALSE(checked_numel({1ll << 48, 1ll << 15}, &n));
    EXPECT_FALSE(checked_numel({4, -1}, &n));
    EXPECT_TRUE(checked_numel({3, 4, 5}, &n));
    EXPECT_EQ(n, 60);
    uint64_t u = 0;
    EXPECT_FALSE(checked_mul(1ull << 40, 1ull << 30, &u));
    EXPECT_FALSE(checked_add(~0ull, 1, &u));
    EXPECT_TRUE(checked_add(2, 3, &u));
    EXPECT_EQ(u, 5u);
}

}  // namespace
}  // namespace ggdiff
