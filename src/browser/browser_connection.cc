#include "browser/browser_connection.h"

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

}  // namespace

BrowserConnection::BrowserConnection(PrivateTag, std::shared_ptr<CdpClient> client, ConnectionOptions options)
    : client_(std::move(client)), options_(options) {}

asio::awaitable<Result<std::shared_ptr<BrowserConnection>>> BrowserConnection::start(
    std::shared_ptr<CdpClient> client, ConnectionOptions options) {
  auto self = std::make_shared<BrowserConnection>(PrivateTag(), std::move(client), options);
  std::weak_ptr<BrowserConnection> weak = self;
  self->events_ = self->client_->listen([weak](const CdpEvent& event) {
    if (auto locked = weak.lock()) locked->on_event(event);
  });
  self->close_ = self->client_->on_close([weak](const Error& why) {
    if (auto locked = weak.lock()) locked->on_exit(why);
  });
  json discover = {{"discover", true}};
  CallOptions discover_options;
  discover_options.timeout = options.setup_timeout;
  Result<json> discovering =
      co_await self->call("Target.setDiscoverTargets", std::move(discover), "", std::move(discover_options));
  if (!discovering) co_return fail(discovering.error());
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
  if (!session_id.empty()) {
    const TabState* owner = tab_of_session(session_id);
    if (owner != nullptr && owner->crashed) {
      co_return fail(codes::kBrowserTabCrashed, "tab " + std::to_string(owner->tab_id) + " crashed");
    }
  }
  std::shared_ptr<BrowserConnection> keep_alive = shared_from_this();
  Result<json> reply =
      co_await client_->call(std::move(method), std::move(params), std::move(session_id), std::move(options));
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
  if (event.session_id.empty()) return;
  TabState* owner = tab_of_session(event.session_id);
  if (owner != nullptr && owner->apply(event)) changed();
}

void BrowserConnection::on_attached(const CdpEvent& event) {
  const std::string session_id = text_of(event.params, "sessionId");
  const json& info = event.params.contains("targetInfo") ? event.params["targetInfo"] : json();
  const std::string target_id = text_of(info, "targetId");
  const std::string type = text_of(info, "type");
  if (session_id.empty()) return;
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
    tab.tab_id = next_tab_id_++;
    tab.target_id = target_id;
    tab.session_id = session_id;
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
  commands.push_back({"Page.enable", json::object()});
  commands.push_back({"Page.setLifecycleEventsEnabled", json{{"enabled", true}}});
  commands.push_back({"Runtime.enable", json::object()});
  if (type == "page") commands.push_back({"Network.enable", json::object()});
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
    }
  }
  // A command that failed (the target went away meanwhile) leaves the session as it is; later calls on it
  // report what happened.
  self->client_->notify("Runtime.runIfWaitingForDebugger", json::object(), session_id);
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

asio::awaitable<Result<int64_t>> BrowserConnection::create_tab(std::chrono::milliseconds timeout) {
  std::shared_ptr<BrowserConnection> self = shared_from_this();
  json params = {{"url", "about:blank"}};
  CallOptions options;
  options.timeout = timeout;
  Result<json> created = co_await call("Target.createTarget", std::move(params), "", std::move(options));
  if (!created) co_return fail(created.error());
  const std::string target_id = text_of(*created, "targetId");
  if (target_id.empty()) co_return fail(codes::kBrowserCdpError, "Target.createTarget gave no targetId");
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

const TabState* BrowserConnection::tab(int64_t tab_id) const {
  auto it = tabs_.find(tab_id);
  return it == tabs_.end() ? nullptr : &it->second;
}

std::vector<int64_t> BrowserConnection::tab_ids() const {
  std::vector<int64_t> ids;
  for (const auto& [id, state] : tabs_) ids.push_back(id);
  return ids;
}

TabState* BrowserConnection::tab_of_session(const std::string& session_id) {
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) return nullptr;
  auto owner = tabs_.find(it->second.tab_id);
  return owner == tabs_.end() ? nullptr : &owner->second;
}

}  // namespace keel::browser
