// The L1 DOM tools: they act on a ref's element through keel's page scripts (scripts/actions.js), and on
// the focused element through the tab's own session (press_key).
#include <algorithm>
#include <utility>

#include "browser/action_observer.h"
#include "browser/browser_errors.h"
#include "browser/call_script.h"
#include "browser/input.h"
#include "browser/ref_resolver.h"
#include "browser/tools/tool_runs.h"
#include "browser/tools/tool_support.h"
#include "tools/builtin/tool_support.h"

namespace keel::browser::runs {
using builtin::valid_utf8;
namespace {

namespace asio = boost::asio;
using nlohmann::json;

// One page-script action on a resolved ref. The action itself may open a dialog (a confirm() in a click
// handler): the script's call then ends without a result and the report names the dialog. Returns the
// script's result (null when a dialog or crash cut it short).
asio::awaitable<Result<json>> run_action(std::shared_ptr<BrowserThread> thread, ResolvedRef ref,
                                         std::string fn, json args, std::string action,
                                         CancellationToken call, CancellationToken page) {
  CallOrBlocked stop(call, page);
  ScriptOptions options;
  options.timeout = thread->runtime().options().command_timeout;
  options.cancel = stop.source.token();
  options.user_gesture = true;
  args["index"] = ref.record.key.js_index;
  args["expectOrigin"] = ref.origin;
  Result<json> result =
      co_await call_script(thread->connection(), ref.record.key.tab_id, ref.record.key.frame_id,
                           std::move(fn), std::move(args), options);
  if (call.is_cancelled()) co_return fail(codes::kCancelled, "the " + action + " was interrupted");
  if (!result) {
    if (page.is_cancelled() || result.error().code() == codes::kBrowserModalOpen) co_return json();
    co_return fail(result.error());
  }
  if (!result->is_object() || !result->value("ok", false))
    co_return fail(action_failure(ref, *result, action));
  co_return *result;
}

// resolve → observe → act → settle → report, for the one-ref tools.
asio::awaitable<Result<ToolResult>> act_on_ref(std::shared_ptr<BrowserThread> thread, json params,
                                               ToolTarget decided, CancellationToken cancel, std::string fn,
                                               json args, std::string action, std::string past) {
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{});
  if (!tab) co_return fail(tab.error());
  const std::chrono::milliseconds timeout = thread->runtime().options().command_timeout;
  Result<ResolvedRef> ref =
      co_await resolve_ref(thread, string_arg(params, "ref"), *tab, decided.origin, timeout);
  if (!ref) co_return fail(ref.error());
  ActionObserver observer(thread, *tab);
  co_await observer.watch_frame(ref->record.key.frame_id);
  Result<json> done =
      co_await run_action(thread, *ref, std::move(fn), std::move(args), action, cancel, observer.blocked());
  if (!done) co_return fail(done.error());
  co_await observer.settle(cancel);
  if (cancel.is_cancelled()) co_return fail(codes::kCancelled, "interrupted after the " + action);
  std::string line = past + " " + describe_ref(ref->record);
  if (done->is_object() && done->contains("value") && (*done)["value"].is_string()) {
    line += ": now \"" + valid_utf8((*done)["value"].get<std::string>()) + "\"";
  }
  ActionReport report = co_await observer.report(line + ".");
  co_return text_result(std::move(report.text), std::move(report.details));
}

}  // namespace

asio::awaitable<Result<ToolResult>> click(std::shared_ptr<BrowserThread> thread, json params,
                                          ToolTarget decided, CancellationToken cancel) {
  co_return co_await act_on_ref(thread, std::move(params), std::move(decided), std::move(cancel), "click",
                                json::object(), "click", "Clicked");
}

asio::awaitable<Result<ToolResult>> hover(std::shared_ptr<BrowserThread> thread, json params,
                                          ToolTarget decided, CancellationToken cancel) {
  co_return co_await act_on_ref(thread, std::move(params), std::move(decided), std::move(cancel), "hover",
                                json::object(), "hover over", "Hovered over");
}

asio::awaitable<Result<ToolResult>> type(std::shared_ptr<BrowserThread> thread, json params,
                                         ToolTarget decided, CancellationToken cancel) {
  json args = {{"value", string_arg(params, "text")}, {"submit", bool_arg(params, "submit", false)}};
  const std::string past = bool_arg(params, "submit", false) ? "Typed into and submitted" : "Typed into";
  co_return co_await act_on_ref(thread, std::move(params), std::move(decided), std::move(cancel), "fill",
                                std::move(args), "type into", past);
}

asio::awaitable<Result<ToolResult>> select_option(std::shared_ptr<BrowserThread> thread, json params,
                                                  ToolTarget decided, CancellationToken cancel) {
  json values = params.value("values", json::array());
  json args = {{"values", std::move(values)}};
  co_return co_await act_on_ref(thread, std::move(params), std::move(decided), std::move(cancel),
                                "selectOption", std::move(args), "select an option of", "Selected in");
}

asio::awaitable<Result<ToolResult>> set_checked(std::shared_ptr<BrowserThread> thread, json params,
                                                ToolTarget decided, CancellationToken cancel) {
  const bool checked = bool_arg(params, "checked", true);
  json args = {{"checked", checked}};
  const std::string past = checked ? "Checked" : "Unchecked";
  co_return co_await act_on_ref(thread, std::move(params), std::move(decided), std::move(cancel),
                                "setChecked", std::move(args), "check", past);
}

asio::awaitable<Result<ToolResult>> scroll(std::shared_ptr<BrowserThread> thread, json params,
                                           ToolTarget decided, CancellationToken cancel) {
  if (!string_arg(params, "ref").empty()) {
    co_return co_await act_on_ref(thread, std::move(params), std::move(decided), std::move(cancel), "scroll",
                                  json::object(), "scroll to", "Scrolled to");
  }
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{});
  if (!tab) co_return fail(tab.error());
  const std::string direction =
      string_arg(params, "direction").empty() ? "down" : string_arg(params, "direction");
  const int64_t amount = std::clamp<int64_t>(int_arg(params, "amount").value_or(600), 1, 100'000);
  json args = {{"dx", direction == "left"    ? -amount
                      : direction == "right" ? amount
                                             : 0},
               {"dy", direction == "up"     ? -amount
                      : direction == "down" ? amount
                                            : 0}};
  const TabState* state = thread->connection()->tab(*tab);
  const std::string frame_id = state->main_frame() != nullptr ? state->main_frame()->frame_id : "";
  ScriptOptions options;
  options.timeout = thread->runtime().options().command_timeout;
  options.cancel = cancel;
  Result<json> scrolled =
      co_await call_script(thread->connection(), *tab, frame_id, "scroll", std::move(args), options);
  if (!scrolled) co_return fail(scrolled.error());
  co_return text_result("Scrolled " + direction + " by " + std::to_string(amount) +
                            " px; the page is now at x=" + std::to_string(scrolled->value("x", int64_t{0})) +
                            ", y=" + std::to_string(scrolled->value("y", int64_t{0})) +
                            ". Take a snapshot to see what is in view.",
                        json{{"x", scrolled->value("x", 0)}, {"y", scrolled->value("y", 0)}});
}

asio::awaitable<Result<ToolResult>> fill_form(std::shared_ptr<BrowserThread> thread, json params,
                                              ToolTarget decided, CancellationToken cancel) {
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{});
  if (!tab) co_return fail(tab.error());
  const std::chrono::milliseconds timeout = thread->runtime().options().command_timeout;
  const json fields = params.value("fields", json::array());
  // Resolve every ref first: a stale one fails the call before anything is typed.
  std::vector<ResolvedRef> refs;
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string ref = fields[i].is_object() ? fields[i].value("ref", std::string()) : std::string();
    Result<ResolvedRef> resolved = co_await resolve_ref(thread, ref, *tab, decided.origin, timeout);
    if (!resolved) co_return fail(resolved.error());
    refs.push_back(std::move(*resolved));
  }
  std::optional<ResolvedRef> submit;
  if (std::string submit_ref = string_arg(params, "submit_ref"); !submit_ref.empty()) {
    Result<ResolvedRef> resolved = co_await resolve_ref(thread, submit_ref, *tab, decided.origin, timeout);
    if (!resolved) co_return fail(resolved.error());
    submit = std::move(*resolved);
  }
  ActionObserver observer(thread, *tab);
  if (!refs.empty()) co_await observer.watch_frame(refs.front().record.key.frame_id);
  std::string filled;
  for (size_t i = 0; i < refs.size(); ++i) {
    const json field = fields[i];  // a copy: the loop suspends (docs/architecture.md, g++ 12)
    json args;
    std::string fn = "fill";
    const json value = field.value("value", json(""));
    if (value.is_boolean()) {
      fn = "setChecked";
      args = {{"checked", value.get<bool>()}};
    } else if (value.is_array()) {
      fn = "selectOption";
      args = {{"values", value}};
    } else {
      args = {{"value", value.is_string() ? value.get<std::string>() : value.dump()}};
    }
    const ResolvedRef ref = refs[i];
    Result<json> done =
        co_await run_action(thread, ref, fn, std::move(args), "fill", cancel, observer.blocked());
    if (!done) co_return fail(done.error());
    if (done->is_null()) break;  // a dialog opened: the report says so
    filled += (filled.empty() ? "" : ", ") + ref.record.ref;
    // A select or checkbox may turn up a select that is a combobox: tell the model what it holds now.
    if (fn == "selectOption" && done->contains("value") && (*done)["value"].is_string()) {
      filled += " = \"" + valid_utf8((*done)["value"].get<std::string>()) + "\"";
    }
  }
  std::string line = "Filled " + std::to_string(refs.size()) + " field" + (refs.size() == 1 ? "" : "s") +
                     (filled.empty() ? "" : " (" + filled + ")");
  if (submit) {
    const ResolvedRef ref = *submit;
    Result<json> clicked =
        co_await run_action(thread, ref, "click", json::object(), "click", cancel, observer.blocked());
    if (!clicked) co_return fail(clicked.error());
    line += " and clicked " + describe_ref(ref.record);
  }
  co_await observer.settle(cancel);
  if (cancel.is_cancelled()) co_return fail(codes::kCancelled, "interrupted while filling the form");
  ActionReport report = co_await observer.report(line + ".");
  co_return text_result(std::move(report.text), std::move(report.details));
}

asio::awaitable<Result<ToolResult>> press_key(std::shared_ptr<BrowserThread> thread, json params,
                                              ToolTarget decided, CancellationToken cancel) {
  Result<KeyChord> chord = parse_key_chord(string_arg(params, "key"));
  if (!chord) co_return fail(chord.error());
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{});
  if (!tab) co_return fail(tab.error());
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  const std::chrono::milliseconds timeout = thread->runtime().options().command_timeout;
  std::string target = "the focused element";
  ActionObserver observer(thread, *tab);
  if (std::string ref_name = string_arg(params, "ref"); !ref_name.empty()) {
    Result<ResolvedRef> ref = co_await resolve_ref(thread, ref_name, *tab, decided.origin, timeout);
    if (!ref) co_return fail(ref.error());
    co_await observer.watch_frame(ref->record.key.frame_id);
    Result<json> focused =
        co_await run_action(thread, *ref, "focus", json::object(), "focus", cancel, observer.blocked());
    if (!focused) co_return fail(focused.error());
    target = describe_ref(ref->record);
  } else if (const FrameState* main = connection->tab(*tab)->main_frame()) {
    co_await observer.watch_frame(main->frame_id);
  }
  const std::string session_id = connection->tab(*tab)->session_id;
  const std::vector<json> events = key_press_events(*chord);
  CallOrBlocked stop(cancel, observer.blocked());
  for (size_t i = 0; i < events.size(); ++i) {
    CallOptions options;
    options.timeout = timeout;
    options.cancel = stop.source.token();
    json event = events[i];
    Result<json> sent =
        co_await connection->call("Input.dispatchKeyEvent", std::move(event), session_id, options);
    if (cancel.is_cancelled()) co_return fail(codes::kCancelled, "the key press was interrupted");
    if (!sent) {
      if (observer.blocked().is_cancelled()) break;  // the key opened a dialog: reported below
      co_return fail(sent.error());
    }
  }
  co_await observer.settle(cancel);
  ActionReport report =
      co_await observer.report("Pressed " + string_arg(params, "key") + " on " + target + ".");
  co_return text_result(std::move(report.text), std::move(report.details));
}

}  // namespace keel::browser::runs
