// browser/tools/register.h — the browser_* tools (spec §4 levels L0, L1 and L2; docs/browser.md, "Tools").
//
// browser_tool_table() is the single list of the tools: name, level, effects, recovery class, target kind
// and parameter schema. register_browser_tools() registers every one against one BrowserRuntime; a
// registry that already has a tool of that name is an error and nothing after it is registered.
// Why the classes: anything that can change state on a server (navigation, a click, typing with submit, a
// dialog answer, an upload, a key press) is never-retry (spec §5: after a crash it is paused, never run
// again); local form state (select, check) and closing a tab are inspect-first; hover, scroll, switching
// tabs and waiting only move keel's view and are reads, so `ask_writes` never asks for them.
// L2 (pixels, trusted input) is the same: a screenshot reads; mouse, keyboard and drag are never-retry.
#pragma once

#include <memory>
#include <vector>

#include "browser/browser_runtime.h"
#include "browser/tools/browser_tool.h"
#include "keel/tool.h"
#include "keel/tool_registry.h"

namespace keel::browser {

struct BrowserToolEntry {
  ToolSpec spec;
  TargetKind target = TargetKind::kTab;
  BrowserToolRun run = nullptr;
};

std::vector<BrowserToolEntry> browser_tool_table();

Result<void> register_browser_tools(ToolRegistry& registry, std::shared_ptr<BrowserRuntime> runtime);

}  // namespace keel::browser
