// browser/browser_connection.h — keel's view of one running browser: its tabs, their frames and sessions,
// keel's isolated world in every frame, crashes and the browser's exit.
//
// What it guarantees:
//   - start() makes the browser attach every page and iframe target to keel paused
//     (Target.setAutoAttach{autoAttach, waitForDebuggerOnStart, flatten}, recursively for out-of-process
//     iframes) and sets each session up before its scripts run: Page.enable, lifecycle events,
//     Runtime.enable, Network.enable (pages), Page.getFrameTree, the page scripts registered for the isolated
//     world `keel` (Page.addScriptToEvaluateOnNewDocument{worldName, runImmediately}), then
//     Runtime.runIfWaitingForDebugger. Other targets (workers) are resumed and detached.
//   - Every page target is a tab (ids 1, 2, … in attach order). Its TabState is updated from its sessions'
//     events, in arrival order, on the client's executor.
//   - A tab whose renderer crashed (Target.targetCrashed, Inspector.targetCrashed) is marked crashed: its
//     sessions' pending calls fail now, and later calls on it fail at once, with browser.tab_crashed. The
//     browser and its other tabs keep working.
//   - When the connection ends (the browser exited or was killed), every pending and later call made through
//     this object fails with browser.crashed; nothing waits for a reply that cannot come.
//
// Threading: create, use and destroy it on the CdpClient's executor (a strand or single-threaded io_context).
// It is shared (create() gives a shared_ptr) because its event handlers and coroutines keep it alive.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "browser/cdp/cdp_client.h"
#include "browser/tab.h"
#include "keel/cancellation.h"
#include "keel/error.h"

namespace keel::browser {

struct ConnectionOptions {
  std::chrono::milliseconds setup_timeout{30'000};  // each command of start() and of a session's setup
};

class BrowserConnection : public std::enable_shared_from_this<BrowserConnection> {
 public:
  // Subscribes to `client`'s events, then switches target discovery and auto-attach on. The tab of the
  // browser's first page (about:blank) appears as tab 1 once its session is set up.
  static boost::asio::awaitable<Result<std::shared_ptr<BrowserConnection>>> start(
      std::shared_ptr<CdpClient> client, ConnectionOptions options);
  // Only for start() (make_shared needs a public constructor; the tag keeps others out).
  struct PrivateTag {
    explicit PrivateTag() = default;
  };
  BrowserConnection(PrivateTag, std::shared_ptr<CdpClient> client, ConnectionOptions options);
  BrowserConnection(const BrowserConnection&) = delete;
  BrowserConnection& operator=(const BrowserConnection&) = delete;

  // A command through the connection: on a crashed tab's session it fails at once with browser.tab_crashed,
  // after the browser's exit with browser.crashed (browser.disconnected from the client becomes that too).
  boost::asio::awaitable<Result<nlohmann::json>> call(std::string method, nlohmann::json params,
                                                      std::string session_id, CallOptions options);

  // Opens a page at about:blank and waits until its session is set up. Returns the tab id.
  boost::asio::awaitable<Result<int64_t>> create_tab(std::chrono::milliseconds timeout);
  // Target.closeTarget; the tab is removed when its target detaches.
  boost::asio::awaitable<Result<void>> close_tab(int64_t tab_id, std::chrono::milliseconds timeout);
  // Page.navigate of the tab's main frame, then waits for the new document's DOMContentLoaded. A navigation
  // the browser refuses or cannot complete (net::ERR_…) is browser.navigation_failed. No reply in time (a
  // server that never answers) is browser.cdp_timeout, and that load is stopped (Page.stopLoading).
  boost::asio::awaitable<Result<void>> navigate(int64_t tab_id, std::string url,
                                                std::chrono::milliseconds timeout, CancellationToken cancel);

  // Waits until `ready()` is true, re-checking after every change of any tab's state; browser.cdp_timeout
  // after `timeout`, browser.crashed when the browser exits first, `cancelled` when the token fires.
  boost::asio::awaitable<Result<void>> wait_until(std::function<bool()> ready,
                                                  std::chrono::milliseconds timeout,
                                                  CancellationToken cancel);

  // The tab's state (nullptr when there is no such tab). Do not keep the pointer across a suspension: events
  // change and remove tabs meanwhile.
  const TabState* tab(int64_t tab_id) const;
  std::vector<int64_t> tab_ids() const;
  // The browser's exit, once the connection ended.
  const std::optional<Error>& exited() const { return exited_; }
  CdpClient& client() { return *client_; }

 private:
  struct SessionInfo {
    int64_t tab_id = 0;  // 0: not a page or frame session
    std::string target_id;
    std::string type;    // "page" | "iframe" | other
    bool ready = false;  // set up and resumed
  };

  void on_event(const CdpEvent& event);
  void on_attached(const CdpEvent& event);
  void on_detached(const std::string& session_id);
  void on_crashed(const std::string& target_id, const std::string& status);
  void on_exit(const Error& why);
  void changed();
  TabState* tab_of_session(const std::string& session_id);
  // Sets a new session up and resumes it (see the header comment).
  static boost::asio::awaitable<void> set_up_session(std::shared_ptr<BrowserConnection> self,
                                                     std::string session_id, std::string type);

  std::shared_ptr<CdpClient> client_;
  ConnectionOptions options_;
  CdpClient::Subscription events_;
  CdpClient::Subscription close_;
  std::map<int64_t, TabState> tabs_;
  std::map<std::string, SessionInfo> sessions_;
  int64_t next_tab_id_ = 1;
  std::optional<Error> exited_;
  // Waiters of wait_until: each a timer that changed() cancels.
  std::vector<std::shared_ptr<boost::asio::steady_timer>> waiters_;
};

}  // namespace keel::browser
