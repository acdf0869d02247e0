// Tests for ToolRegistry and ToolRegistryGeneration (keel/tool_registry.h).
#include "keel/tool_registry.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "keel/error_codes.h"
#include "tools/tool_errors.h"

namespace keel {
namespace {

class FakeTool : public AgentTool {
 public:
  explicit FakeTool(std::string name, ToolEffects effects = ToolEffects::kRead) {
    spec_.name = std::move(name);
    spec_.label = "Fake";
    spec_.description = "A fake tool.";
    spec_.parameters = {
        {"type", "object"}, {"properties", {{"x", {{"type", "integer"}}}}}, {"additionalProperties", false}};
    spec_.effects = effects;
  }
  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext, nlohmann::json, std::function<void(Result<ToolResult>)> done) override {
    done(text_result("ok"));
  }
  ToolSpec& mutable_spec() { return spec_; }

 private:
  ToolSpec spec_;
};

TEST(ToolRegistryTest, StartsEmptyAtGenerationZero) {
  ToolRegistry registry;
  EXPECT_EQ(registry.snapshot()->number(), 0u);
  EXPECT_TRUE(registry.snapshot()->tools().empty());
}

TEST(ToolRegistryTest, RegisterFreezesTheDescriptorAndPublishesANewGeneration) {
  ToolRegistry registry;
  auto tool = std::make_shared<FakeTool>("fake", ToolEffects::kWrite);
  auto descriptor = registry.register_tool(tool);
  ASSERT_TRUE(descriptor.has_value()) << descriptor.error().to_string();
  EXPECT_EQ((*descriptor)->name, "fake");
  EXPECT_EQ((*descriptor)->recovery, ToolRecovery::kNeverRetry);

  const auto generation = registry.snapshot();
  EXPECT_EQ(generation->number(), 1u);
  const RegisteredTool* registered = generation->find("fake");
  ASSERT_NE(registered, nullptr);
  EXPECT_EQ(registered->implementation, tool);
  EXPECT_EQ(registered->descriptor, *descriptor);
  ASSERT_NE(registered->validator, nullptr);
  EXPECT_TRUE(registered->validator->validate({{"x", 1}}).has_value());
  EXPECT_FALSE(registered->validator->validate({{"x", "one"}}).has_value());
  EXPECT_EQ(generation->find("other"), nullptr);
}

TEST(ToolRegistryTest, DescriptorDoesNotFollowLaterChangesToTheToolsSpec) {
  ToolRegistry registry;
  auto tool = std::make_shared<FakeTool>("fake");
  ASSERT_TRUE(registry.register_tool(tool).has_value());
  const std::string digest = registry.snapshot()->find("fake")->descriptor->digest;
  tool->mutable_spec().effects = ToolEffects::kWrite;
  tool->mutable_spec().description = "Changed.";
  const auto& descriptor = *registry.snapshot()->find("fake")->descriptor;
  EXPECT_EQ(descriptor.effects, ToolEffects::kRead);
  EXPECT_EQ(descriptor.description, "A fake tool.");
  EXPECT_EQ(descriptor.digest, digest);
}

TEST(ToolRegistryTest, DuplicateNameIsRejectedWithBothSummaries) {
  ToolRegistry registry;
  ASSERT_TRUE(registry.register_tool(std::make_shared<FakeTool>("fake", ToolEffects::kRead)).has_value());
  auto duplicate = registry.register_tool(std::make_shared<FakeTool>("fake", ToolEffects::kWrite));
  ASSERT_FALSE(duplicate.has_value());
  EXPECT_EQ(duplicate.error().code(), codes::kToolDuplicate);
  const std::string& message = duplicate.error().message();
  EXPECT_NE(message.find("level=builtin effects=read recovery=retry-safe binding=local"), std::string::npos)
      << message;
  EXPECT_NE(message.find("level=builtin effects=write recovery=never-retry binding=local"), std::string::npos)
      << message;
  EXPECT_NE(message.find("\"fake\""), std::string::npos) << message;
  // The first registration stays, and no generation was published for the failed one.
  EXPECT_EQ(registry.snapshot()->number(), 1u);
  EXPECT_EQ(registry.snapshot()->find("fake")->descriptor->effects, ToolEffects::kRead);
}

TEST(ToolRegistryTest, ReplaceToolsChangesTheSetInOneGeneration) {
  ToolRegistry registry;
  ASSERT_TRUE(registry.register_tool(std::make_shared<FakeTool>("a")).has_value());
  ASSERT_TRUE(registry.register_tool(std::make_shared<FakeTool>("b")).has_value());
  ASSERT_TRUE(registry.register_tool(std::make_shared<FakeTool>("keep")).has_value());
  const auto before = registry.snapshot();
  auto bad = std::make_shared<FakeTool>("bad name!");
  const auto results = registry.replace_tools(
      {"a", "b", "absent"}, {std::make_shared<FakeTool>("a", ToolEffects::kWrite),
                             std::make_shared<FakeTool>("c"), std::make_shared<FakeTool>("keep"), bad});
  ASSERT_EQ(results.size(), 4u);
  EXPECT_TRUE(results[0].has_value());  // a name the same call freed
  EXPECT_TRUE(results[1].has_value());
  ASSERT_FALSE(results[2].has_value());
  EXPECT_EQ(results[2].error().code(), codes::kToolDuplicate);
  ASSERT_FALSE(results[3].has_value());
  EXPECT_EQ(results[3].error().code(), codes::kInvalidArgument);
  const auto after = registry.snapshot();
  EXPECT_EQ(after->number(), before->number() + 1);
  EXPECT_EQ(after->find("a")->descriptor->effects, ToolEffects::kWrite);
  EXPECT_EQ(after->find("b"), nullptr);
  EXPECT_NE(after->find("c"), nullptr);
  EXPECT_NE(after->find("keep"), nullptr);
  // The earlier generation is untouched.
  EXPECT_EQ(before->find("a")->descriptor->effects, ToolEffects::kRead);
  EXPECT_NE(before->find("b"), nullptr);
  // Nothing to change: no new generation.
  EXPECT_TRUE(registry.replace_tools({"absent"}, {}).empty());
  EXPECT_EQ(registry.snapshot()->number(), after->number());
}

TEST(ToolRegistryTest, InvalidSpecIsRejectedAndLeavesTheRegistryUnchanged) {
  ToolRegistry registry;
  auto bad = std::make_shared<FakeTool>("bad name");
  auto result = registry.register_tool(bad);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), codes::kInvalidArgument);
  EXPECT_EQ(registry.snapshot()->number(), 0u);
}

TEST(ToolRegistryTest, NullToolIsRejected) {
  ToolRegistry registry;
  auto result = registry.register_tool(nullptr);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), codes::kInvalidArgument);
}

TEST(ToolRegistryTest, UnregisterRemovesTheToolInANewGeneration) {
  ToolRegistry registry;
  ASSERT_TRUE(registry.register_tool(std::make_shared<FakeTool>("a")).has_value());
  ASSERT_TRUE(registry.register_tool(std::make_shared<FakeTool>("b")).has_value());
  ASSERT_TRUE(registry.unregister_tool("a").has_value());
  const auto generation = registry.snapshot();
  EXPECT_EQ(generation->number(), 3u);
  EXPECT_EQ(generation->find("a"), nullptr);
  EXPECT_NE(generation->find("b"), nullptr);
  // A name freed by unregister can be registered again (an MCP reconnect).
  EXPECT_TRUE(registry.register_tool(std::make_shared<FakeTool>("a")).has_value());
}

TEST(ToolRegistryTest, UnregisteringAnUnknownNameIsNotFound) {
  ToolRegistry registry;
  auto result = registry.unregister_tool("ghost");
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), codes::kToolNotFound);
  EXPECT_EQ(registry.snapshot()->number(), 0u);
}

TEST(ToolRegistryTest, SnapshotTakenBeforeRegisterIsUnchangedAfterwards) {
  ToolRegistry registry;
  ASSERT_TRUE(registry.register_tool(std::make_shared<FakeTool>("a")).has_value());
  const auto before = registry.snapshot();
  ASSERT_TRUE(registry.register_tool(std::make_shared<FakeTool>("b")).has_value());
  EXPECT_EQ(before->number(), 1u);
  EXPECT_EQ(before->tools().size(), 1u);
  EXPECT_EQ(before->find("b"), nullptr);
  EXPECT_EQ(registry.snapshot()->tools().size(), 2u);
}

TEST(ToolRegistryTest, SnapshotTakenBeforeUnregisterKeepsTheImplementation) {
  ToolRegistry registry;
  auto tool = std::make_shared<FakeTool>("a");
  ASSERT_TRUE(registry.register_tool(tool).has_value());
  const auto before = registry.snapshot();
  ASSERT_TRUE(registry.unregister_tool("a").has_value());
  // A replacement under the same name (an MCP reconnect) does not reach the old snapshot either.
  auto replacement = std::make_shared<FakeTool>("a", ToolEffects::kWrite);
  ASSERT_TRUE(registry.register_tool(replacement).has_value());
  const RegisteredTool* kept = before->find("a");
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->implementation, tool);
  EXPECT_EQ(kept->descriptor->effects, ToolEffects::kRead);
  EXPECT_EQ(registry.snapshot()->find("a")->implementation, replacement);
}

TEST(ToolRegistryTest, FilteredDropsRejectedToolsAndLeavesTheSourceIntact) {
  ToolRegistry registry;
  ASSERT_TRUE(registry.register_tool(std::make_shared<FakeTool>("screenshot")).has_value());
  ASSERT_TRUE(registry.register_tool(std::make_shared<FakeTool>("click")).has_value());
  const auto generation = registry.snapshot();
  const auto filtered = generation->filtered([](const ToolDescriptor& d) { return d.name != "screenshot"; });
  EXPECT_EQ(filtered->number(), generation->number());
  EXPECT_EQ(filtered->find("screenshot"), nullptr);
  ASSERT_NE(filtered->find("click"), nullptr);
  EXPECT_EQ(filtered->find("click")->implementation, generation->find("click")->implementation);
  EXPECT_NE(generation->find("screenshot"), nullptr);
}

TEST(ToolRegistryTest, EmptyGenerationHasNoTools) {
  const auto empty = ToolRegistry::empty_generation();
  ASSERT_NE(empty, nullptr);
  EXPECT_TRUE(empty->tools().empty());
  EXPECT_EQ(empty->number(), 0u);
  EXPECT_EQ(empty->find("anything"), nullptr);
}

TEST(ToolRegistryTest, ConcurrentRegistrationsEachGetTheirOwnGeneration) {
  ToolRegistry registry;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&registry, t] {
      for (int i = 0; i < 25; ++i) {
        EXPECT_TRUE(
            registry
                .register_tool(std::make_shared<FakeTool>("t" + std::to_string(t) + "_" + std::to_string(i)))
                .has_value());
        (void)registry.snapshot()->tools().size();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(registry.snapshot()->number(), 100u);
  EXPECT_EQ(registry.snapshot()->tools().size(), 100u);
}

}  // namespace
}  // namespace keel
