// tools/builtin/tool_test_util.h — test helpers for the builtin tools (tests only).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "keel/tool.h"
#include "keel/tool_registry.h"

namespace keel::builtin::test {

// Runs a synchronous tool as the engine would: arguments validated against the tool's schema first, then
// execute(), which must call `done` exactly once before returning.
inline Result<ToolResult> run_tool(AgentTool& tool, const nlohmann::json& params,
                                   CancellationToken cancel = {}) {
  auto validator = compile_parameter_schema(tool.spec().parameters);
  EXPECT_TRUE(validator.has_value());
  if (!validator) return fail(validator.error());
  if (auto valid = (*validator)->validate(params); !valid) return fail(valid.error());
  int calls = 0;
  std::optional<Result<ToolResult>> outcome;
  ToolCallContext context{"call-1", "thread-1", std::move(cancel), [](ToolProgress) {}};
  tool.execute(std::move(context), params, [&](Result<ToolResult> result) {
    ++calls;
    outcome = std::move(result);
  });
  EXPECT_EQ(calls, 1) << tool.spec().name << " must call done exactly once, before execute returns";
  if (!outcome) return fail("test.no_result", "done was not called");
  return std::move(*outcome);
}

// The text of a result's content blocks.
inline std::string text_of(const ToolResult& result) {
  std::string text;
  for (const ContentBlock& block : result.content) text += block.text;
  return text;
}

inline void write_text(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << content;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace keel::builtin::test
