#include "browser/tools/browser_tool.h"

#include <boost/asio/co_spawn.hpp>
#include <utility>

#include "browser/browser_errors.h"
#include "browser/origin_guard.h"
#include "browser/ref_table.h"

namespace keel::browser {
namespace {

using nlohmann::json;

std::optional<int64_t> tab_argument(const json& params) {
  if (!params.is_object()) return std::nullopt;
  auto it = params.find("tab");
  if (it == params.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::string string_argument(const json& params, const char* key) {
  if (!params.is_object()) return {};
  auto it = params.find(key);
  return it != params.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The tab's main frame: its origin (none for a blank page) and frame 0.
ToolTarget tab_target(const ThreadView& view, int64_t tab_id) {
  ToolTarget target;
  auto tab = view.tabs.find(tab_id);
  if (tab == view.tabs.end()) return target;  // no tab yet: the op says so
  target.tab_id = tab_id;
  if (!tab->second.origin.empty()) target.origin = tab->second.origin;
  target.frame_id = 0;
  return target;
}

// The frame of a ref (an unknown, stale or other-tab ref is its coded error).
Result<ToolTarget> ref_target(BrowserThread& thread, const ThreadView& view, const std::string& ref,
                              int64_t tab_id) {
  Result<RefRecord> record = thread.refs().find(ref, tab_id);
  if (!record) return fail(record.error());
  ToolTarget target;
  target.tab_id = record->key.tab_id;
  target.frame_id = record->key.frame_ordinal;
  auto tab = view.tabs.find(record->key.tab_id);
  if (tab != view.tabs.end()) {
    auto frame = tab->second.frame_origins.find(record->key.frame_id);
    if (frame != tab->second.frame_origins.end() && !frame->second.empty() && frame->second != "null") {
      target.origin = frame->second;
    }
  }
  return target;
}

}  // namespace

BrowserTool::BrowserTool(std::shared_ptr<BrowserRuntime> runtime, ToolSpec spec, TargetKind target,
                         BrowserToolRun run, std::optional<std::chrono::milliseconds> time_budget)
    : runtime_(std::move(runtime)),
      spec_(std::move(spec)),
      target_(target),
      run_(run),
      time_budget_(time_budget) {}

Result<ToolTarget> BrowserTool::resolve_target_for(const ToolScope& scope, const json& params) const {
  const ThreadView view = runtime_->view(scope.thread_id);
  const int64_t tab_id = tab_argument(params).value_or(view.current_tab);
  ToolTarget target;
  switch (target_) {
    case TargetKind::kNone:
      return target;
    case TargetKind::kUrl: {
      Result<RequestedNavigation> navigation = requested_navigation(string_argument(params, "url"));
      if (!navigation) return fail(navigation.error());
      if (navigation->origin) target.origin = navigation->origin->to_string();
      if (tab_id != 0) target.tab_id = tab_id;
      return target;
    }
    case TargetKind::kTab:
      return tab_target(view, tab_id);
    case TargetKind::kRef: {
      // browser_fill_form names its refs in `fields`: the first one decides (they are one form's fields).
      std::string ref = string_argument(params, "ref");
      if (ref.empty() && params.contains("fields") && params["fields"].is_array() &&
          !params["fields"].empty()) {
        ref = string_argument(params["fields"][0], "ref");
      }
      return ref_target(*runtime_->thread_state(scope.thread_id), view, ref, tab_id);
    }
    case TargetKind::kRefOrTab: {
      // A drag is decided for where it starts (its destination is checked against the same origin).
      std::string ref = string_argument(params, "ref");
      if (ref.empty()) ref = string_argument(params, "from_ref");
      if (ref.empty()) return tab_target(view, tab_id);
      return ref_target(*runtime_->thread_state(scope.thread_id), view, ref, tab_id);
    }
  }
  return target;
}

std::optional<std::chrono::milliseconds> BrowserTool::time_budget(const json& params) const {
  if (spec_.name == "browser_wait_for" && params.is_object()) {
    const int64_t timeout = params.value("timeout_ms", int64_t{10'000});
    return std::chrono::milliseconds(timeout) + std::chrono::seconds(5);
  }
  return time_budget_;
}

void BrowserTool::execute(ToolCallContext context, json params,
                          std::function<void(Result<ToolResult>)> done) {
  BrowserToolRun run = run_;
  ToolTarget decided = context.target;
  BrowserOp op = [run, params = std::move(params), decided](std::shared_ptr<BrowserThread> thread,
                                                            CancellationToken cancel) {
    return run(std::move(thread), params, decided, std::move(cancel));
  };
  runtime_->submit(context.thread_id, context.cancel, std::move(op), std::move(done));
}

CallPreview BrowserTool::preview(const json& params, const ToolTarget& target) const {
  CallPreview preview = default_call_preview(params, target);
  preview.action = spec_.label;
  std::string where;
  if (target.tab_id) where += "tab " + std::to_string(*target.tab_id);
  if (target.origin) where += (where.empty() ? "" : " · ") + *target.origin;
  if (target.frame_id && *target.frame_id != 0) where += " (frame " + std::to_string(*target.frame_id) + ")";
  if (!where.empty()) preview.target = where;
  return preview;
}

}  // namespace keel::browser
