// probe_image_size: the size an encoded image declares, read from its header only.
#include "image/image_io.h"
#include "image/image_probe.h"
#include "test_helpers.h"

namespace ggdiff {
namespace {

TEST(ImageProbe, ReadsTheSizeOfEveryFormat) {
    const Image img = test::gradient_image(40, 24, 3);
    for (ImageFormat f : {ImageFormat::Png, ImageFormat::Jpeg, ImageFormat::WebP}) {
        SCOPED_TRACE(image_format_name(f));
        auto bytes = encode_image(img, f, {});
        ASSERT_TRUE(bytes.ok()) << bytes.status().message();
        auto size = probe_image_size(bytes->data(), bytes->size());
        ASSERT_TRUE(size.ok()) << size.status().message();
        EXPECT_EQ(size->width, 40);
        EXPECT_EQ(size->height, 24);
    }
    // JPEG with metadata segments (EXIF parameters) before its frame header.
    ImageWriteOptions with_text;
    with_text.parameters = std::string(3000, 'p');
    auto jpeg = encode_image(img, ImageFormat::Jpeg, with_text);
    ASSERT_TRUE(jpeg.ok());
    auto size = probe_image_size(jpeg->data(), jpeg->size());
    ASSERT_TRUE(size.ok()) << size.status().message();
    EXPECT_EQ(size->width, 40);
}

TEST(ImageProbe, RefusesUnknownAndTruncatedData) {
    const uint8_t gif[] = {'G', 'I', 'F', '8', '9', 'a', 0, 0, 0, 0};
    EXPECT_FALSE(probe_image_size(gif, sizeof gif).ok());
    EXPECT_FALSE(probe_image_size(nullptr, 0).ok());
    const Image img = test::gradient_image(16, 16, 3);
    for (ImageFormat f : {ImageFormat::Png, ImageFormat::Jpeg, ImageFormat::WebP}) {
        SCOPED_TRACE(image_format_name(f));
        auto bytes = encode_image(img, f, {});
        ASSERT_TRUE(bytes.ok());
        // Every prefix: a size or an error, never a read past the end (ASan/valgrind clean).
        for (size_t n = 0; n < std::min<size_t>(bytes->size(), 64); ++n) {
            auto s = probe_image_size(bytes->data(), n);
            if (s.ok()) {
                EXPECT_EQ(s->width, 16);
            }
        }
    }
}

}  // namespace
}  // namespace ggdiff
