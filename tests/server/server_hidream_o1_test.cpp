// ggdiff-server with the tiny HiDream-O1-Image file (tests/fixtures/hidream_o1_tiny.tensors):
// /sdcpp/v1/capabilities names the family and, under model.defaults, what it uses for the
// settings a request leaves out (euler, CFG 7, flow shift 3, eta 8 which also scales the
// starting noise); reference images are not offered (its edit mode is not supported yet).
#include "../golden/e2e_support.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

TEST(ServerHiDreamO1, CapabilitiesNameTheFamilyAndItsDefaults) {
    const std::string model_file = e2e::built_fixture("hidream_o1_tiny");
    ASSERT_TRUE(std::filesystem::is_regular_file(model_file))
        << "missing " << model_file << " (run through ctest: its fixture test makes it)";
    ServerProcess server(
        {"-m", model_file, "--llm-tokenizer", e2e::shared_dir() + "/data/qwen2_synthetic"},
        /*wait_ready=*/true, "", /*with_model=*/false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    SCOPED_TRACE(caps.dump(1));
    EXPECT_EQ(caps["model"]["family_id"], "hidream_o1");
    EXPECT_EQ(caps["model"]["stem"], "hidream_o1_tiny");
    const json& model = caps["model"]["defaults"];
    EXPECT_EQ(model["sample_method"], "euler");
    EXPECT_EQ(model["cfg_scale"], 7.0);
    EXPECT_EQ(model["flow_shift"], 3.0);
    EXPECT_EQ(model["eta"], 8.0);
    EXPECT_EQ(model["width"], 512);
    EXPECT_EQ(caps["features"]["ref_images"], true);  // the tiny file has a vision tower
}

}  // namespace
}  // namespace ggdiff::server_test
