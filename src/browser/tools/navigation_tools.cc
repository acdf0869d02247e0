// The L1 navigation tools: navigate, back, forward, reload, wait_for.
#include <algorithm>
#include <utility>

#include "browser/action_observer.h"
#include "browser/browser_errors.h"
#include "browser/call_script.h"
#include "browser/origin_guard.h"
#include "browser/tools/tool_runs.h"
#include "browser/tools/tool_support.h"
#include "tools/builtin/tool_support.h"

namespace keel::browser::runs {
using builtin::valid_utf8;
namespace {

namespace asio = boost::asio;
using nlohmann::json;

constexpr int64_t kMaxWaitMs = 30'000;

// A navigation the browser refused or could not complete: the guard's refusal when it was the guard.
Error navigation_error(const TabState* tab, size_t blocked_before, const std::string& url,
                       const std::string& error) {
  if (tab != nullptr && tab->blocked.size() > blocked_before) {
    const BlockedNavigation& blocked = tab->blocked.back();
    return Error(codes::kBrowserNavigationRefused, "keel refused a navigation on the way to " +
                                                       valid_utf8(url) + ": " + valid_utf8(blocked.url) +
                                                       " (" + blocked.reason + ")");
  }
  return Error(codes::kBrowserNavigationFailed, "navigation to " + valid_utf8(url) + " failed: " + error);
}

// Runs a navigation command on the tab's session, then settles and reports. `command` must make the main
// frame navigate (Page.navigate, Page.navigateToHistoryEntry, Page.reload).
asio::awaitable<Result<ToolResult>> navigate_with(std::shared_ptr<BrowserThread> thread, int64_t tab_id,
                                                  std::string method, json command, std::string done,
                                                  std::string url_for_errors, CancellationToken cancel) {
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  const TabState* tab = connection->tab(tab_id);
  const std::string session_id = tab->session_id;
  const size_t blocked_before = tab->blocked.size();
  ActionObserver observer(thread, tab_id);
  CallOrBlocked stop(cancel, observer.blocked());
  CallOptions options;
  options.timeout = thread->runtime().options().navigation_timeout;
  options.cancel = stop.source.token();
  Result<json> reply = co_await connection->call(method, std::move(command), session_id, std::move(options));
  if (!reply) {
    if (cancel.is_cancelled()) co_return fail(codes::kCancelled, "the navigation was interrupted");
    if (reply.error().code() == codes::kBrowserCdpTimeout) {
      connection->client().notify("Page.stopLoading", json::object(), session_id);
      co_return fail(codes::kBrowserNavigationFailed,
                     valid_utf8(url_for_errors) + " did not load within " +
                         std::to_string(thread->runtime().options().navigation_timeout.count()) +
                         " ms; the load was stopped (browser_snapshot shows what arrived)");
    }
    if (reply.error().code() != codes::kCancelled) co_return fail(reply.error());
    // A dialog opened or the tab crashed before the command answered: the report says which.
  } else if (reply->is_object() && reply->contains("errorText") && (*reply)["errorText"].is_string() &&
             !(*reply)["errorText"].get<std::string>().empty()) {
    co_return fail(navigation_error(connection->tab(tab_id), blocked_before, url_for_errors,
                                    (*reply)["errorText"].get<std::string>()));
  }
  co_await observer.settle(cancel);
  if (cancel.is_cancelled()) co_return fail(codes::kCancelled, "the navigation was interrupted");
  ActionReport report = co_await observer.report(std::move(done));
  co_return text_result(std::move(report.text), std::move(report.details));
}

// Whether the thread's policy lets its pages go to `url` (for navigations that may not reach the network,
// such as a history entry restored from the back/forward cache).
Result<void> check_destination(BrowserThread& thread, const std::string& url) {
  Result<RequestedNavigation> navigation = requested_navigation(url);
  if (!navigation) return fail(navigation.error());
  const std::shared_ptr<const OriginPolicy>& policy = thread.runtime().options().policy;
  if (navigation->origin && policy &&
      !policy->allows_navigation(thread.id(), navigation->origin->to_string())) {
    return fail(codes::kBrowserNavigationRefused,
                "no host permission for " + navigation->origin->to_string() + " (" + valid_utf8(url) + ")");
  }
  return {};
}

asio::awaitable<Result<ToolResult>> history_step(std::shared_ptr<BrowserThread> thread, json params,
                                                 ToolTarget decided, CancellationToken cancel, int step) {
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{});
  if (!tab) co_return fail(tab.error());
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  const std::string session_id = connection->tab(*tab)->session_id;
  CallOptions options;
  options.timeout = thread->runtime().options().command_timeout;
  Result<json> history =
      co_await connection->call("Page.getNavigationHistory", json::object(), session_id, options);
  if (!history) co_return fail(history.error());
  const int64_t current = history->value("currentIndex", int64_t{-1});
  const json entries = history->value("entries", json::array());
  const int64_t wanted = current + step;
  if (current < 0 || wanted < 0 || wanted >= static_cast<int64_t>(entries.size()) ||
      !entries[wanted].is_object()) {
    co_return fail(codes::kBrowserNotActionable, std::string("tab ") + std::to_string(*tab) + " has no " +
                                                     (step < 0 ? "earlier" : "later") +
                                                     " page in its history");
  }
  const std::string url = entries[wanted].value("url", std::string());
  Result<void> allowed = check_destination(*thread, url);
  if (!allowed) co_return fail(allowed.error());
  json command = {{"entryId", entries[wanted].value("id", int64_t{0})}};
  std::string done = std::string(step < 0 ? "Went back" : "Went forward") + " to " + valid_utf8(url) + ".";
  co_return co_await navigate_with(thread, *tab, "Page.navigateToHistoryEntry", std::move(command),
                                   std::move(done), url, cancel);
}

}  // namespace

asio::awaitable<Result<ToolResult>> navigate(std::shared_ptr<BrowserThread> thread, json params,
                                             ToolTarget decided, CancellationToken cancel) {
  (void)decided;  // the decided target is the destination; the guard holds every hop to the policy
  const std::string url = string_arg(params, "url");
  Result<RequestedNavigation> navigation = requested_navigation(url);
  if (!navigation) co_return fail(navigation.error());
  int64_t tab_id = 0;
  if (int_arg(params, "tab") || thread->current() != 0) {
    Result<int64_t> tab = live_tab(*thread, params, ToolTarget{}, TabChecks{});
    if (!tab) co_return fail(tab.error());
    tab_id = *tab;
  } else {
    Result<int64_t> opened = co_await thread->ensure_tab();
    if (!opened) co_return fail(opened.error());
    tab_id = *opened;
  }
  json command = {{"url", url}};
  co_return co_await navigate_with(thread, tab_id, "Page.navigate", std::move(command),
                                   "Navigated to " + valid_utf8(url) + ".", url, cancel);
}

asio::awaitable<Result<ToolResult>> back(std::shared_ptr<BrowserThread> thread, json params,
                                         ToolTarget decided, CancellationToken cancel) {
  co_return co_await history_step(thread, std::move(params), std::move(decided), std::move(cancel), -1);
}

asio::awaitable<Result<ToolResult>> forward(std::shared_ptr<BrowserThread> thread, json params,
                                            ToolTarget decided, CancellationToken cancel) {
  co_return co_await history_step(thread, std::move(params), std::move(decided), std::move(cancel), 1);
}

asio::awaitable<Result<ToolResult>> reload(std::shared_ptr<BrowserThread> thread, json params,
                                           ToolTarget decided, CancellationToken cancel) {
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{});
  if (!tab) co_return fail(tab.error());
  const TabState* state = thread->connection()->tab(*tab);
  const std::string url = state->main_frame() != nullptr ? state->main_frame()->url : state->url;
  co_return co_await navigate_with(thread, *tab, "Page.reload", json::object(),
                                   "Reloaded " + valid_utf8(url) + ".", url, cancel);
}

asio::awaitable<Result<ToolResult>> wait_for(std::shared_ptr<BrowserThread> thread, json params,
                                             ToolTarget decided, CancellationToken cancel) {
  TabChecks checks;
  checks.modal_blocks = false;  // an open dialog ends the wait at once, reported below
  Result<int64_t> tab = live_tab(*thread, params, decided, checks);
  if (!tab) co_return fail(tab.error());
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  const TabState* state = connection->tab(*tab);
  if (state->modal) co_return text_result("Not waiting: " + modal_line(*state));
  const int64_t timeout_ms =
      std::clamp<int64_t>(int_arg(params, "timeout_ms").value_or(10'000), 0, kMaxWaitMs);
  const std::string text = string_arg(params, "text");
  const std::string gone = string_arg(params, "text_gone");
  const std::string frame_id = state->main_frame() != nullptr ? state->main_frame()->frame_id : "";
  if (text.empty() && gone.empty()) {
    // Only the load: the page's load event (or the timeout).
    ActionObserver observer(thread, *tab);
    co_await observer.settle(cancel);
    ActionReport report = co_await observer.report("Waited for the page to settle.");
    co_return text_result(std::move(report.text), std::move(report.details));
  }
  ActionObserver observer(thread, *tab);
  CallOrBlocked stop(cancel, observer.blocked());
  ScriptOptions options;
  options.timeout = std::chrono::milliseconds(timeout_ms + 2'000);
  options.cancel = stop.source.token();
  json args = {{"text", text.empty() ? gone : text}, {"gone", text.empty()}, {"timeoutMs", timeout_ms}};
  Result<json> waited =
      co_await call_script(connection, *tab, frame_id, "waitForText", std::move(args), options);
  if (cancel.is_cancelled()) co_return fail(codes::kCancelled, "the wait was interrupted");
  const TabState* now = connection->tab(*tab);
  if (now != nullptr && now->modal) co_return text_result("The wait ended: " + modal_line(*now));
  if (!waited) co_return fail(waited.error());
  const bool found = waited->value("found", false);
  const std::string what =
      text.empty() ? "\"" + valid_utf8(gone) + "\" to disappear" : "\"" + valid_utf8(text) + "\"";
  if (!found) {
    co_return text_result("Waited " + std::to_string(timeout_ms) + " ms for " + what + ": it did not happen.",
                          json{{"found", false}});
  }
  co_return text_result(
      "Done: waited " + std::to_string(waited->value("ms", int64_t{0})) + " ms for " + what + ".",
      json{{"found", true}});
}

}  // namespace keel::browser::runs
