// The L1 tab and modal tools: new, switch and close a tab; answer a dialog; choose files for a file chooser.
#include <algorithm>
#include <utility>

#include "browser/action_observer.h"
#include "browser/browser_errors.h"
#include "browser/origin_guard.h"
#include "browser/tools/tool_runs.h"
#include "browser/tools/tool_support.h"
#include "tools/builtin/tool_support.h"

namespace keel::browser::runs {
using builtin::valid_utf8;
namespace {

namespace asio = boost::asio;
using nlohmann::json;

constexpr size_t kMaxUploadFiles = 20;
constexpr std::string_view kChooseFirst =
    ": click the page's file button first (browser_click), then call browser_upload_file";

// The call's live tab and a copy of the modal of `kind` open on it (a modal does not block these tools: they
// answer it); browser.no_modal when none of that kind is open, saying what to do: `if_none` when no modal is
// open, `if_other` when one of the other kind is.
struct TabWithModal {
  int64_t tab = 0;
  ModalState modal;
};
Result<TabWithModal> tab_with_modal(BrowserThread& thread, const json& params, const ToolTarget& decided,
                                    ModalState::Kind kind, std::string_view missing, std::string_view if_none,
                                    std::string_view if_other) {
  Result<int64_t> tab = live_tab(thread, params, decided, TabChecks{.modal_blocks = false});
  if (!tab) return fail(tab.error());
  const TabState* state = thread.connection()->tab(*tab);
  if (!state->modal || state->modal->kind != kind) {
    return fail(codes::kBrowserNoModal, "no " + std::string(missing) + " is open on tab " +
                                            std::to_string(*tab) +
                                            std::string(state->modal ? if_other : if_none));
  }
  return TabWithModal{*tab, *state->modal};
}

}  // namespace

asio::awaitable<Result<ToolResult>> new_tab(std::shared_ptr<BrowserThread> thread, json params,
                                            ToolTarget decided, CancellationToken cancel) {
  (void)decided;
  const std::string url = string_arg(params, "url");
  if (!url.empty()) {
    Result<RequestedNavigation> navigation = requested_navigation(url);
    if (!navigation) co_return fail(navigation.error());
  }
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  Result<int64_t> created = co_await connection->create_tab(thread->runtime().options().command_timeout);
  if (!created) co_return fail(created.error());
  thread->adopt(*created);
  thread->set_current(*created);
  thread->runtime().publish(*thread);
  if (url.empty()) {
    co_return text_result("Opened tab " + std::to_string(*created) + " (blank); it is the current tab now.",
                          json{{"tab", *created}});
  }
  json navigate_params = {{"url", url}, {"tab", *created}};
  Result<ToolResult> loaded = co_await navigate(thread, std::move(navigate_params), ToolTarget{}, cancel);
  if (!loaded) {
    co_return fail(
        Error(loaded.error().code(), "Opened tab " + std::to_string(*created) +
                                         " (the current tab now), but: " + loaded.error().message()));
  }
  if (!loaded->content.empty()) {
    loaded->content.front().text =
        "Opened tab " + std::to_string(*created) + " (the current tab now).\n" + loaded->content.front().text;
  }
  co_return std::move(*loaded);
}

asio::awaitable<Result<ToolResult>> switch_tab(std::shared_ptr<BrowserThread> thread, json params,
                                               ToolTarget decided, CancellationToken cancel) {
  (void)cancel;
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{.modal_blocks = false});
  if (!tab) co_return fail(tab.error());
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  const TabState* state = connection->tab(*tab);
  json activate = {{"targetId", state->target_id}};
  CallOptions options;
  options.timeout = thread->runtime().options().command_timeout;
  Result<json> activated =
      co_await connection->call("Target.activateTarget", std::move(activate), "", options);
  if (!activated) co_return fail(activated.error());
  thread->set_current(*tab);
  thread->runtime().publish(*thread);
  state = connection->tab(*tab);
  std::string text = "Tab " + std::to_string(*tab) + " is the current tab";
  if (state != nullptr) {
    const FrameState* main = state->main_frame();
    text += ": " + valid_utf8(main != nullptr ? main->url : state->url);
    if (!state->title.empty()) text += " \"" + valid_utf8(state->title) + "\"";
    if (std::string modal = modal_line(*state); !modal.empty()) text += "\n" + modal;
  }
  co_return text_result(text + ". Take a snapshot to see it.", json{{"tab", *tab}});
}

asio::awaitable<Result<ToolResult>> close_tab(std::shared_ptr<BrowserThread> thread, json params,
                                              ToolTarget decided, CancellationToken cancel) {
  (void)cancel;
  // Closing dismisses what is open.
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{.modal_blocks = false});
  if (!tab) co_return fail(tab.error());
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  Result<void> closed = co_await connection->close_tab(*tab, thread->runtime().options().command_timeout);
  if (!closed) co_return fail(closed.error());
  thread->refs().invalidate_tab(*tab, "the tab was closed");
  thread->forget(*tab);
  thread->runtime().publish(*thread);
  std::string text = "Closed tab " + std::to_string(*tab) + ".";
  text += thread->current() != 0 ? " The current tab is now tab " + std::to_string(thread->current()) + "."
                                 : " This thread has no tab open now.";
  co_return text_result(std::move(text), json{{"tab", *tab}, {"current", thread->current()}});
}

asio::awaitable<Result<ToolResult>> handle_dialog(std::shared_ptr<BrowserThread> thread, json params,
                                                  ToolTarget decided, CancellationToken cancel) {
  Result<TabWithModal> open = tab_with_modal(*thread, params, decided, ModalState::Kind::kDialog, "dialog",
                                             "", " (a file chooser is: browser_upload_file answers it)");
  if (!open) co_return fail(open.error());
  const int64_t tab = open->tab;
  const ModalState modal = open->modal;
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  const bool accept = bool_arg(params, "accept", true);
  std::string prompt_text = modal.dialog_type == "prompt" ? string_arg(params, "prompt_text") : std::string();
  ActionObserver observer(thread, tab);
  Result<void> answered = co_await connection->handle_dialog(tab, accept, std::move(prompt_text),
                                                             thread->runtime().options().command_timeout);
  if (!answered) co_return fail(answered.error());
  co_await observer.settle(cancel);
  std::string done = std::string(accept ? "Accepted" : "Dismissed") + " the " + modal.dialog_type + " \"" +
                     valid_utf8(modal.message.substr(0, 200)) + "\"";
  if (modal.dialog_type == "prompt" && accept && params.contains("prompt_text")) {
    done += " with \"" + valid_utf8(string_arg(params, "prompt_text")) + "\"";
  }
  ActionReport report = co_await observer.report(done + ".");
  co_return text_result(std::move(report.text), std::move(report.details));
}

asio::awaitable<Result<ToolResult>> upload_file(std::shared_ptr<BrowserThread> thread, json params,
                                                ToolTarget decided, CancellationToken cancel) {
  Result<TabWithModal> open = tab_with_modal(*thread, params, decided, ModalState::Kind::kFileChooser,
                                             "file chooser", kChooseFirst, kChooseFirst);
  if (!open) co_return fail(open.error());
  const int64_t tab = open->tab;
  const ModalState modal = open->modal;
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  const json paths = params.value("paths", json::array());
  std::vector<std::string> files;
  std::string names;
  const std::shared_ptr<const builtin::Workspace>& workspace = thread->runtime().options().workspace;
  for (const json& path : paths) {
    if (!path.is_string()) continue;
    if (!workspace) {
      co_return fail(codes::kBrowserUploadOutsideWorkspace, "keel has no workspace folder to upload from");
    }
    Result<builtin::WorkspacePath> resolved = workspace->resolve(path.get<std::string>());
    if (!resolved) {
      co_return fail(
          codes::kBrowserUploadOutsideWorkspace,
          "cannot upload " + valid_utf8(path.get<std::string>()) + ": " + resolved.error().message());
    }
    Result<builtin::WorkspaceEntry> entry = workspace->inspect(*resolved);
    if (!entry || entry->type != builtin::WorkspaceEntry::Type::kFile) {
      co_return fail(
          codes::kBrowserUploadOutsideWorkspace,
          "cannot upload " + valid_utf8(path.get<std::string>()) + ": not a regular file in the workspace");
    }
    files.push_back(resolved->absolute.string());
    names += (names.empty() ? "" : ", ") + resolved->relative;
  }
  if (files.size() > kMaxUploadFiles) co_return fail(codes::kInvalidArgument, "at most 20 files per upload");
  if (files.size() > 1 && !modal.multiple) {
    co_return fail(codes::kBrowserNotActionable,
                   "the file chooser takes one file, not " + std::to_string(files.size()));
  }
  ActionObserver observer(thread, tab);
  Result<void> chosen =
      co_await connection->set_chooser_files(tab, files, thread->runtime().options().command_timeout);
  if (!chosen) co_return fail(chosen.error());
  co_await observer.settle(cancel);
  std::string done =
      files.empty() ? std::string("Cancelled the file chooser.") : "Chose " + names + " in the file chooser.";
  ActionReport report = co_await observer.report(std::move(done));
  co_return text_result(std::move(report.text), std::move(report.details));
}

}  // namespace keel::browser::runs
