// browser/tools/browser_tool.h — what every browser_* tool shares: how its target is resolved for the
// gatekeeper, and how a call reaches the browser's thread.
//
//   - resolve_target_for() reads the thread's published view (BrowserRuntime::view, never the browser) and
//     gives {origin, tabId, frameId} by the tool's TargetKind: the tab's main frame (kTab), the frame of the
//     `ref` argument (kRef; an unknown, stale or other-tab ref is its coded error, so a call on a bad ref is
//     answered before anything runs), kRef's answer when the call names a `ref` (or a drag's `from_ref`) and
//     kTab's otherwise (kRefOrTab: the L2 tools, so an action at a ref in a cross-origin frame is decided
//     for that frame's origin), the destination of the `url` argument (kUrl: refused schemes and URLs
//     without an origin are browser.navigation_refused here, before any approval), or nothing (kNone).
//   - execute() submits the call to the runtime (ops of one thread run in order) and passes the decided
//     target on, so the op can refuse a page that moved to another origin since (browser.target_changed).
//   - Results are untrusted with provenance `page` (ToolSpec defaults for L0-L2).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "browser/browser_runtime.h"
#include "keel/tool.h"

namespace keel::browser {

enum class TargetKind { kNone, kTab, kRef, kRefOrTab, kUrl };

// One call on the browser's thread. Parameters by value (coroutine).
using BrowserToolRun = boost::asio::awaitable<Result<ToolResult>> (*)(std::shared_ptr<BrowserThread> thread,
                                                                      nlohmann::json params,
                                                                      ToolTarget decided,
                                                                      CancellationToken cancel);

class BrowserTool final : public AgentTool {
 public:
  BrowserTool(std::shared_ptr<BrowserRuntime> runtime, ToolSpec spec, TargetKind target, BrowserToolRun run,
              std::optional<std::chrono::milliseconds> time_budget = std::nullopt);

  const ToolSpec& spec() const override { return spec_; }
  Result<ToolTarget> resolve_target_for(const ToolScope& scope, const nlohmann::json& params) const override;
  std::optional<std::chrono::milliseconds> time_budget(const nlohmann::json& params) const override;
  void execute(ToolCallContext context, nlohmann::json params,
               std::function<void(Result<ToolResult>)> done) override;
  CallPreview preview(const nlohmann::json& params, const ToolTarget& target) const override;

 private:
  std::shared_ptr<BrowserRuntime> runtime_;
  ToolSpec spec_;
  TargetKind target_;
  BrowserToolRun run_;
  std::optional<std::chrono::milliseconds> time_budget_;
};

}  // namespace keel::browser
