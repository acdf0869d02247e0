#include "browser/tools/tool_test_support.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <regex>
#include <utility>

namespace keel::browser::testing {

using nlohmann::json;

std::string Outcome::text() const {
  if (!result) return "error " + result.error().code() + ": " + result.error().message();
  std::string all;
  for (const ContentBlock& block : result->content) all += block.text;
  return all;
}

const ContentBlock* Outcome::image() const {
  if (!result) return nullptr;
  for (const ContentBlock& block : result->content) {
    if (block.kind == ContentBlock::Kind::kImage) return &block;
  }
  return nullptr;
}

std::string ref_of(const std::string& snapshot, const std::string& what) {
  const std::regex line("^[ -]*((?:f[0-9]+)?e[0-9]+) (.*)$");
  size_t start = 0;
  while (start < snapshot.size()) {
    size_t end = snapshot.find('\n', start);
    if (end == std::string::npos) end = snapshot.size();
    const std::string text = snapshot.substr(start, end - start);
    std::smatch match;
    if (std::regex_match(text, match, line) && match[2].str().find(what) != std::string::npos) {
      return match[1].str();
    }
    start = end + 1;
  }
  return "";
}

namespace {

// Waits for the one answer a tool or op gives through `done`.
Result<ToolResult> await_answer(std::future<Result<ToolResult>>& finished, const std::string& what) {
  if (finished.wait_for(kCallDeadline) != std::future_status::ready) {
    ADD_FAILURE() << what << " did not finish within " << kCallDeadline.count() << " s";
    return fail(codes::kInternal, "no answer");
  }
  return finished.get();
}

}  // namespace

Outcome call_tool(ToolRegistry& registry, const std::string& thread_id, const std::string& tool, json params,
                  CancellationToken cancel) {
  Outcome outcome;
  const RegisteredTool* registered = registry.snapshot()->find(tool);
  EXPECT_NE(registered, nullptr) << tool;
  if (registered == nullptr) return outcome;
  if (Result<void> valid = registered->validator->validate(params); !valid) {
    outcome.result = fail(valid.error());
    return outcome;
  }
  Result<ToolTarget> target =
      registered->implementation->resolve_target_for(ToolScope{thread_id, "call"}, params);
  if (!target) {
    outcome.result = fail(target.error());
    return outcome;
  }
  ToolCallContext context;
  context.tool_call_id = "call";
  context.thread_id = thread_id;
  context.cancel = std::move(cancel);
  context.progress = [](ToolProgress) {};
  context.target = *target;
  auto done = std::make_shared<std::promise<Result<ToolResult>>>();
  std::future<Result<ToolResult>> finished = done->get_future();
  registered->implementation->execute(
      context, std::move(params), [done](Result<ToolResult> result) { done->set_value(std::move(result)); });
  outcome.result = await_answer(finished, tool);
  return outcome;
}

Result<ToolResult> run_browser_op(BrowserRuntime& runtime, const std::string& thread_id,
                                  CancellationToken cancel, BrowserOp op) {
  auto done = std::make_shared<std::promise<Result<ToolResult>>>();
  std::future<Result<ToolResult>> finished = done->get_future();
  runtime.submit(thread_id, std::move(cancel), std::move(op),
                 [done](Result<ToolResult> result) { done->set_value(std::move(result)); });
  return await_answer(finished, "the op");
}

}  // namespace keel::browser::testing
