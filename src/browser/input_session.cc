#include "browser/input_session.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "browser/browser_errors.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

// Whether `session` still belongs to the tab as it is now in `connection`.
bool current(const InputSession& session, const std::shared_ptr<BrowserConnection>& connection,
             int64_t tab_id) {
  if (session.connection.lock() != connection) return false;
  const TabState* tab = connection->tab(tab_id);
  return tab != nullptr && !tab->closed && !tab->crashed && tab->target_id == session.target_id;
}

}  // namespace

asio::awaitable<Result<std::string>> input_session(std::shared_ptr<BrowserThread> thread, int64_t tab_id) {
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  if (!connection) co_return fail(codes::kBrowserCrashed, "the browser is not running");
  auto known = thread->input_sessions().find(tab_id);
  if (known != thread->input_sessions().end()) {
    if (current(known->second, connection, tab_id)) co_return known->second.session_id;
    thread->input_sessions().erase(known);  // its browser or page is gone: nothing left to release
  }
  const TabState* tab = connection->tab(tab_id);
  if (tab == nullptr || tab->closed) {
    co_return fail(codes::kBrowserNoSuchTab, "tab " + std::to_string(tab_id) + " is closed");
  }
  const std::string target_id = tab->target_id;
  CallOptions options;
  options.timeout = thread->runtime().options().command_timeout;
  json params = {{"targetId", target_id}, {"flatten", true}};
  Result<json> attached = co_await connection->call("Target.attachToTarget", std::move(params), "", options);
  if (!attached) co_return fail(attached.error());
  const std::string session_id = attached->value("sessionId", std::string());
  if (session_id.empty()) {
    co_return fail(codes::kBrowserAttachFailed,
                   "Target.attachToTarget gave no session for tab " + std::to_string(tab_id));
  }
  InputSession session;
  session.session_id = session_id;
  session.target_id = target_id;
  session.connection = connection;
  thread->input_sessions()[tab_id] = std::move(session);
  co_return session_id;
}

asio::awaitable<Result<json>> send_input(std::shared_ptr<BrowserThread> thread, int64_t tab_id,
                                         std::string method, json params, CallOptions options) {
  Result<std::string> session_id = co_await input_session(thread, tab_id);
  if (!session_id) co_return fail(session_id.error());
  // Noted before sending: a call cancelled while the page handles the event has still pressed the key.
  thread->input_sessions()[tab_id].held.note(method, params);
  co_return co_await thread->connection()->call(std::move(method), std::move(params), *session_id,
                                                std::move(options));
}

asio::awaitable<void> release_input(std::shared_ptr<BrowserThread> thread, std::chrono::milliseconds cap) {
  // Taken out first: a second cleanup (takeover and the cancelled op's own) finds nothing to do.
  std::map<int64_t, InputSession> sessions = std::exchange(thread->input_sessions(), {});
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  if (sessions.empty() || !connection || connection->exited()) co_return;
  const auto deadline = std::chrono::steady_clock::now() + cap;
  auto remaining = [deadline] {
    return std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                      deadline - std::chrono::steady_clock::now()));
  };
  for (const auto& [tab_id, entry] : sessions) {
    const InputSession session = entry;  // a copy: the loop suspends (docs/architecture.md, g++ 12)
    if (session.connection.lock() != connection) continue;
    std::vector<json> commands = session.held.release_events();
    commands.push_back({{"method", "Input.cancelDragging"}, {"params", json::object()}});
    for (size_t i = 0; i < commands.size(); ++i) {
      CallOptions options;
      options.timeout = remaining();
      const std::string method = commands[i].value("method", std::string());
      json params = commands[i].value("params", json::object());
      Result<json> sent = co_await connection->call(method, std::move(params), session.session_id, options);
      (void)sent;  // best effort: a page that is gone or stuck has nothing held that matters any more
    }
    CallOptions options;
    options.timeout = remaining();
    json detach = {{"sessionId", session.session_id}};
    Result<json> detached =
        co_await connection->call("Target.detachFromTarget", std::move(detach), "", options);
    (void)detached;  // a session the browser already dropped is detached too
  }
}

}  // namespace keel::browser
