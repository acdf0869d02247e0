// browser/browser_runtime.h — the browser the tools act on: one Chromium on its own I/O thread, the tabs and
// refs of every agent thread, and the order in which their operations run.
//
// What it guarantees:
//   - Every CDP exchange runs on the runtime's own thread (never an engine thread). Tools hand it an
//     operation with submit(); the operations of one agent thread run one at a time, in submission order,
//     and `done` is called exactly once for each, from the runtime's thread.
//   - The browser is launched lazily, by the first operation. When it has exited or crashed, the next
//     operation launches a new one, reopens the thread's tabs at their last URLs under their old ids, marks
//     every ref stale and starts its result with a notice saying so; nothing is clicked on the strength of an
//     old ref. A crashed tab is replaced under its id too. Any other new tab (a popup included) gets an id
//     above every id given before, in this keel run and, with a state file, in earlier ones.
//   - Tabs belong to the agent thread that opened them (a popup to its opener's thread); each thread has a
//     current tab. A thread never sees, and its refs never name, another thread's tabs.
//   - resolve_target and previews read an immutable view of the tabs (ThreadView), published on the
//     runtime's thread after every change, without waiting for the browser.
//   - With a state file (RuntimeOptions::state_file), the tabs of every thread (URL, title, which is
//     current) and its ref counters are written to it on the runtime's thread, at most StateSaveSchedule's
//     delay after a change and once more at shutdown. A new runtime reads it: at the first operation of a
//     thread listed there it launches the browser (in the same profile when it is persistent), reopens that
//     thread's tabs at their last URLs under their old ids (GET, never a reload) and starts the result with a
//     notice; refs from before are answered with browser.unknown_ref "from before keel restarted". A file
//     that cannot be read is reported (state_file_error(), on_state_file_error) and ignored.
//   - With RuntimeOptions::attach, the first operation attaches to a browser a person runs instead of
//     launching one. keel works only in the tabs it opens (and their popups), in its own browser context
//     by default; the person's tabs are never attached, paused or listed. When that browser went away, the
//     op fails with browser.crashed and the next one attaches again to the same endpoint (reopening the
//     threads' tabs), or fails with browser.attach_failed naming it: keel never starts or kills a browser it
//     did not launch. At shutdown keel disposes its context (or closes its tabs in the default context) and
//     disconnects; the browser and the person's tabs stay.
//   - While a person holds the browser (take_over), every operation fails with browser.taken_over; the
//     operations in flight are cancelled, held keys and buttons released and the L2 sessions detached.
//   - The destructor cancels everything, closes the browser and joins the thread. Work on the runtime's
//     thread refers to the runtime by pointer, never by shared_ptr, so the last reference is dropped by its
//     owner (never on that thread, which could not join itself). Destroy it only after its tools are gone.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "browser/browser_connection.h"
#include "browser/browser_process.h"
#include "browser/browser_restore.h"
#include "browser/browser_state_file.h"
#include "browser/input.h"
#include "browser/origin_guard.h"
#include "browser/ref_table.h"
#include "keel/cancellation.h"
#include "keel/error.h"
#include "keel/takeover.h"
#include "keel/tool.h"
#include "tools/builtin/workspace.h"
#include "util/thread_annotations.h"

namespace keel::browser {

// A browser a person runs, to attach to instead of launching one (docs/browser.md "Attach to a running
// browser").
struct AttachSpec {
  // "http://127.0.0.1:9222" (GET /json/version names the WebSocket) or the browser's "ws://" URL; loopback
  // only.
  std::string endpoint;
  // true: keel's tabs live in a browser context of keel's own, disposed at shutdown; false: in the person's
  // default context (their logins), and keel closes the tabs it opened at shutdown.
  bool own_context = true;
};

struct RuntimeOptions {
  LaunchSpec launch;  // unused when `attach` is set
  // Set: the runtime attaches to this browser instead of launching one (see the header comment).
  std::optional<AttachSpec> attach;
  std::chrono::milliseconds command_timeout{30'000};
  std::chrono::milliseconds navigation_timeout{15'000};
  std::chrono::milliseconds screenshot_timeout{10'000};
  // How long the page must stay quiet after an action before its report is written.
  std::chrono::milliseconds settle_quiet{30};
  // The longest an action waits for the requests it started (then the report says "still loading").
  std::chrono::milliseconds settle_requests{5'000};
  size_t snapshot_max_chars = 12'000;
  std::filesystem::path download_dir;  // "" = downloads are denied
  // Whether a thread's pages may go to an origin (the navigation guard). Null: every http(s) origin.
  std::shared_ptr<const OriginPolicy> policy;
  // The workspace folder uploads come from; null = browser_upload_file refuses every file.
  std::shared_ptr<const builtin::Workspace> workspace;
  // <data_dir>/browser/state.json (browser_state_file.h): what a keel restart reopens. "" = nothing is kept.
  std::filesystem::path state_file;
  // Told when the state file cannot be read (it is then ignored) or written (reported once until a write
  // succeeds again). Called on the thread that creates the runtime, or on the runtime's thread.
  std::function<void(const Error&)> on_state_file_error;
};

// What resolve_target sees of a tab.
struct TabView {
  int64_t tab_id = 0;
  std::string url;
  std::string origin;  // the main frame's; "" for about:blank
  std::string title;
  bool crashed = false;
  std::string modal;                                 // "" or the dialog/chooser, as the error would name it
  std::map<std::string, std::string> frame_origins;  // frame id -> origin
};

struct ThreadView {
  int64_t current_tab = 0;  // 0: the thread has no tab yet
  std::map<int64_t, TabView> tabs;
};

class BrowserRuntime;

// A tab's L2 input session: a second CDP session to the tab's page (Target.attachToTarget), through which
// trusted input and screenshots go, so that "detaching L2" is a real detach (browser/input_session.h).
struct InputSession {
  std::string session_id;
  std::string target_id;
  // The connection it belongs to: after a relaunch the reopened tabs have the same ids, the session is gone.
  std::weak_ptr<BrowserConnection> connection;
  HeldInput held;  // what keel's input through this session holds down now
};

// One agent thread's browser state. Only on the runtime's thread (ops get it by reference).
class BrowserThread {
 public:
  BrowserThread(std::string id, BrowserRuntime* runtime) : id_(std::move(id)), runtime_(runtime) {}
  const std::string& id() const { return id_; }
  BrowserRuntime& runtime() { return *runtime_; }
  RefTable& refs() { return refs_; }
  std::shared_ptr<BrowserConnection> connection() const;

  // The tab a call names (`requested`) or the current one: browser.no_such_tab when it is not this
  // thread's, or when the thread has none and `requested` is unset.
  Result<int64_t> tab(std::optional<int64_t> requested) const;
  // The current tab, opening one (about:blank) when the thread has none.
  boost::asio::awaitable<Result<int64_t>> ensure_tab();
  void set_current(int64_t tab_id);
  int64_t current() const { return current_; }
  const std::vector<int64_t>& tabs() const { return tabs_; }
  void adopt(int64_t tab_id);
  void forget(int64_t tab_id);

  // Text to put before the next result (a relaunch, events that came after the last report).
  void add_notice(std::string notice) { notices_.push_back(std::move(notice)); }
  std::vector<std::string> take_notices() { return std::exchange(notices_, {}); }

  // The last snapshot's full outline of each tab (for the next diff).
  std::map<int64_t, std::vector<std::string>>& last_outlines() { return last_outlines_; }
  // Last committed URL of each tab (to reopen after a relaunch).
  std::map<int64_t, std::string>& last_urls() { return last_urls_; }
  // The L2 input session of each tab that used one (attached on first L2 use, detached on interrupt and
  // takeover).
  std::map<int64_t, InputSession>& input_sessions() { return input_sessions_; }
  // The ref boxes ({ref, x, y, w, h}, main-viewport CSS px) of the last snapshot of each tab, for
  // browser_screenshot's details.
  std::map<int64_t, nlohmann::json>& last_boxes() { return last_boxes_; }

 private:
  friend class BrowserRuntime;
  std::string id_;
  BrowserRuntime* runtime_;
  RefTable refs_;
  std::vector<int64_t> tabs_;
  int64_t current_ = 0;
  std::vector<std::string> notices_;
  std::map<int64_t, std::vector<std::string>> last_outlines_;
  std::map<int64_t, std::string> last_urls_;
  std::map<int64_t, InputSession> input_sessions_;
  std::map<int64_t, nlohmann::json> last_boxes_;
};

// An operation on one thread's browser state. Parameters by value (coroutine); the cancellation token
// fires on interrupt, takeover and shutdown.
using BrowserOp = std::function<boost::asio::awaitable<Result<ToolResult>>(std::shared_ptr<BrowserThread>,
                                                                           CancellationToken)>;

class BrowserRuntime final : public TakeoverTarget {
 public:
  // Starts the runtime's thread; the browser itself starts with the first operation.
  static std::shared_ptr<BrowserRuntime> create(RuntimeOptions options);
  // Only for create() (make_shared needs a public constructor; the tag keeps others out).
  struct PrivateTag {
    explicit PrivateTag() = default;
  };
  BrowserRuntime(PrivateTag, RuntimeOptions options);
  ~BrowserRuntime() override;
  BrowserRuntime(const BrowserRuntime&) = delete;
  BrowserRuntime& operator=(const BrowserRuntime&) = delete;

  // Runs `op` for `thread_id` (see the header comment). Thread-safe; returns at once.
  void submit(std::string thread_id, CancellationToken cancel, BrowserOp op,
              std::function<void(Result<ToolResult>)> done) EXCLUDES(mu_);

  // The thread's tabs as last published; empty for a thread that never used the browser. Any thread.
  ThreadView view(const std::string& thread_id) const EXCLUDES(mu_);
  // The thread's ref table (created on first use; refs are thread-safe). Any thread.
  std::shared_ptr<BrowserThread> thread_state(const std::string& thread_id) EXCLUDES(mu_);

  const RuntimeOptions& options() const { return options_; }
  // Whether an operation of the thread is running or waiting. Any thread.
  bool busy(const std::string& thread_id) const EXCLUDES(mu_);
  // The running browser's pid (0 when none). For tests that kill it.
  int browser_pid() const EXCLUDES(mu_);
  // Why the state file given in the options was not used (unreadable, unsafe, damaged); nullopt when it
  // was read or there was none. Any thread.
  const std::optional<Error>& state_file_error() const { return state_file_error_; }

  // TakeoverTarget.
  std::string_view name() const override { return "browser"; }
  Result<nlohmann::json> take_over(const std::string& thread_id) override EXCLUDES(mu_);
  Result<nlohmann::json> hand_back(const std::string& thread_id) override EXCLUDES(mu_);
  nlohmann::json state() const override EXCLUDES(mu_);

  // Runtime-thread only: the connection, launching the browser when there is none or it exited.
  boost::asio::awaitable<Result<std::shared_ptr<BrowserConnection>>> connect();
  std::shared_ptr<BrowserConnection> current_connection() const { return connection_; }
  // Runtime-thread only: publishes `thread`'s view (after a change of its tabs).
  void publish(BrowserThread& thread) EXCLUDES(mu_);
  // Runtime-thread only: which thread owns a tab (for the navigation guard). "" = none.
  std::string owner_of(int64_t tab_id) const EXCLUDES(mu_);
  // The origin policy (every http(s) origin when RuntimeOptions::policy is null).
  const OriginPolicy& policy() const;
  boost::asio::io_context& io() { return io_; }

 private:
  struct Pending {
    CancellationToken cancel;
    BrowserOp op;
    std::function<void(Result<ToolResult>)> done;
  };
  struct Queue {
    std::deque<Pending> waiting;
    bool running = false;
    std::shared_ptr<CancellationSource> in_flight;  // cancels the running op (takeover, shutdown)
  };

  void start_next(const std::string& thread_id);
  static boost::asio::awaitable<void> run_op(BrowserRuntime* self, std::string thread_id, Pending pending);
  // Launches the browser, or attaches to the person's (RuntimeOptions::attach); then the connection.
  boost::asio::awaitable<Result<void>> launch();
  // The CDP client of a newly started browser (process_ set), or of the browser attached to.
  boost::asio::awaitable<Result<void>> start_browser();
  boost::asio::awaitable<Result<void>> attach_browser();
  // Before an op: a tab of the thread whose renderer crashed is replaced by a new tab under its id, at its
  // last URL (GET), with a notice; its refs are stale.
  boost::asio::awaitable<void> reopen_crashed_tabs(std::shared_ptr<BrowserThread> thread);
  // Opens a tab of `thread` under `tab_id` (its id before the restart) and loads `url` with a GET ("" = left
  // blank): how it fared, for the restart notice. The thread adopts the tab when it opened.
  boost::asio::awaitable<ReopenedTab> reopen_tab(std::shared_ptr<BrowserConnection> connection,
                                                 std::shared_ptr<BrowserThread> thread, int64_t tab_id,
                                                 std::string url, CancellationToken cancel);
  // After a relaunch: reopen every thread's tabs at their last URLs under their old ids.
  boost::asio::awaitable<void> restore_tabs(std::shared_ptr<BrowserConnection> connection);
  // Keeps the published views and last URLs true to the connection's tab states.
  static boost::asio::awaitable<void> watch(BrowserRuntime* self,
                                            std::shared_ptr<BrowserConnection> connection,
                                            CancellationToken stop);
  static boost::asio::awaitable<void> shut_down(BrowserRuntime* self);
  // take_over's cleanup: releases and detaches the thread's L2 input, brings its current tab to front.
  static boost::asio::awaitable<void> hand_over_input(BrowserRuntime* self,
                                                      std::shared_ptr<BrowserThread> thread);
  void publish_all();

  // Restart recovery (see the header comment). load_state runs in the constructor, before the thread.
  void load_state() EXCLUDES(mu_);
  // At a thread's first op after a restart: reopens its saved tabs and adds the notice.
  boost::asio::awaitable<void> reopen_saved_tabs(std::shared_ptr<BrowserThread> thread,
                                                 CancellationToken cancel);
  void schedule_save();
  // Writes the state when it changed. `final`: shut_down's own save (the timer's saves stop at shutdown).
  boost::asio::awaitable<void> save_state(bool final);
  BrowserState current_state(const std::map<std::string, std::string>& titles) const EXCLUDES(mu_);

  RuntimeOptions options_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;

  // Runtime thread only.
  std::unique_ptr<BrowserProcess> process_;
  std::shared_ptr<CdpClient> client_;
  std::shared_ptr<BrowserConnection> connection_;
  int64_t launches_ = 0;
  CancellationSource stop_;                       // ends the watcher and every op at shutdown
  std::map<std::string, SavedThread> to_reopen_;  // saved threads whose tabs their first op reopens
  // The highest tab id of the earlier browsers (and keel runs): a new browser's tabs get ids above it.
  int64_t tab_high_water_ = 0;
  StateSaveSchedule save_schedule_;
  boost::asio::steady_timer save_timer_;
  std::optional<BrowserState> last_saved_;  // what the file holds (as far as this runtime wrote or read it)
  bool save_failing_ = false;               // the last write failed (and was reported)
  std::optional<Error> state_file_error_;   // set in the constructor only

  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<BrowserThread>> threads_ GUARDED_BY(mu_);
  std::map<std::string, Queue> queues_ GUARDED_BY(mu_);
  std::map<std::string, ThreadView> views_ GUARDED_BY(mu_);
  std::set<std::string> taken_over_ GUARDED_BY(mu_);  // threads whose browser a person holds
  int pid_ GUARDED_BY(mu_) = 0;
  bool attached_ GUARDED_BY(mu_) = false;  // connected to a browser keel attached to
  bool stopping_ GUARDED_BY(mu_) = false;
};

}  // namespace keel::browser
