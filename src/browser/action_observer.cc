#include "browser/action_observer.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>

#include "browser/browser_errors.h"
#include "browser/call_script.h"
#include "browser/snapshot.h"
#include "tools/builtin/tool_support.h"

namespace keel::browser {
using builtin::valid_utf8;
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxReportedNames = 8;
constexpr std::chrono::milliseconds kObserverCallTimeout{2'000};

std::string text_of(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string quoted(std::string_view text, size_t max_bytes) {
  std::string clean = valid_utf8(text.substr(0, std::min(text.size(), max_bytes)));
  if (text.size() > max_bytes) clean += "…";
  return "\"" + clean + "\"";
}

}  // namespace

struct ActionObserver::State {
  explicit State(const asio::any_io_executor& ex) : wake(ex) {}
  asio::steady_timer wake;
  std::string target_id;
  std::string main_frame_id;
  bool navigation_started = false;
  bool navigation_done = false;
  std::string committed_loader;
  std::set<std::string> requests;    // started since the action, not finished
  std::optional<std::string> ended;  // why settle() must return at once
  Clock::time_point last_event = Clock::now();
  std::vector<std::string> opened_targets;
  // Baseline at construction.
  std::set<int64_t> tabs_before;
  int64_t navigations_before = 0;
  int64_t console_before = 0;
  size_t downloads_before = 0;
  size_t blocked_before = 0;
  // The frame whose DOM changes are recorded.
  std::string watched_frame;
  void poke() { wake.cancel(); }
};

ActionObserver::ActionObserver(std::shared_ptr<BrowserThread> thread, int64_t tab_id)
    : thread_(std::move(thread)), connection_(thread_->connection()), tab_id_(tab_id) {
  state_ = std::make_shared<State>(connection_->client().executor());
  if (const TabState* tab = connection_->tab(tab_id)) {
    state_->target_id = tab->target_id;
    if (const FrameState* main = tab->main_frame()) state_->main_frame_id = main->frame_id;
    state_->navigations_before = tab->navigations;
    state_->console_before = tab->console_seq;
    state_->downloads_before = tab->downloads.size();
    state_->blocked_before = tab->blocked.size();
  }
  for (int64_t id : connection_->tab_ids()) state_->tabs_before.insert(id);
  std::weak_ptr<State> weak = state_;
  std::weak_ptr<BrowserConnection> connection = connection_;
  const int64_t watched_tab = tab_id;
  CancellationSource blocked = blocked_;
  events_ = connection_->client().listen([weak, connection, watched_tab,
                                          blocked](const CdpEvent& event) mutable {
    std::shared_ptr<State> state = weak.lock();
    std::shared_ptr<BrowserConnection> live = connection.lock();
    if (!state || !live) return;
    const TabState* tab = live->tab(watched_tab);
    if (event.method == "Target.targetCrashed" || event.method == "Target.detachedFromTarget" ||
        event.method == "Target.targetDestroyed") {
      if (text_of(event.params, "targetId") == state->target_id) {
        state->ended = event.method == "Target.targetCrashed" ? "the tab crashed" : "the tab was closed";
        blocked.cancel(*state->ended);
        state->poke();
      }
      return;
    }
    if (event.method == "Target.targetCreated" || event.method == "Target.attachedToTarget") {
      const json& info = event.params.is_object() ? event.params.value("targetInfo", json::object()) : json();
      if (text_of(info, "openerId") == state->target_id) {
        state->opened_targets.push_back(text_of(info, "targetId"));
        state->last_event = Clock::now();
        state->poke();
      }
      return;
    }
    if (tab == nullptr) {
      if (!state->opened_targets.empty() && event.method == "Page.frameNavigated") state->poke();
      return;
    }
    bool ours = event.session_id == tab->session_id;
    for (const auto& [id, frame] : tab->frames) ours = ours || frame.session_id == event.session_id;
    if (!ours) {
      // Another tab's commit may be a popup this action opened: settle() re-checks.
      if (!state->opened_targets.empty() && event.method == "Page.frameNavigated") state->poke();
      return;
    }
    const std::string frame_id = text_of(event.params, "frameId");
    const std::string& method = event.method;
    if (method == "Page.javascriptDialogOpening" || method == "Page.fileChooserOpened" ||
        method == "Inspector.targetCrashed") {
      state->ended = method == "Page.fileChooserOpened"    ? "a file chooser opened"
                     : method == "Inspector.targetCrashed" ? "the tab crashed"
                                                           : "a dialog opened";
      blocked.cancel(*state->ended);
    } else if ((method == "Page.frameRequestedNavigation" || method == "Page.frameStartedNavigating" ||
                method == "Page.frameStartedLoading") &&
               frame_id == state->main_frame_id) {
      state->navigation_started = true;
      state->navigation_done = false;
    } else if (method == "Page.frameNavigated") {
      const json& frame = event.params.is_object() ? event.params.value("frame", json::object()) : json();
      if (text_of(frame, "id") == state->main_frame_id && text_of(frame, "parentId").empty()) {
        state->navigation_started = true;
        state->committed_loader = text_of(frame, "loaderId");
      }
    } else if (method == "Page.lifecycleEvent") {
      if (frame_id == state->main_frame_id && text_of(event.params, "name") == "DOMContentLoaded" &&
          (state->committed_loader.empty() || text_of(event.params, "loaderId") == state->committed_loader)) {
        state->navigation_done = true;
      }
    } else if (method == "Page.frameStoppedLoading" && frame_id == state->main_frame_id) {
      state->navigation_done = true;
    } else if (method == "Page.navigatedWithinDocument") {
      // Same document: nothing more will load.
    } else if (method == "Network.requestWillBeSent") {
      // The main document and the page's own XHR and fetch calls: what an action's outcome depends on. An
      // iframe's document is left out (an out-of-process frame's load finishes in another session).
      const std::string type = text_of(event.params, "type");
      if ((type == "Document" && frame_id == state->main_frame_id) || type == "XHR" || type == "Fetch") {
        state->requests.insert(text_of(event.params, "requestId"));
      }
    } else if (method == "Network.loadingFinished" || method == "Network.loadingFailed") {
      state->requests.erase(text_of(event.params, "requestId"));
    } else if (!method.starts_with("Browser.download") && !method.starts_with("Runtime.exceptionThrown")) {
      return;  // not something an action causes and the report waits for
    }
    state->last_event = Clock::now();
    state->poke();
  });
}

ActionObserver::~ActionObserver() = default;

asio::awaitable<void> ActionObserver::watch_frame(std::string frame_id) {
  ScriptOptions options;
  options.timeout = kObserverCallTimeout;
  Result<json> started =
      co_await call_script(connection_, tab_id_, frame_id, "observeStart", json::object(), options);
  if (started) state_->watched_frame = frame_id;
}

asio::awaitable<void> ActionObserver::settle(CancellationToken cancel) {
  std::shared_ptr<State> state = state_;
  const RuntimeOptions& options = thread_->runtime().options();
  const Clock::time_point started = Clock::now();
  state->last_event = started;
  asio::any_io_executor ex = connection_->client().executor();
  std::weak_ptr<State> weak = state;
  CancellationRegistration on_cancel = cancel.on_cancel([weak, ex] {
    asio::post(ex, [weak] {
      if (auto locked = weak.lock()) locked->poke();
    });
  });
  // A tab the action opened counts as loading until its first document committed (a popup's page is part
  // of what the click did).
  auto popup_loading = [this, state] {
    for (const std::string& target_id : state->opened_targets) {
      bool committed = false;
      for (int64_t id : connection_->tab_ids()) {
        const TabState* tab = connection_->tab(id);
        if (tab == nullptr || tab->target_id != target_id) continue;
        const FrameState* main = tab->main_frame();
        committed = main != nullptr && !main->url.empty() && main->url != "about:blank";
      }
      if (!committed) return true;
    }
    return false;
  };
  for (;;) {
    if (cancel.is_cancelled() || state->ended || connection_->exited()) break;
    const Clock::time_point now = Clock::now();
    Clock::time_point until;
    if (state->navigation_started && !state->navigation_done && now < started + options.navigation_timeout) {
      until = started + options.navigation_timeout;
    } else if ((!state->requests.empty() || popup_loading()) && now < started + options.settle_requests) {
      until = started + options.settle_requests;
    } else if (now < state->last_event + options.settle_quiet) {
      until = state->last_event + options.settle_quiet;
    } else {
      break;
    }
    state->wake.expires_at(until);
    boost::system::error_code ignored;
    co_await state->wake.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
}

asio::awaitable<ActionReport> ActionObserver::report(std::string done) {
  std::shared_ptr<State> state = state_;
  ActionReport report;
  json details = {{"kind", "browser.action"}, {"tab", tab_id_}};
  std::vector<std::string> lines = {std::move(done)};

  // What changed in the watched frame (when the page did not navigate away from it).
  const TabState* tab = connection_->tab(tab_id_);
  report.navigated = tab != nullptr && tab->navigations != state->navigations_before;
  report.navigated = report.navigated || !state->committed_loader.empty();
  if (!state->watched_frame.empty() && !report.navigated && tab != nullptr) {
    const std::string frame_id = state->watched_frame;
    const bool is_main = frame_id == state->main_frame_id;
    const int64_t ordinal = thread_->refs().frame_ordinal(tab_id_, frame_id, is_main);
    ScriptOptions options;
    options.timeout = kObserverCallTimeout;
    json args = {{"nextIndex", thread_->refs().next_index(ordinal)}};
    Result<json> taken =
        co_await call_script(connection_, tab_id_, frame_id, "observeTake", std::move(args), options);
    tab = connection_->tab(tab_id_);
    const FrameState* frame = tab == nullptr ? nullptr : tab->frame(frame_id);
    if (taken && taken->is_object() && frame != nullptr) {
      RefKey key;
      key.tab_id = tab_id_;
      key.target_id = tab->target_id;
      key.session_id = frame->session_id;
      key.frame_id = frame_id;
      key.loader_id = frame->loader_id;
      key.frame_ordinal = ordinal;
      key.world_generation = frame->world_generation;
      std::vector<std::string> added;
      json added_details = json::array();
      const json& list = (*taken)["added"];
      for (const json& entry : list.is_array() ? list : json::array()) {
        if (!entry.is_object() || !entry.value("index", json()).is_number_integer()) continue;
        RefKey element = key;
        element.js_index = entry["index"].get<int64_t>();
        Result<RefRecord> issued = thread_->refs().issue(element, entry.value("role", std::string()),
                                                         entry.value("name", std::string()));
        if (!issued) continue;
        added_details.push_back({{"ref", issued->ref}, {"role", issued->role}, {"name", issued->name}});
        if (added.size() < kMaxReportedNames) {
          added.push_back(issued->ref + " " + issued->role +
                          (issued->name.empty() ? "" : " " + quoted(issued->name, 60)));
        }
      }
      const int64_t more =
          taken->value("moreAdded", int64_t{0}) +
          static_cast<int64_t>(added_details.size() - std::min(added_details.size(), added.size()));
      const int64_t removed = taken->value("removed", int64_t{0});
      const int64_t text_changes = taken->value("textChanges", int64_t{0});
      const int64_t state_changes = taken->value("stateChanges", int64_t{0});
      std::string changes;
      if (!added.empty()) {
        changes += "+" + std::to_string(added_details.size()) + " (";
        for (size_t i = 0; i < added.size(); ++i) changes += (i ? ", " : "") + added[i];
        changes += more > 0 ? ", " + std::to_string(more) + " more)" : ")";
      }
      if (removed > 0)
        changes += std::string(changes.empty() ? "" : ", ") + "-" + std::to_string(removed) + " removed";
      if (text_changes + state_changes > 0) {
        changes += std::string(changes.empty() ? "" : ", ") + std::to_string(text_changes + state_changes) +
                   " text or state changes";
      }
      lines.push_back("Changes: " + (changes.empty() ? std::string("none seen") : changes));
      details["changes"] = {{"added", std::move(added_details)},
                            {"removed", removed},
                            {"textChanges", text_changes},
                            {"stateChanges", state_changes}};
    }
  }
  if (report.navigated) thread_->refs().invalidate_tab(tab_id_, "the page navigated");

  tab = connection_->tab(tab_id_);
  if (tab == nullptr || tab->closed) {
    lines.push_back("The tab was closed.");
  } else {
    const FrameState* main = tab->main_frame();
    const std::string url = main != nullptr ? main->url : tab->url;
    std::string page = "Page: " + valid_utf8(url);
    if (!tab->title.empty()) page += " " + quoted(tab->title, 120);
    if (tab->http_status != 0) page += " · HTTP " + std::to_string(tab->http_status);
    if (tab->crashed) page += " · the tab crashed (the next call reopens it)";
    if (report.navigated) page += " · navigated (refs from earlier snapshots are stale)";
    lines.push_back(page);
    details["url"] = valid_utf8(url);
    details["title"] = valid_utf8(tab->title);
    details["status"] = tab->http_status;
    details["navigated"] = report.navigated;
    if (std::string modal = modal_line(*tab); !modal.empty()) lines.push_back(modal);
    // Console errors since the action started.
    int64_t errors = 0;
    std::string first;
    for (const ConsoleEntry& entry : tab->console) {
      if (entry.seq <= state->console_before || entry.level != "error") continue;
      if (errors++ == 0) first = entry.text;
    }
    if (errors > 0) {
      lines.push_back("Console: " + std::to_string(errors) + " error" + (errors == 1 ? " " : "s, first ") +
                      quoted(first, 160) + " (browser_console)");
      details["consoleErrors"] = errors;
    }
    for (size_t i = state->downloads_before; i < tab->downloads.size(); ++i) {
      const DownloadEntry& download = tab->downloads[i];
      lines.push_back("Download: " + valid_utf8(download.suggested_filename) + " (" + download.state + ")");
    }
    for (size_t i = state->blocked_before; i < tab->blocked.size(); ++i) {
      lines.push_back("Blocked: navigation to " + valid_utf8(tab->blocked[i].url) + " (" +
                      tab->blocked[i].reason + ")");
    }
    if (!state->requests.empty()) {
      lines.push_back("Still loading: " + std::to_string(state->requests.size()) +
                      " request(s) the action started had not finished");
    }
  }
  // Tabs that appeared during the action: popups of this tab belong to this thread.
  json new_tabs = json::array();
  for (int64_t id : connection_->tab_ids()) {
    if (state->tabs_before.contains(id)) continue;
    const TabState* opened = connection_->tab(id);
    if (opened == nullptr) continue;
    const bool ours =
        opened->opener_tab == tab_id_ || std::find(state->opened_targets.begin(), state->opened_targets.end(),
                                                   opened->target_id) != state->opened_targets.end();
    if (!ours) continue;
    thread_->adopt(id);
    const FrameState* main = opened->main_frame();
    const std::string url = main != nullptr ? main->url : opened->url;
    lines.push_back("New tab: tab " + std::to_string(id) + " " + valid_utf8(url) +
                    " (browser_switch_tab{tab:" + std::to_string(id) + "})");
    new_tabs.push_back({{"tab", id}, {"url", valid_utf8(url)}});
  }
  details["newTabs"] = std::move(new_tabs);
  thread_->runtime().publish(*thread_);
  report.details = std::move(details);
  for (size_t i = 0; i < lines.size(); ++i) report.text += (i ? "\n" : "") + lines[i];
  co_return report;
}

std::string modal_line(const TabState& tab) {
  if (!tab.modal) return "";
  const ModalState& modal = *tab.modal;
  if (modal.kind == ModalState::Kind::kFileChooser) {
    return std::string("File chooser: open (") + (modal.multiple ? "several files" : "one file") +
           ") → browser_upload_file{paths} chooses, browser_upload_file{paths: []} cancels";
  }
  std::string line = "Dialog: " + modal.dialog_type + " " + quoted(modal.message, 300) + " is open → ";
  if (modal.dialog_type == "alert") return line + "browser_handle_dialog{accept: true} closes it";
  if (modal.dialog_type == "prompt") {
    return line + "browser_handle_dialog{accept, prompt_text} answers it";
  }
  if (modal.dialog_type == "beforeunload") {
    return line + "browser_handle_dialog{accept: true} leaves the page, {accept: false} stays";
  }
  return line + "browser_handle_dialog{accept: true|false} answers it";
}

Result<void> check_no_modal(const TabState& tab) {
  if (!tab.modal) return {};
  return fail(codes::kBrowserModalOpen, "tab " + std::to_string(tab.tab_id) +
                                            " is blocked until its dialog or file chooser is answered. " +
                                            modal_line(tab));
}

}  // namespace keel::browser
