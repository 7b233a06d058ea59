// The Qwen Image options of the C API's schema: --llm-tokenizer, --qwen-image-layers (0 or
// more, checked when set) and the repeatable --ref-image.
#include <gtest/gtest.h>

#include "api/api_options.h"
#include "api/option_schema.h"

namespace {

TEST(QwenOptions, LayersTokenizerAndReferences) {
    ggdiff::api::ApiOptions o;
    EXPECT_EQ(o.gen.qwen_image_layers, 3);
    ASSERT_TRUE(ggdiff::api::set_option(o, "qwen-image-layers", "2").ok());
    EXPECT_EQ(o.gen.qwen_image_layers, 2);
    const ggdiff::Status bad = ggdiff::api::set_option(o, "qwen-image-layers", "-1");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.message().find("--qwen-image-layers"), std::string::npos) << bad.message();
    EXPECT_EQ(o.gen.qwen_image_layers, 2);

    ASSERT_TRUE(ggdiff::api::set_option(o, "llm-tokenizer", "/models/tokenizer").ok());
    EXPECT_EQ(o.model.llm_tokenizer, "/models/tokenizer");

    ASSERT_TRUE(ggdiff::api::set_option(o, "ref-image", "a.png").ok());
    ASSERT_TRUE(ggdiff::api::set_option(o, "r", "b.png").ok());
    EXPECT_EQ(o.ref_image_paths, (std::vector<std::string>{"a.png", "b.png"}));
    // A missing reference image is named when the request is resolved.
    const ggdiff::Status st = ggdiff::resolve_api_inputs(o);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("--ref-image a.png"), std::string::npos) << st.message();
}

}  // namespace
