// browser/tools/tool_test_support.h — calling the browser_* tools from a test as keel's engine calls them,
// for the browser tool suites (BrowserTools, BrowserPixels, BrowserRestore).
//
// call_tool validates the arguments against the tool's schema, resolves the call's target for the thread
// (resolve_target_for, as the gatekeeper sees it) and executes the tool with that decided target, then waits
// for its one answer (with a deadline: a tool that never answers is a test failure, not a hang).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "browser/browser_runtime.h"
#include "keel/cancellation.h"
#include "keel/error.h"
#include "keel/error_codes.h"
#include "keel/tool.h"
#include "keel/tool_registry.h"

namespace keel::browser::testing {

inline constexpr std::chrono::seconds kCallDeadline{60};

// What a call answered.
struct Outcome {
  Result<ToolResult> result = fail(codes::kInternal, "not run");
  // The text blocks, or "error <code>: <message>".
  std::string text() const;
  std::string code() const { return result ? std::string() : result.error().code(); }
  // The first image block, or null.
  const ContentBlock* image() const;
};

// The ref a snapshot gave the first line that contains `what` (`button "Buy now"`), or "" when none does.
std::string ref_of(const std::string& snapshot, const std::string& what);

// Calls `tool` for agent thread `thread_id` as the engine does (see the header comment).
Outcome call_tool(ToolRegistry& registry, const std::string& thread_id, const std::string& tool,
                  nlohmann::json params, CancellationToken cancel = {});

// Runs `op` on the runtime's thread for `thread_id` and waits for its result.
Result<ToolResult> run_browser_op(BrowserRuntime& runtime, const std::string& thread_id,
                                  CancellationToken cancel, BrowserOp op);

}  // namespace keel::browser::testing
