#include "browser/browser_connection.h"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <utility>

#include "browser/browser_errors.h"
#include "browser/cdp/event_waiter.h"
#include "browser/page_scripts.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

struct Command {
  std::string method;
  json params;
};

std::string text_of(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

Error browser_gone(const std::string& detail) {
  return Error(codes::kBrowserCrashed, "the browser exited or its connection broke (" + detail + ")");
}

const json& member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// Commands that work (or are how to get out) while a JavaScript dialog blocks the renderer.
bool works_during_dialog(const std::string& method) {
  return method == "Page.handleJavaScriptDialog" || method == "Page.navigate" || method == "Page.close" ||
         method.starts_with("Target.") || method.starts_with("Input.");
}

// The dialog-loop rule: this many dialogs of one document within kDialogLoopWindow, and keel dismisses the
// following ones itself.
constexpr size_t kDialogLoopCount = 3;
constexpr std::chrono::milliseconds kDialogLoopWindow{1000};
constexpr size_t kMaxDialogDocuments = 64;

}  // namespace

BrowserConnection::BrowserConnection(PrivateTag, std::shared_ptr<CdpClient> client, ConnectionOptions options)
    : client_(std::move(client)),
      options_(options),
      next_tab_id_(std::max<int64_t>(options_.tab_ids_above, 0) + 1) {}

asio::awaitable<Result<std::shared_ptr<BrowserConnection>>> BrowserConnection::start(
    std::shared_ptr<CdpClient> client, ConnectionOptions options) {
  auto self = std::make_shared<BrowserConnection>(PrivateTag(), std::move(client), options);
  const bool guarded = static_cast<bool>(options.navigation_guard);
  const std::filesystem::path download_dir = options.download_dir;
  std::weak_ptr<BrowserConnection> weak = self;
  self->events_ = self->client_->listen([weak](const CdpEvent& event) {
    if (auto locked = weak.lock()) locked->on_event(event);
  });
  self->close_ = self->client_->on_close([weak](const Error& why) {
    if (auto locked = weak.lock()) locked->on_exit(why);
  });
  const bool launched = options.ownership == BrowserOwnership::kLaunched;
  if (options.ownership == BrowserOwnership::kAttachedOwnContext) {
    // disposeOnDetach: should keel go away without release(), the browser drops keel's context (and its
    // tabs) when keel's connection closes.
    json context = {{"disposeOnDetach", true}};
    CallOptions context_options;
    context_options.timeout = options.setup_timeout;
    Result<json> created = co_await self->call("Target.createBrowserContext", std::move(context), "",
                                               std::move(context_options));
    if (!created) co_return fail(created.error());
    self->browser_context_id_ = text_of(*created, "browserContextId");
    if (self->browser_context_id_.empty()) {
      co_return fail(codes::kBrowserCdpError, "Target.createBrowserContext gave no browserContextId");
    }
  }
  // Before any target runs: the guard and the download rule hold from the first request on. In a person's
  // browser the guard is enabled per keel session instead (set_up_session): browser-wide, it would hold
  // every request of the person's own tabs.
  if (guarded && launched) {
    json pattern = {{"urlPattern", "*"}, {"resourceType", "Document"}, {"requestStage", "Request"}};
    json fetch = {{"patterns", json::array({pattern})}};
    CallOptions fetch_options;
    fetch_options.timeout = options.setup_timeout;
    Result<json> fetching =
        co_await self->call("Fetch.enable", std::move(fetch), "", std::move(fetch_options));
    if (!fetching) co_return fail(fetching.error());
  }
  // The download rule of keel's own context; in the person's default context it would change where the
  // person's own downloads go, so keel leaves it as the person set it.
  if (options.ownership != BrowserOwnership::kAttachedDefaultContext) {
    json downloads = {{"behavior", "deny"}, {"eventsEnabled", true}};
    if (!download_dir.empty()) {
      downloads["behavior"] = "allowAndName";
      downloads["downloadPath"] = download_dir.string();
    }
    if (!self->browser_context_id_.empty()) downloads["browserContextId"] = self->browser_context_id_;
    CallOptions download_options;
    download_options.timeout = options.setup_timeout;
    Result<json> downloading = co_await self->call("Browser.setDownloadBehavior", std::move(downloads), "",
                                                   std::move(download_options));
    if (!downloading) co_return fail(downloading.error());
  }
  // Discovery only reports targets (popups' openers); it pauses and changes nothing.
  json discover = {{"discover", true}};
  CallOptions discover_options;
  discover_options.timeout = options.setup_timeout;
  Result<json> discovering =
      co_await self->call("Target.setDiscoverTargets", std::move(discover), "", std::move(discover_options));
  if (!discovering) co_return fail(discovering.error());
  // Browser-wide auto-attach pauses every new target until keel resumes it: in a person's browser that would
  // hold the person's own new tabs, so there keel attaches to its own targets one by one.
  if (!launched) co_return self;
  json auto_attach = {{"autoAttach", true}, {"waitForDebuggerOnStart", true}, {"flatten", true}};
  CallOptions attach_options;
  attach_options.timeout = options.setup_timeout;
  Result<json> attaching =
      co_await self->call("Target.setAutoAttach", std::move(auto_attach), "", std::move(attach_options));
  if (!attaching) co_return fail(attaching.error());
  co_return self;
}

asio::awaitable<Result<json>> BrowserConnection::call(std::string method, json params, std::string session_id,
                                                      CallOptions options) {
  if (exited_) co_return fail(*exited_);
  std::shared_ptr<PendingCall> pending;
  if (!session_id.empty()) {
    const TabState* owner = tab_of_session(session_id);
    if (owner != nullptr && owner->crashed) {
      co_return fail(codes::kBrowserTabCrashed, "tab " + std::to_string(owner->tab_id) + " crashed");
    }
    if (owner != nullptr && !works_during_dialog(method)) {
      if (owner->modal && owner->modal->kind == ModalState::Kind::kDialog)
        co_return fail(modal_error(*owner));
      // A dialog that opens while the call waits ends it (the renderer would not answer until it closes).
      pending = std::make_shared<PendingCall>();
      pending->tab_id = owner->tab_id;
      pending->method = method;
      pending->stop = std::make_shared<CancellationSource>();
    }
  }
  std::shared_ptr<BrowserConnection> keep_alive = shared_from_this();
  const uint64_t call_id = ++next_call_;
  CancellationRegistration forward;
  if (pending) {
    forward = options.cancel.on_cancel([stop = pending->stop] { stop->cancel(); });
    options.cancel = pending->stop->token();
    pending_calls_.emplace(call_id, pending);
  }
  Result<json> reply =
      co_await client_->call(std::move(method), std::move(params), std::move(session_id), std::move(options));
  pending_calls_.erase(call_id);
  // A reply that won the race against the dialog stands.
  if (pending && pending->modal && !reply) co_return fail(*pending->modal);
  if (!reply && reply.error().code() == codes::kBrowserDisconnected) {
    co_return fail(exited_ ? *exited_ : browser_gone(reply.error().message()));
  }
  co_return reply;
}

void BrowserConnection::on_event(const CdpEvent& event) {
  if (event.method == "Target.attachedToTarget") {
    on_attached(event);
    return;
  }
  if (event.method == "Target.detachedFromTarget") {
    on_detached(text_of(event.params, "sessionId"));
    return;
  }
  if (event.method == "Target.targetCrashed") {
    on_crashed(text_of(event.params, "targetId"), text_of(event.params, "status"));
    return;
  }
  if (event.method == "Inspector.targetCrashed") {
    auto it = sessions_.find(event.session_id);
    if (it != sessions_.end() && it->second.type == "page") on_crashed(it->second.target_id, "crashed");
    return;
  }
  if (event.method == "Fetch.requestPaused") {
    on_request_paused(event);
    return;
  }
  if (event.method == "Browser.downloadWillBegin" || event.method == "Browser.downloadProgress") {
    on_download(event);
    return;
  }
  if (event.method == "Target.targetCreated" || event.method == "Target.targetInfoChanged") {
    const json& info = member(event.params, "targetInfo");
    const std::string target_id = text_of(info, "targetId");
    const std::string opener = text_of(info, "openerId");
    if (!target_id.empty() && !opener.empty()) openers_[target_id] = opener;
    if (attached_to_persons_browser()) adopt_popup(info);
    for (auto& [tab_id, tab] : tabs_) {
      if (tab.apply_target_info(info)) changed();
    }
    return;
  }
  if (event.method == "Target.targetDestroyed") {
    openers_.erase(text_of(event.params, "targetId"));
    return;
  }
  if (event.session_id.empty()) return;
  TabState* owner = tab_of_session(event.session_id);
  if (owner == nullptr) return;
  if (event.method == "Page.javascriptDialogOpening") {
    on_dialog_opening(event, *owner);
    return;
  }
  if (event.method == "Page.lifecycleEvent" && event.session_id == owner->session_id &&
      text_of(event.params, "frameId") == owner->target_id &&
      (text_of(event.params, "name") == "DOMContentLoaded" || text_of(event.params, "name") == "load")) {
    // Target.targetInfoChanged does not follow a document's <title>: ask once the document has one.
    asio::co_spawn(client_->executor(), refresh_target_info(shared_from_this(), owner->target_id),
                   [](const std::exception_ptr&) {});
    return;
  }
  if (!owner->apply(event)) return;
  if (event.method == "Page.frameNavigated") on_frame_committed(event, *owner);
  changed();
}

asio::awaitable<void> BrowserConnection::refresh_target_info(std::shared_ptr<BrowserConnection> self,
                                                             std::string target_id) {
  json params = {{"targetId", target_id}};
  CallOptions options;
  options.timeout = self->options_.setup_timeout;
  Result<json> info = co_await self->call("Target.getTargetInfo", std::move(params), "", std::move(options));
  if (!info) co_return;  // the target went away meanwhile
  for (auto& [tab_id, tab] : self->tabs_) {
    if (tab.apply_target_info(member(*info, "targetInfo"))) self->changed();
  }
}

void BrowserConnection::on_dialog_opening(const CdpEvent& event, TabState& owner) {
  // The document that opened it: its frame's loader when the event names the frame, else its URL.
  const std::string frame_id = text_of(event.params, "frameId");
  const FrameState* opener = owner.frame(frame_id);
  const std::string document =
      event.session_id + " " + (opener != nullptr ? opener->loader_id : text_of(event.params, "url"));
  const auto at = now();
  auto& times = recent_dialogs_[document];
  while (!times.empty() && at - times.front() > kDialogLoopWindow) times.pop_front();
  const bool looping = times.size() >= kDialogLoopCount;
  times.push_back(at);
  if (recent_dialogs_.size() > kMaxDialogDocuments) {
    std::erase_if(recent_dialogs_, [&](const auto& entry) {
      return entry.second.empty() || at - entry.second.back() > kDialogLoopWindow;
    });
  }
  if (looping) {
    // Dismissing never confirms anything (a confirm answers false, a beforeunload stays on the page).
    json dismiss = {{"accept", false}};
    client_->notify("Page.handleJavaScriptDialog", std::move(dismiss), event.session_id);
    owner.note_dismissed_dialog(event.session_id);
    changed();
    return;
  }
  if (!owner.apply(event)) return;
  const Error blocked = modal_error(owner);
  for (const auto& [id, pending] : pending_calls_) {
    if (pending->tab_id != owner.tab_id || pending->modal) continue;
    pending->modal = blocked;
    pending->stop->cancel("a dialog opened");
  }
  changed();
}

void BrowserConnection::on_request_paused(const CdpEvent& event) {
  const std::string request_id = text_of(event.params, "requestId");
  if (request_id.empty()) return;  // nothing to answer
  json answer = {{"requestId", request_id}};
  // Answered on the session that paused it: the browser's (launched) or a keel page's (attached).
  const std::string& paused_by = event.session_id;
  if (!options_.navigation_guard) {
    client_->notify("Fetch.continueRequest", std::move(answer), paused_by);
    return;
  }
  PausedDocumentRequest request;
  request.url = text_of(member(event.params, "request"), "url");
  request.redirect = !text_of(event.params, "redirectedRequestId").empty();
  const std::string frame_id = text_of(event.params, "frameId");
  TabState* owner = tab_of_frame(frame_id);
  TabState* recorder = owner;
  if (owner != nullptr) {
    const FrameState* main = owner->main_frame();
    const bool main_frame = frame_id == owner->target_id || (main != nullptr && main->frame_id == frame_id);
    request.frame = main_frame ? FrameKind::kMainFrame : FrameKind::kSubframe;
  } else {
    // A page target keel has not attached yet (a popup's first request): a new page's main frame has the
    // target's id, and Chromium named its opener when it announced the target.
    request.frame = FrameKind::kMainFrame;
    auto opener = openers_.find(frame_id);
    if (opener != openers_.end()) recorder = tab_of_frame(opener->second);
  }
  const int64_t tab_id = recorder != nullptr ? recorder->tab_id : 0;
  const GuardDecision decision = options_.navigation_guard(tab_id, request);
  if (decision.allowed) {
    client_->notify("Fetch.continueRequest", std::move(answer), paused_by);
    return;
  }
  answer["errorReason"] = "BlockedByClient";
  client_->notify("Fetch.failRequest", std::move(answer), paused_by);
  if (recorder != nullptr) {
    std::string reason = decision.reason;
    if (request.redirect) reason += " (a redirect hop)";
    recorder->record_blocked(request.url, std::move(reason), frame_id, text_of(event.params, "networkId"));
    changed();
  }
}

void BrowserConnection::on_frame_committed(const CdpEvent& event, TabState& owner) {
  if (!options_.commit_check) return;
  const json& described = member(event.params, "frame");
  const std::string frame_id = text_of(described, "id");
  const std::string committed = text_of(described, "url") + text_of(described, "urlFragment");
  const bool subframe = !text_of(described, "parentId").empty() || event.session_id != owner.session_id;
  const GuardDecision decision =
      options_.commit_check(owner.tab_id, committed, subframe ? FrameKind::kSubframe : FrameKind::kMainFrame);
  if (decision.allowed) return;
  json blank = {{"url", "about:blank"}, {"frameId", frame_id}};
  client_->notify("Page.navigate", std::move(blank), event.session_id);
  owner.record_blocked(committed, decision.reason, frame_id);
}

void BrowserConnection::on_download(const CdpEvent& event) {
  if (event.method == "Browser.downloadWillBegin") {
    TabState* owner = tab_of_frame(text_of(event.params, "frameId"));
    if (owner != nullptr && owner->apply_download(event)) changed();
    return;
  }
  for (auto& [tab_id, tab] : tabs_) {
    if (tab.apply_download(event)) {
      changed();
      return;
    }
  }
}

Error BrowserConnection::modal_error(const TabState& tab) {
  const std::string on_tab = " is open on tab " + std::to_string(tab.tab_id);
  if (!tab.modal) return Error(codes::kBrowserModalOpen, "a dialog" + on_tab);
  if (tab.modal->kind == ModalState::Kind::kFileChooser) {
    return Error(codes::kBrowserModalOpen, "A file chooser" + on_tab +
                                               "; page commands are blocked until browser_upload_file{paths} "
                                               "answers it (an empty list cancels it).");
  }
  const std::string& type = tab.modal->dialog_type;
  const std::string article = type == "alert" ? "An " : "A ";
  return Error(codes::kBrowserModalOpen,
               article + type + " dialog" + on_tab + " (\"" + tab.modal->message +
                   "\"); page commands are blocked until browser_handle_dialog{accept} "
                   "clears it.");
}

std::chrono::steady_clock::time_point BrowserConnection::now() const {
  return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

TabState* BrowserConnection::tab_of_frame(const std::string& frame_id) {
  if (frame_id.empty()) return nullptr;
  for (auto& [tab_id, tab] : tabs_) {
    if (tab.target_id == frame_id || tab.frames.contains(frame_id)) return &tab;
  }
  return nullptr;
}

void BrowserConnection::adopt_popup(const json& target_info) {
  const std::string target_id = text_of(target_info, "targetId");
  if (target_id.empty() || text_of(target_info, "type") != "page" || attaching_.contains(target_id)) return;
  // Only a page a keel tab opened: the person's own pages are never attached.
  if (tab_of_frame(text_of(target_info, "openerId")) == nullptr) return;
  for (const auto& [session_id, info] : sessions_) {
    if (info.target_id == target_id) return;  // already keel's
  }
  attaching_.insert(target_id);
  // Its session is set up by on_attached; a popup that went away meanwhile simply never attaches.
  json attach = {{"targetId", target_id}, {"flatten", true}};
  client_->notify("Target.attachToTarget", std::move(attach), "");
}

void BrowserConnection::check_adopted_page(TabState& tab) {
  const FrameState* main = tab.main_frame();
  if (!options_.commit_check || main == nullptr || main->url.empty()) return;
  // The popup has no thread yet: the guard holds it to its opener's thread.
  const int64_t held_to = tab.opener_tab != 0 ? tab.opener_tab : tab.tab_id;
  const GuardDecision decision = options_.commit_check(held_to, main->url, FrameKind::kMainFrame);
  if (decision.allowed) return;
  json blank = {{"url", "about:blank"}, {"frameId", main->frame_id}};
  client_->notify("Page.navigate", std::move(blank), tab.session_id);
  tab.record_blocked(main->url, decision.reason, main->frame_id);
}

void BrowserConnection::on_attached(const CdpEvent& event) {
  const std::string session_id = text_of(event.params, "sessionId");
  const json& info = event.params.contains("targetInfo") ? event.params["targetInfo"] : json();
  const std::string target_id = text_of(info, "targetId");
  const std::string type = text_of(info, "type");
  if (session_id.empty()) return;
  attaching_.erase(target_id);
  SessionInfo session;
  session.target_id = target_id;
  session.type = type;
  if (type == "page") {
    // A second session to a page that already is a tab is keel's own L2 input session (input_session.h,
    // Target.attachToTarget): it belongs to that tab's thread, not to the tab list.
    for (const auto& [id, existing] : tabs_) {
      if (existing.target_id == target_id && !existing.closed) return;
    }
    TabState tab;
    auto chosen = chosen_by_target_.find(target_id);
    if (chosen != chosen_by_target_.end()) {
      tab.tab_id = chosen->second;
      chosen_by_target_.erase(chosen);
      choosing_tab_ids_.erase(tab.tab_id);
      drop_crashed_tab(tab.tab_id);
    } else {
      tab.tab_id = next_tab_id_++;
    }
    used_tab_ids_.insert(tab.tab_id);
    tab.target_id = target_id;
    tab.session_id = session_id;
    tab.apply_target_info(info);
    if (const TabState* opener = tab_of_frame(text_of(info, "openerId"))) tab.opener_tab = opener->tab_id;
    session.tab_id = tab.tab_id;
    tabs_.emplace(tab.tab_id, std::move(tab));
  } else if (type == "iframe") {
    TabState* owner = tab_of_session(event.session_id);
    if (owner != nullptr) {
      owner->adopt_oopif(target_id, session_id);
      session.tab_id = owner->tab_id;
    }
  }
  if (session.tab_id == 0) {
    // Not a tab or one of its frames (a worker, the browser's own UI): let it run and leave it alone.
    client_->notify("Runtime.runIfWaitingForDebugger", json::object(), session_id);
    json detach = {{"sessionId", session_id}};
    client_->notify("Target.detachFromTarget", std::move(detach), event.session_id);
    return;
  }
  sessions_.emplace(session_id, std::move(session));
  changed();
  asio::co_spawn(client_->executor(), set_up_session(shared_from_this(), session_id, type),
                 [](const std::exception_ptr&) {});
}

asio::awaitable<void> BrowserConnection::set_up_session(std::shared_ptr<BrowserConnection> self,
                                                        std::string session_id, std::string type) {
  std::vector<Command> commands;
  if (self->attached_to_persons_browser() && self->options_.navigation_guard) {
    // The navigation guard of this session's documents (launched, it is browser-wide: see start()).
    json pattern = {{"urlPattern", "*"}, {"resourceType", "Document"}, {"requestStage", "Request"}};
    commands.push_back({"Fetch.enable", json{{"patterns", json::array({pattern})}}});
  }
  commands.push_back({"Page.enable", json::object()});
  commands.push_back({"Page.setLifecycleEventsEnabled", json{{"enabled", true}}});
  commands.push_back({"Runtime.enable", json::object()});
  if (type == "page") commands.push_back({"Network.enable", json::object()});
  // A file chooser becomes an event (Page.fileChooserOpened) instead of a native dialog nobody can answer.
  commands.push_back({"Page.setInterceptFileChooserDialog", json{{"enabled", true}}});
  commands.push_back({"Page.getFrameTree", json::object()});
  commands.push_back(
      {"Page.addScriptToEvaluateOnNewDocument", json{{"source", std::string(page_script_bundle())},
                                                     {"worldName", std::string(kWorldName)},
                                                     {"runImmediately", true}}});
  commands.push_back({"Target.setAutoAttach",
                      json{{"autoAttach", true}, {"waitForDebuggerOnStart", true}, {"flatten", true}}});

  // Sent together, awaited together: each call completes the shared count.
  asio::any_io_executor ex = co_await asio::this_coro::executor;
  auto replies = std::make_shared<std::vector<Result<json>>>(commands.size(), json());
  auto remaining = std::make_shared<size_t>(commands.size());
  auto all_done = std::make_shared<asio::steady_timer>(ex, asio::steady_timer::time_point::max());
  for (size_t i = 0; i < commands.size(); ++i) {
    CallOptions options;
    options.timeout = self->options_.setup_timeout;
    asio::co_spawn(
        ex, self->call(commands[i].method, std::move(commands[i].params), session_id, std::move(options)),
        [replies, remaining, all_done, i](const std::exception_ptr& thrown, Result<json> reply) {
          (*replies)[i] = thrown ? fail(codes::kInternal, "a setup command threw") : std::move(reply);
          if (--*remaining == 0) all_done->cancel();
        });
  }
  // Resume the target right behind its setup commands, without waiting for their replies: the browser
  // handles a session's commands in order, so the setup is in place before the page runs, and some of them
  // are answered only once the target runs (a tab opened by a noopener link — target=_blank — gets its
  // renderer only then: awaiting the replies first left it paused until the setup timed out).
  // Posted, so that it is sent after the spawned calls above have sent theirs.
  std::weak_ptr<CdpClient> client = self->client_;
  asio::post(ex, [client, session_id] {
    if (auto locked = client.lock())
      locked->notify("Runtime.runIfWaitingForDebugger", json::object(), session_id);
  });
  if (*remaining > 0) {
    boost::system::error_code ignored;
    co_await all_done->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  auto session = self->sessions_.find(session_id);
  if (session == self->sessions_.end()) co_return;  // detached meanwhile
  for (size_t i = 0; i < commands.size(); ++i) {
    if (commands[i].method != "Page.getFrameTree" || !(*replies)[i]) continue;
    auto owner = self->tabs_.find(session->second.tab_id);
    const json& tree = *(*replies)[i];
    if (owner != self->tabs_.end() && tree.contains("frameTree")) {
      owner->second.seed_frames(tree["frameTree"], session_id, type == "iframe");
      if (type == "page" && self->attached_to_persons_browser()) self->check_adopted_page(owner->second);
    }
  }
  // A command that failed (the target went away meanwhile) leaves the session as it is; later calls on it
  // report what happened.
  session->second.ready = true;
  self->changed();
}

void BrowserConnection::on_detached(const std::string& session_id) {
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) return;
  const SessionInfo info = it->second;
  sessions_.erase(it);
  auto owner = tabs_.find(info.tab_id);
  if (owner != tabs_.end()) {
    if (info.type == "page") {
      owner->second.closed = true;
      // A crashed tab stays, so that calls on it keep saying it crashed.
      if (!owner->second.crashed) {
        std::erase_if(sessions_, [&](const auto& entry) { return entry.second.tab_id == info.tab_id; });
        tabs_.erase(owner);
      }
    } else {
      owner->second.drop_session(session_id);
    }
  }
  changed();
}

void BrowserConnection::on_crashed(const std::string& target_id, const std::string& status) {
  for (auto& [tab_id, tab] : tabs_) {
    if (tab.target_id != target_id || tab.crashed) continue;
    tab.crashed = true;
    tab.modal.reset();
    tab.touch();
    const Error why(codes::kBrowserTabCrashed, "tab " + std::to_string(tab_id) + " crashed" +
                                                   (status.empty() ? "" : " (" + status + ")"));
    std::vector<std::string> ended;
    for (const auto& [session_id, info] : sessions_) {
      if (info.tab_id == tab_id) ended.push_back(session_id);
    }
    for (const std::string& session_id : ended) client_->end_session(session_id, why);
    changed();
    return;
  }
}

void BrowserConnection::on_exit(const Error& why) {
  if (exited_) return;
  exited_ = browser_gone(why.message());
  changed();
}

void BrowserConnection::changed() {
  auto waiting = std::move(waiters_);
  waiters_.clear();
  for (const auto& timer : waiting) timer->cancel();
}

asio::awaitable<Result<void>> BrowserConnection::wait_until(std::function<bool()> ready,
                                                            std::chrono::milliseconds timeout,
                                                            CancellationToken cancel) {
  std::shared_ptr<BrowserConnection> self = shared_from_this();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  asio::any_io_executor ex = co_await asio::this_coro::executor;
  for (;;) {
    if (exited_) co_return fail(*exited_);
    if (ready()) co_return Result<void>{};
    if (cancel.is_cancelled()) co_return fail(codes::kCancelled, "the wait was cancelled");
    if (std::chrono::steady_clock::now() >= deadline) {
      co_return fail(codes::kBrowserCdpTimeout, "the browser did not reach the expected state within " +
                                                    std::to_string(timeout.count()) + " ms");
    }
    auto timer = std::make_shared<asio::steady_timer>(ex, deadline);
    waiters_.push_back(timer);
    std::weak_ptr<asio::steady_timer> weak = timer;
    CancellationRegistration registration = cancel.on_cancel([weak, ex] {
      asio::post(ex, [weak] {
        if (auto locked = weak.lock()) locked->cancel();
      });
    });
    boost::system::error_code ignored;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    std::erase(waiters_, timer);
  }
}

asio::awaitable<Result<int64_t>> BrowserConnection::create_tab(std::chrono::milliseconds timeout,
                                                               std::optional<int64_t> tab_id) {
  std::shared_ptr<BrowserConnection> self = shared_from_this();
  if (exited_) co_return fail(*exited_);
  if (tab_id) {
    if (std::optional<std::string> refused = chosen_id_refused(*tab_id)) {
      co_return fail(codes::kInvalidArgument, *refused);
    }
    choosing_tab_ids_.insert(*tab_id);
    // The ids the connection gives itself stay above every chosen one.
    next_tab_id_ = std::max(next_tab_id_, *tab_id + 1);
  }
  json params = {{"url", "about:blank"}};
  if (!browser_context_id_.empty()) params["browserContextId"] = browser_context_id_;
  CallOptions options;
  options.timeout = timeout;
  Result<json> created = co_await call("Target.createTarget", std::move(params), "", std::move(options));
  const std::string target_id = created ? text_of(*created, "targetId") : std::string();
  if (tab_id && target_id.empty()) choosing_tab_ids_.erase(*tab_id);
  if (!created) co_return fail(created.error());
  if (target_id.empty()) co_return fail(codes::kBrowserCdpError, "Target.createTarget gave no targetId");
  // Chromium may announce the new target (Target.attachedToTarget) before or after this reply.
  if (tab_id) give_chosen_id(target_id, *tab_id);
  if (attached_to_persons_browser()) {
    // No browser-wide auto-attach in a person's browser (see start()): keel attaches to its tab itself.
    // The tab is blank, so nothing of it ran unguarded before its session is set up.
    attaching_.insert(target_id);
    json attach = {{"targetId", target_id}, {"flatten", true}};
    CallOptions attach_options;
    attach_options.timeout = timeout;
    Result<json> attached =
        co_await call("Target.attachToTarget", std::move(attach), "", std::move(attach_options));
    if (!attached) {
      attaching_.erase(target_id);
      if (tab_id) {
        chosen_by_target_.erase(target_id);
        choosing_tab_ids_.erase(*tab_id);
      }
      co_return fail(attached.error());
    }
  }
  auto tab_ready = [this, target_id]() -> int64_t {
    for (const auto& [session_id, info] : sessions_) {
      if (info.target_id == target_id && info.type == "page" && info.ready) return info.tab_id;
    }
    return 0;
  };
  std::function<bool()> ready = [tab_ready] { return tab_ready() != 0; };
  CancellationToken never_cancelled;
  Result<void> waited = co_await wait_until(std::move(ready), timeout, never_cancelled);
  if (!waited) co_return fail(waited.error());
  co_return tab_ready();
}

asio::awaitable<Result<void>> BrowserConnection::release(std::chrono::milliseconds timeout) {
  std::shared_ptr<BrowserConnection> self = shared_from_this();
  if (!attached_to_persons_browser() || exited_) co_return Result<void>{};
  if (!browser_context_id_.empty()) {
    json params = {{"browserContextId", browser_context_id_}};
    CallOptions options;
    options.timeout = timeout;
    Result<json> disposed =
        co_await call("Target.disposeBrowserContext", std::move(params), "", std::move(options));
    if (!disposed) co_return fail(disposed.error());
    co_return Result<void>{};
  }
  // The default context is the person's: only the pages keel opened (and their popups) are closed.
  std::vector<std::string> targets;
  for (const auto& [tab_id, state] : tabs_) targets.push_back(state.target_id);
  std::optional<Error> first_failure;
  for (const std::string& target_id : targets) {
    json params = {{"targetId", target_id}};
    CallOptions options;
    options.timeout = timeout;
    Result<json> closed = co_await call("Target.closeTarget", std::move(params), "", std::move(options));
    if (!closed && !first_failure) first_failure = closed.error();
  }
  if (first_failure) co_return fail(*first_failure);
  // Target.closeTarget answers before the page is gone: wait for the detaches, so that keel's tabs are gone
  // when keel disconnects.
  std::function<bool()> all_closed = [this] {
    return std::all_of(tabs_.begin(), tabs_.end(), [](const auto& entry) { return entry.second.closed; });
  };
  CancellationToken never_cancelled;
  Result<void> gone = co_await wait_until(std::move(all_closed), timeout, never_cancelled);
  co_return gone;
}

asio::awaitable<Result<void>> BrowserConnection::close_tab(int64_t tab_id,
                                                           std::chrono::milliseconds timeout) {
  std::shared_ptr<BrowserConnection> self = shared_from_this();
  const TabState* state = tab(tab_id);
  if (state == nullptr) co_return fail(codes::kInvalidArgument, "no tab " + std::to_string(tab_id));
  json params = {{"targetId", state->target_id}};
  CallOptions options;
  options.timeout = timeout;
  Result<json> closed = co_await call("Target.closeTarget", std::move(params), "", std::move(options));
  if (!closed) co_return fail(closed.error());
  co_return Result<void>{};
}

asio::awaitable<Result<void>> BrowserConnection::navigate(int64_t tab_id, std::string url,
                                                          std::chrono::milliseconds timeout,
                                                          CancellationToken cancel) {
  std::shared_ptr<BrowserConnection> self = shared_from_this();
  const TabState* state = tab(tab_id);
  if (state == nullptr) co_return fail(codes::kInvalidArgument, "no tab " + std::to_string(tab_id));
  if (state->crashed) co_return fail(codes::kBrowserTabCrashed, "tab " + std::to_string(tab_id) + " crashed");
  // Copies: the tab may change or go while this coroutine waits.
  const std::string session_id = state->session_id;
  const std::string target_id = state->target_id;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // Listening before the command: the document's DOMContentLoaded, or the end of the tab.
  EventWaiter loaded(*client_, [session_id, target_id](const CdpEvent& e) {
    if (e.method == "Target.targetCrashed") return text_of(e.params, "targetId") == target_id;
    if (e.method == "Target.detachedFromTarget") return text_of(e.params, "sessionId") == session_id;
    if (e.session_id != session_id) return false;
    if (e.method == "Inspector.targetCrashed") return true;
    return e.method == "Page.lifecycleEvent" && text_of(e.params, "frameId") == target_id &&
           text_of(e.params, "name") == "DOMContentLoaded";
  });
  json params = {{"url", url}};
  CallOptions options;
  options.timeout = timeout;
  options.cancel = cancel;
  Result<json> reply = co_await call("Page.navigate", std::move(params), session_id, std::move(options));
  if (!reply) {
    // A server that never answers keeps Page.navigate from replying at all: stop that load.
    if (reply.error().code() == codes::kBrowserCdpTimeout || reply.error().code() == codes::kCancelled) {
      client_->notify("Page.stopLoading", json::object(), session_id);
    }
    co_return fail(reply.error());
  }
  const std::string error_text = text_of(*reply, "errorText");
  if (!error_text.empty()) {
    co_return fail(codes::kBrowserNavigationFailed, "navigation to " + url + " failed: " + error_text);
  }
  const std::string loader_id = text_of(*reply, "loaderId");
  if (loader_id.empty()) co_return Result<void>{};  // within the document: nothing more will load
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    Result<CdpEvent> event = co_await loaded.wait(std::max(left, std::chrono::milliseconds(0)), cancel);
    if (!event) {
      if (exited_) co_return fail(*exited_);
      co_return fail(event.error());
    }
    if (event->method == "Page.lifecycleEvent") {
      if (text_of(event->params, "loaderId") == loader_id) co_return Result<void>{};
      continue;  // an earlier document's
    }
    if (event->method == "Target.detachedFromTarget") {
      co_return fail(codes::kBrowserTargetClosed, "tab " + std::to_string(tab_id) + " was closed");
    }
    co_return fail(codes::kBrowserTabCrashed, "tab " + std::to_string(tab_id) + " crashed");
  }
}

asio::awaitable<Result<void>> BrowserConnection::handle_dialog(int64_t tab_id, bool accept,
                                                               std::string prompt_text,
                                                               std::chrono::milliseconds timeout) {
  std::shared_ptr<BrowserConnection> self = shared_from_this();
  const TabState* state = tab(tab_id);
  if (state == nullptr) co_return fail(codes::kBrowserNoSuchTab, "no tab " + std::to_string(tab_id));
  if (!state->modal || state->modal->kind != ModalState::Kind::kDialog) {
    co_return fail(codes::kBrowserNoModal, "no dialog is open on tab " + std::to_string(tab_id));
  }
  const std::string session_id = state->modal->session_id;
  const int64_t modal_id = state->modal->id;
  json params = {{"accept", accept}};
  if (state->modal->dialog_type == "prompt") params["promptText"] = prompt_text;
  CallOptions options;
  options.timeout = timeout;
  Result<json> reply =
      co_await call("Page.handleJavaScriptDialog", std::move(params), session_id, std::move(options));
  // Clears that dialog only: the page may have opened the next one before the reply came.
  auto owner = tabs_.find(tab_id);
  const bool still_open = owner != tabs_.end() && owner->second.modal && owner->second.modal->id == modal_id;
  if (!reply) {
    // Chromium says so when the dialog closed meanwhile (the page navigated, another client answered it).
    if (reply.error().code() == codes::kBrowserCdpError &&
        reply.error().message().find("No dialog") != std::string::npos) {
      if (still_open) {
        owner->second.modal.reset();
        owner->second.touch();
        changed();
      }
      co_return fail(codes::kBrowserNoModal, "the dialog on tab " + std::to_string(tab_id) + " is gone");
    }
    co_return fail(reply.error());
  }
  if (still_open) {
    owner->second.modal.reset();
    owner->second.touch();
    changed();
  }
  co_return Result<void>{};
}

asio::awaitable<Result<void>> BrowserConnection::set_chooser_files(int64_t tab_id,
                                                                   std::vector<std::string> files,
                                                                   std::chrono::milliseconds timeout) {
  std::shared_ptr<BrowserConnection> self = shared_from_this();
  const TabState* state = tab(tab_id);
  if (state == nullptr) co_return fail(codes::kBrowserNoSuchTab, "no tab " + std::to_string(tab_id));
  if (!state->modal || state->modal->kind != ModalState::Kind::kFileChooser) {
    co_return fail(codes::kBrowserNoModal, "no file chooser is open on tab " + std::to_string(tab_id));
  }
  if (state->modal->backend_node_id == 0) {
    co_return fail(codes::kBrowserCdpError, "the file chooser on tab " + std::to_string(tab_id) +
                                                " names no <input type=file> to give the files to");
  }
  const std::string session_id = state->modal->session_id;
  const int64_t modal_id = state->modal->id;
  json params = {{"files", files}, {"backendNodeId", state->modal->backend_node_id}};
  CallOptions options;
  options.timeout = timeout;
  Result<json> reply =
      co_await call("DOM.setFileInputFiles", std::move(params), session_id, std::move(options));
  if (!reply) co_return fail(reply.error());
  auto owner = tabs_.find(tab_id);
  if (owner != tabs_.end() && owner->second.modal && owner->second.modal->id == modal_id) {
    owner->second.modal.reset();
    owner->second.touch();
    changed();
  }
  co_return Result<void>{};
}

const TabState* BrowserConnection::tab(int64_t tab_id) const {
  auto it = tabs_.find(tab_id);
  return it == tabs_.end() ? nullptr : &it->second;
}

std::vector<int64_t> BrowserConnection::tab_ids() const {
  std::vector<int64_t> ids;
  for (const auto& [id, state] : tabs_) ids.push_back(id);
  return ids;
}

std::optional<std::string> BrowserConnection::chosen_id_refused(int64_t tab_id) const {
  const std::string name = "tab id " + std::to_string(tab_id);
  if (tab_id <= 0) return name + " is not a positive number";
  if (choosing_tab_ids_.contains(tab_id)) return name + " is being given to another new tab";
  if (!used_tab_ids_.contains(tab_id)) return std::nullopt;
  const TabState* holder = tab(tab_id);
  if (holder != nullptr && holder->crashed) return std::nullopt;  // its replacement takes it over
  return name + (holder != nullptr ? " is in use" : " belonged to a tab that was closed");
}

void BrowserConnection::drop_crashed_tab(int64_t tab_id) {
  auto dead = tabs_.find(tab_id);
  if (dead == tabs_.end()) return;
  // Its sessions go too: a late Target.detachedFromTarget of one must not close the new tab.
  std::erase_if(sessions_, [tab_id](const auto& entry) { return entry.second.tab_id == tab_id; });
  tabs_.erase(dead);
}

void BrowserConnection::give_chosen_id(const std::string& target_id, int64_t tab_id) {
  auto attached = std::find_if(tabs_.begin(), tabs_.end(), [&target_id](const auto& entry) {
    return entry.second.target_id == target_id && !entry.second.closed;
  });
  if (attached == tabs_.end()) {
    chosen_by_target_[target_id] = tab_id;  // on_attached gives it
    return;
  }
  choosing_tab_ids_.erase(tab_id);
  const int64_t provisional = attached->first;
  if (provisional == tab_id) return;
  // Attached first: renumbered before anyone outside the connection could have taken its provisional id
  // (create_tab has not returned it, no thread owns the tab), so that id was never a page's to anyone and
  // the next tab may have it.
  auto node = tabs_.extract(attached);
  used_tab_ids_.erase(provisional);
  if (provisional == next_tab_id_ - 1) --next_tab_id_;
  drop_crashed_tab(tab_id);
  node.key() = tab_id;
  node.mapped().tab_id = tab_id;
  node.mapped().touch();
  tabs_.insert(std::move(node));
  used_tab_ids_.insert(tab_id);
  for (auto& [session_id, info] : sessions_) {
    if (info.tab_id == provisional) info.tab_id = tab_id;
  }
  for (auto& [call_id, pending] : pending_calls_) {
    if (pending->tab_id == provisional) pending->tab_id = tab_id;
  }
  for (auto& [id, other] : tabs_) {
    if (other.opener_tab == provisional) other.opener_tab = tab_id;
  }
  changed();
}

TabState* BrowserConnection::tab_of_session(const std::string& session_id) {
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) return nullptr;
  auto owner = tabs_.find(it->second.tab_id);
  return owner == tabs_.end() ? nullptr : &owner->second;
}

}  // namespace keel::browser
