// browser/browser_connection.h — keel's view of one running browser: its tabs, their frames and sessions,
// keel's isolated world in every frame, crashes and the browser's exit.
//
// What it guarantees:
//   - A browser keel launched (BrowserOwnership::kLaunched) is all keel's: start() makes it attach every page
//     and iframe target to keel paused
//     (Target.setAutoAttach{autoAttach, waitForDebuggerOnStart, flatten}, recursively for out-of-process
//     iframes) and sets each session up before its scripts run: Page.enable, lifecycle events,
//     Runtime.enable, Network.enable (pages), Page.getFrameTree, the page scripts registered for the isolated
//     world `keel` (Page.addScriptToEvaluateOnNewDocument{worldName, runImmediately}), then
//     Runtime.runIfWaitingForDebugger. Other targets (workers) are resumed and detached.
//   - A browser keel attached to (a person's, kAttachedOwnContext / kAttachedDefaultContext) is not: keel
//     attaches only to the pages it opens (create_tab: Target.createTarget, then Target.attachToTarget) and
//     to the popups those open (Target.targetCreated naming a keel tab as opener); their sessions auto-attach
//     their own frames. The person's other tabs are never attached, paused, listed or intercepted: no
//     browser-wide auto-attach, the navigation guard's Fetch is enabled per keel session, and the download
//     rule is set for keel's own browser context only (in the default context, not at all). With an own
//     context, keel's tabs live in a context start() creates and release() disposes.
//   - Every page target keel attached is a tab. Its id is the one create_tab was asked to give it, or else
//   the next one in
//     attach order above ConnectionOptions::tab_ids_above (1, 2, … by default); an id never comes back to
//     mean another page in the connection's life (only the replacement of a crashed tab may take its id). Its
//     TabState is updated from its sessions' events, in arrival order, on the client's executor.
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
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "browser/cdp/cdp_client.h"
#include "browser/origin_guard.h"
#include "browser/tab.h"
#include "keel/cancellation.h"
#include "keel/error.h"

namespace keel::browser {

// Whose browser it is (see the header comment).
enum class BrowserOwnership {
  kLaunched,                // keel started it: every target is keel's
  kAttachedOwnContext,      // a person's: keel's tabs in a browser context keel creates and disposes
  kAttachedDefaultContext,  // a person's: keel's tabs in the person's default context (their logins)
};

struct ConnectionOptions {
  BrowserOwnership ownership = BrowserOwnership::kLaunched;
  std::chrono::milliseconds setup_timeout{30'000};  // each command of start() and of a session's setup
  // Decides each paused document request (unset = no Fetch guard). `tab_id` is the tab whose frame asked:
  // for a popup whose tab does not exist yet, its opener's tab when Chromium named the opener
  // (Target.targetCreated's openerId); 0 when keel cannot tell — the guard must then decide without a tab
  // (refuse unless the URL is one every thread may reach). Called on the connection's executor; quick.
  std::function<GuardDecision(int64_t tab_id, const PausedDocumentRequest&)> navigation_guard;
  // Checks a frame's committed URL (Page.frameNavigated); unset = no check.
  std::function<GuardDecision(int64_t tab_id, std::string_view url, FrameKind)> commit_check;
  // Where downloads are saved, each under its guid (Browser.setDownloadBehavior allowAndName); "" = downloads
  // are denied.
  std::filesystem::path download_dir;
  // The clock of the dialog-loop rule (injectable for tests); unset = std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> clock;
  // The tabs the connection numbers itself get ids above this: the highest id an earlier browser's tabs
  // had, so that none of them comes back to mean another page (their own reopened tabs take theirs back
  // through create_tab).
  int64_t tab_ids_above = 0;
};

class BrowserConnection : public std::enable_shared_from_this<BrowserConnection> {
 public:
  // Subscribes to `client`'s events, then switches target discovery and auto-attach on. The tab of the
  // browser's first page (about:blank) appears as tab 1 once its session is set up. Attached to a person's
  // browser: creates keel's browser context (own) and switches discovery on; no tab appears by itself.
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

  // Opens a page at about:blank and waits until its session is set up. Returns the tab id: `tab_id` when
  // given, else the next one. A chosen id must be positive and free: invalid_argument when a tab of this
  // connection has or had it, or another create_tab is giving it — except a crashed tab's id, which its
  // replacement takes over (the crashed tab is then forgotten).
  boost::asio::awaitable<Result<int64_t>> create_tab(std::chrono::milliseconds timeout,
                                                     std::optional<int64_t> tab_id = std::nullopt);
  // Attached to a person's browser: gives it back as keel found it — disposes keel's browser context (which
  // closes its tabs), or in the default context closes the tabs keel opened. Nothing for a launched one.
  boost::asio::awaitable<Result<void>> release(std::chrono::milliseconds timeout);
  // Target.closeTarget; the tab is removed when its target detaches.
  boost::asio::awaitable<Result<void>> close_tab(int64_t tab_id, std::chrono::milliseconds timeout);
  // Page.navigate of the tab's main frame, then waits for the new document's DOMContentLoaded. A navigation
  // the browser refuses or cannot complete (net::ERR_…) is browser.navigation_failed. No reply in time (a
  // server that never answers) is browser.cdp_timeout, and that load is stopped (Page.stopLoading).
  boost::asio::awaitable<Result<void>> navigate(int64_t tab_id, std::string url,
                                                std::chrono::milliseconds timeout, CancellationToken cancel);

  // Answers the tab's open JavaScript dialog (Page.handleJavaScriptDialog{accept, promptText}) on the session
  // it came from, and clears the modal state. browser.no_modal when no dialog is open on the tab.
  boost::asio::awaitable<Result<void>> handle_dialog(int64_t tab_id, bool accept, std::string prompt_text,
                                                     std::chrono::milliseconds timeout);
  // Gives the tab's open file chooser its files (DOM.setFileInputFiles{files, backendNodeId} on the chooser's
  // session; no files = nothing chosen) and clears the modal state. browser.no_modal when no chooser is open.
  boost::asio::awaitable<Result<void>> set_chooser_files(int64_t tab_id, std::vector<std::string> files,
                                                         std::chrono::milliseconds timeout);

  // Waits until `ready()` is true, re-checking after every change of any tab's state; browser.cdp_timeout
  // after `timeout`, browser.crashed when the browser exits first, `cancelled` when the token fires.
  boost::asio::awaitable<Result<void>> wait_until(std::function<bool()> ready,
                                                  std::chrono::milliseconds timeout,
                                                  CancellationToken cancel);

  // The tab's state (nullptr when there is no such tab). Do not keep the pointer across a suspension: events
  // change and remove tabs meanwhile.
  const TabState* tab(int64_t tab_id) const;
  std::vector<int64_t> tab_ids() const;
  // The highest tab id given so far, or ConnectionOptions::tab_ids_above when higher.
  int64_t highest_tab_id() const { return next_tab_id_ - 1; }
  // The browser's exit, once the connection ended.
  const std::optional<Error>& exited() const { return exited_; }
  // The browser context keel's tabs open in ("" = the browser's default context).
  const std::string& browser_context_id() const { return browser_context_id_; }
  CdpClient& client() { return *client_; }

 private:
  struct SessionInfo {
    int64_t tab_id = 0;  // 0: not a page or frame session
    std::string target_id;
    std::string type;    // "page" | "iframe" | other
    bool ready = false;  // set up and resumed
  };

  // A call through call() that a dialog may fail early (see the header comment).
  struct PendingCall {
    int64_t tab_id = 0;
    std::string method;
    std::shared_ptr<CancellationSource> stop;
    std::optional<Error> modal;  // set when a dialog ended the call
  };

  void on_event(const CdpEvent& event);
  void on_dialog_opening(const CdpEvent& event, TabState& owner);
  void on_request_paused(const CdpEvent& event);
  void on_frame_committed(const CdpEvent& event, TabState& owner);
  void on_download(const CdpEvent& event);
  // The tab whose frame (or page target) has this id, or nullptr.
  TabState* tab_of_frame(const std::string& frame_id);
  // browser.modal_open for the tab's open dialog or chooser.
  static Error modal_error(const TabState& tab);
  std::chrono::steady_clock::time_point now() const;
  // Title and URL of a page target from Target.getTargetInfo.
  static boost::asio::awaitable<void> refresh_target_info(std::shared_ptr<BrowserConnection> self,
                                                          std::string target_id);
  bool attached_to_persons_browser() const { return options_.ownership != BrowserOwnership::kLaunched; }
  // Attached to a person's browser: attaches to a page a keel tab opened (Target.targetCreated).
  void adopt_popup(const nlohmann::json& target_info);
  // Attached to a person's browser: a popup may have committed its first document before keel's session
  // (and its Fetch guard) was set up; a URL the guard refuses is replaced by about:blank and reported.
  void check_adopted_page(TabState& tab);
  void on_attached(const CdpEvent& event);
  void on_detached(const std::string& session_id);
  void on_crashed(const std::string& target_id, const std::string& status);
  void on_exit(const Error& why);
  void changed();
  TabState* tab_of_session(const std::string& session_id);
  // Whether create_tab may give this id (see there); a message saying why not otherwise.
  std::optional<std::string> chosen_id_refused(int64_t tab_id) const;
  // Makes room for a chosen id: a crashed tab that had it is forgotten with its sessions.
  void drop_crashed_tab(int64_t tab_id);
  // The target that create_tab opened with a chosen id is known: its tab takes the id now if it is
  // attached already (renumbered from the one it got), else when it attaches.
  void give_chosen_id(const std::string& target_id, int64_t tab_id);
  // Sets a new session up and resumes it (see the header comment).
  static boost::asio::awaitable<void> set_up_session(std::shared_ptr<BrowserConnection> self,
                                                     std::string session_id, std::string type);

  std::shared_ptr<CdpClient> client_;
  ConnectionOptions options_;
  CdpClient::Subscription events_;
  CdpClient::Subscription close_;
  std::map<int64_t, TabState> tabs_;
  std::map<std::string, SessionInfo> sessions_;
  std::map<uint64_t, std::shared_ptr<PendingCall>> pending_calls_;
  uint64_t next_call_ = 0;
  // Recent dialogs per document ("<session> <loader or url>"): their opening times, for the loop rule.
  std::map<std::string, std::deque<std::chrono::steady_clock::time_point>> recent_dialogs_;
  // Openers of targets Chromium announced (Target.targetCreated/targetInfoChanged): target id -> opener's.
  std::map<std::string, std::string> openers_;
  int64_t next_tab_id_ = 1;
  std::string browser_context_id_;
  // Attached to a person's browser: targets keel asked to attach to (Target.attachToTarget sent).
  std::set<std::string> attaching_;
  std::set<int64_t> used_tab_ids_;                   // every id a tab of this connection had
  std::set<int64_t> choosing_tab_ids_;               // chosen ids of create_tab calls under way
  std::map<std::string, int64_t> chosen_by_target_;  // target id -> chosen id, until its tab attaches
  std::optional<Error> exited_;
  // Waiters of wait_until: each a timer that changed() cancels.
  std::vector<std::shared_ptr<boost::asio::steady_timer>> waiters_;
};

}  // namespace keel::browser
