// The L0 tools: they read the page and never change it.
#include <algorithm>
#include <utility>

#include "browser/browser_errors.h"
#include "browser/call_script.h"
#include "browser/page_snapshot.h"
#include "browser/tools/tool_runs.h"
#include "browser/tools/tool_support.h"
#include "tools/builtin/tool_support.h"

namespace keel::browser::runs {
using builtin::valid_utf8;
namespace {

namespace asio = boost::asio;
using nlohmann::json;

constexpr size_t kMaxSnapshotChars = 200'000;
constexpr int64_t kMaxLogEntries = 200;

std::string main_frame_of(BrowserThread& thread, int64_t tab_id) {
  const TabState* tab = thread.connection()->tab(tab_id);
  const FrameState* main = tab == nullptr ? nullptr : tab->main_frame();
  return main == nullptr ? std::string() : main->frame_id;
}

}  // namespace

asio::awaitable<Result<ToolResult>> snapshot(std::shared_ptr<BrowserThread> thread, json params,
                                             ToolTarget decided, CancellationToken cancel) {
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{});
  if (!tab) co_return fail(tab.error());
  SnapshotRequest request;
  request.tab_id = *tab;
  request.full = string_arg(params, "mode") == "full";
  const int64_t max_chars =
      int_arg(params, "max_chars")
          .value_or(static_cast<int64_t>(thread->runtime().options().snapshot_max_chars));
  request.max_chars = static_cast<size_t>(std::clamp<int64_t>(max_chars, 1'000, kMaxSnapshotChars));
  if (std::string ref = string_arg(params, "ref"); !ref.empty()) request.scope.ref = ref;
  if (std::optional<int64_t> depth = int_arg(params, "depth")) request.scope.depth = static_cast<int>(*depth);
  if (std::string find = string_arg(params, "find"); !find.empty()) request.scope.find = find;
  Result<PageSnapshot> taken = co_await take_snapshot(thread, std::move(request), cancel);
  if (!taken) co_return fail(taken.error());
  co_return text_result(std::move(taken->text), std::move(taken->details));
}

asio::awaitable<Result<ToolResult>> find_text(std::shared_ptr<BrowserThread> thread, json params,
                                              ToolTarget decided, CancellationToken cancel) {
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{});
  if (!tab) co_return fail(tab.error());
  const std::string text = string_arg(params, "text");
  const int64_t max_results = std::clamp<int64_t>(int_arg(params, "max_results").value_or(20), 1, 100);
  // Every frame of the tab, main first (the text a person sees includes its iframes).
  std::vector<std::string> frames;
  const TabState* state = thread->connection()->tab(*tab);
  if (const FrameState* main = state->main_frame()) frames.push_back(main->frame_id);
  for (const auto& [id, frame] : state->frames) {
    if (!frame.parent_frame_id.empty()) frames.push_back(id);
  }
  std::string out;
  int64_t total = 0;
  json details = json::array();
  for (size_t f = 0; f < frames.size(); ++f) {
    const std::string frame_id = frames[f];
    ScriptOptions options;
    options.timeout = thread->runtime().options().command_timeout;
    options.cancel = cancel;
    json args = {{"query", text}, {"maxMatches", max_results}};
    Result<json> found =
        co_await call_script(thread->connection(), *tab, frame_id, "findText", std::move(args), options);
    if (!found) {
      if (f == 0) co_return fail(found.error());
      continue;  // a broken iframe does not hide the rest
    }
    const int64_t count = found->value("total", int64_t{0});
    total += count;
    const json matches = found->value("matches", json::array());
    for (const json& match : matches) {
      if (!match.is_string()) continue;
      out += "- " + std::string(f == 0 ? "" : "(frame) ") + valid_utf8(match.get<std::string>()) + "\n";
    }
    details.push_back({{"frame", frame_id}, {"total", count}});
  }
  if (total == 0)
    co_return text_result(
        "No match for \"" + valid_utf8(text) + "\" in the visible text of tab " + std::to_string(*tab) + ".",
        json{{"frames", details}});
  co_return text_result(std::to_string(total) + " match" + (total == 1 ? "" : "es") + " for \"" +
                            valid_utf8(text) + "\" (browser_snapshot{find} shows their elements):\n" + out,
                        json{{"frames", details}});
}

asio::awaitable<Result<ToolResult>> read_text(std::shared_ptr<BrowserThread> thread, json params,
                                              ToolTarget decided, CancellationToken cancel) {
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{});
  if (!tab) co_return fail(tab.error());
  const std::string frame_id = main_frame_of(*thread, *tab);
  ScriptOptions options;
  options.timeout = thread->runtime().options().command_timeout;
  options.cancel = cancel;
  json args = {{"offset", std::max<int64_t>(0, int_arg(params, "offset").value_or(0))},
               {"maxChars", std::clamp<int64_t>(int_arg(params, "max_chars").value_or(8'000), 100, 50'000)}};
  Result<json> page =
      co_await call_script(thread->connection(), *tab, frame_id, "readText", std::move(args), options);
  if (!page) co_return fail(page.error());
  std::string text = valid_utf8(page->value("text", std::string()));
  const json next = page->value("nextOffset", json());
  const int64_t total = page->value("total", int64_t{0});
  if (next.is_number_integer()) {
    text += "\n… (" + std::to_string(total - next.get<int64_t>()) +
            " more characters: browser_read_text{offset: " + std::to_string(next.get<int64_t>()) + "})";
  }
  co_return text_result(std::move(text), json{{"total", total}, {"offset", page->value("offset", 0)}});
}

asio::awaitable<Result<ToolResult>> list_tabs(std::shared_ptr<BrowserThread> thread, json params,
                                              ToolTarget decided, CancellationToken cancel) {
  (void)params;
  (void)decided;
  (void)cancel;
  std::string out;
  json details = json::array();
  for (int64_t id : thread->tabs()) {
    const TabState* tab = thread->connection()->tab(id);
    if (tab == nullptr) continue;
    const FrameState* main = tab->main_frame();
    const std::string url = valid_utf8(main != nullptr ? main->url : tab->url);
    out += "tab " + std::to_string(id) + (id == thread->current() ? " (current)" : "") + " " + url;
    if (!tab->title.empty()) out += " \"" + valid_utf8(tab->title) + "\"";
    if (tab->crashed) out += " [crashed]";
    if (tab->modal) out += " [a dialog or file chooser is open]";
    out += "\n";
    details.push_back(
        {{"tab", id}, {"url", url}, {"title", valid_utf8(tab->title)}, {"current", id == thread->current()}});
  }
  if (out.empty()) out = "No tabs yet: browser_navigate or browser_new_tab opens one.\n";
  co_return text_result(std::move(out), json{{"tabs", std::move(details)}});
}

asio::awaitable<Result<ToolResult>> console(std::shared_ptr<BrowserThread> thread, json params,
                                            ToolTarget decided, CancellationToken cancel) {
  (void)cancel;
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{.modal_blocks = false});
  if (!tab) co_return fail(tab.error());
  const std::string level = string_arg(params, "level");
  const int64_t since = int_arg(params, "since").value_or(0);
  const TabState* state = thread->connection()->tab(*tab);
  std::vector<const ConsoleEntry*> shown;
  for (const ConsoleEntry& entry : state->console) {
    if (entry.seq <= since || (!level.empty() && entry.level != level)) continue;
    shown.push_back(&entry);
  }
  const size_t skip = shown.size() > static_cast<size_t>(kMaxLogEntries) ? shown.size() - kMaxLogEntries : 0;
  std::string out;
  for (size_t i = skip; i < shown.size(); ++i) {
    out += "#" + std::to_string(shown[i]->seq) + " " + shown[i]->level + ": " + valid_utf8(shown[i]->text) +
           "\n";
  }
  if (skip > 0) out = "(" + std::to_string(skip) + " earlier entries left out)\n" + out;
  if (out.empty())
    out = "No console messages" + std::string(since > 0 ? " since #" + std::to_string(since) : "") + ".\n";
  co_return text_result(std::move(out), json{{"lastSeq", state->console_seq}});
}

asio::awaitable<Result<ToolResult>> network(std::shared_ptr<BrowserThread> thread, json params,
                                            ToolTarget decided, CancellationToken cancel) {
  (void)cancel;
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{.modal_blocks = false});
  if (!tab) co_return fail(tab.error());
  const bool failed_only = bool_arg(params, "failed_only", false);
  const std::string filter = string_arg(params, "filter");
  const TabState* state = thread->connection()->tab(*tab);
  std::vector<std::string> lines;
  for (const NetworkEntry& entry : state->network) {
    const bool failed = !entry.failure.empty() || entry.status >= 400;
    if (failed_only && !failed) continue;
    if (!filter.empty() && entry.url.find(filter) == std::string::npos) continue;
    std::string line = entry.method + " " + valid_utf8(entry.url) + " " + entry.resource_type;
    if (entry.status != 0) line += " " + std::to_string(entry.status);
    if (!entry.failure.empty()) line += " failed: " + valid_utf8(entry.failure);
    if (!entry.finished && entry.failure.empty()) line += " (pending)";
    lines.push_back(std::move(line));
  }
  const size_t skip = lines.size() > static_cast<size_t>(kMaxLogEntries) ? lines.size() - kMaxLogEntries : 0;
  std::string out;
  if (skip > 0) out = "(" + std::to_string(skip) + " earlier requests left out)\n";
  for (size_t i = skip; i < lines.size(); ++i) out += lines[i] + "\n";
  if (lines.empty()) out = failed_only ? "No failed requests.\n" : "No requests recorded.\n";
  co_return text_result(std::move(out), json{{"count", lines.size()}});
}

}  // namespace keel::browser::runs
