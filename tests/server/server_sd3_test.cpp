// ggdiff-server with the SD3 part files of the sd3_tiny golden suite: /sdcpp/v1/capabilities
// names the family and, under model.defaults, what SD3 uses for the settings a request leaves
// out (euler, CFG 7, flow shift 3, clip skip 2).
#include "../golden/sd3_e2e.h"
#include "server_harness.h"

namespace ggdiff::server_test {
namespace {

namespace sd3 = e2e::sd3;

TEST(ServerSd3, CapabilitiesNameTheFamilyAndItsDefaults) {
    if (!sd3::prerequisites_ok()) return;
    std::vector<std::string> args = sd3::model_args();
    ServerProcess server(args, /*wait_ready=*/true, "", /*with_model=*/false);
    auto c = server.client();
    const json caps = body_json(c.Get("/sdcpp/v1/capabilities"));
    SCOPED_TRACE(caps.dump(1));
    EXPECT_EQ(caps["model"]["family"], "SD3 3.5 medium");  // the family with its variant
    EXPECT_EQ(caps["model"]["family_id"], "sd3");
    EXPECT_EQ(caps["model"]["stem"], "sd3_tiny_mmdit");
    // Requests start from "the model decides" (null) ...
    EXPECT_TRUE(caps["defaults"]["sample_params"]["sample_method"].is_null());
    EXPECT_TRUE(caps["defaults"]["sample_params"]["guidance"]["txt_cfg"].is_null());
    // ... which for SD3 is euler, CFG 7, flow shift 3, clip skip 2 at 512x512.
    const json& model = caps["model"]["defaults"];
    EXPECT_EQ(model["sample_method"], "euler");
    EXPECT_EQ(model["cfg_scale"], 7.0);
    EXPECT_EQ(model["flow_shift"], 3.0);
    EXPECT_EQ(model["clip_skip"], 2);
    EXPECT_EQ(model["width"], 512);
    EXPECT_EQ(model["height"], 512);
    EXPECT_EQ(caps["features"]["lora"], true);
}

}  // namespace
}  // namespace ggdiff::server_test
