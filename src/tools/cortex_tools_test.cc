#include "tools/cortex_tools.h"

#include <gtest/gtest.h>

#include "testing/doc_tables.h"

namespace cortex {
namespace {

// tools/list shows kCortexTools, in its order, and docs/mcp.md's table of tools is the same.
TEST(CortexToolsTest, TheRegistryAndTheDocsFollowTheTable) {
  EngineConfig config;
  ToolRegistry registry;
  ASSERT_TRUE(RegisterCortexTools(registry, config).ok());
  std::vector<std::string> want, listed;
  for (const CortexTool& t : kCortexTools) want.emplace_back(t.name);
  for (const nlohmann::json& t : registry.ListJson()) listed.push_back(t["name"]);
  EXPECT_EQ(listed, want);
  EXPECT_EQ(DocTableNames("mcp.md", "## Tools"), want);
}

}  // namespace
}  // namespace cortex
