#include "browser/browser_runtime.h"

#include <pthread.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <csignal>
#include <exception>
#include <utility>

#include "browser/browser_errors.h"
#include "browser/cdp/websocket_transport.h"
#include "browser/input_session.h"
#include "util/origin.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

constexpr std::chrono::seconds kFirstReplyTimeout{20};
constexpr std::chrono::hours kForever{24 * 365};
// The state file is written at most this long after a change (and at most once per this interval).
constexpr std::chrono::milliseconds kStateSaveDelay{200};
// Target.getTargets (the tabs' titles) for a save: answered by the browser process, never blocked by a page.
constexpr std::chrono::seconds kTitlesTimeout{2};
// After its pipe closes, Chromium shuts down by itself (measured: about 0.5 s) and writes its profile
// (cookies) first; Browser.close exits without writing the cookie store (measured). SIGKILL after this long.
constexpr std::chrono::seconds kCloseGrace{5};
// Attached to a person's browser: how long each command that gives back keel's tabs at shutdown may take.
constexpr std::chrono::seconds kReleaseTimeout{5};
// How long the interrupt cleanup of L2 input (releases, cancelDragging, detach) may take (plan §1.8).
constexpr std::chrono::milliseconds kInputCleanupCap{500};

// Prepends the notices to a result: to the first text block of a success, to an error's message.
Result<ToolResult> with_notices(Result<ToolResult> result, const std::vector<std::string>& notices) {
  if (notices.empty()) return result;
  std::string prefix;
  for (const std::string& notice : notices) prefix += notice + "\n";
  if (!result) return fail(Error(result.error().code(), prefix + result.error().message()));
  for (ContentBlock& block : result->content) {
    if (block.kind == ContentBlock::Kind::kText) {
      block.text = prefix + block.text;
      return result;
    }
  }
  ContentBlock block;
  block.text = std::move(prefix);
  result->content.insert(result->content.begin(), std::move(block));
  return result;
}

bool reopenable(const std::string& url) { return url.starts_with("http://") || url.starts_with("https://"); }

}  // namespace

// --- BrowserThread ---------------------------------------------------------------------------------------

std::shared_ptr<BrowserConnection> BrowserThread::connection() const {
  return runtime_->current_connection();
}

Result<int64_t> BrowserThread::tab(std::optional<int64_t> requested) const {
  if (!requested) {
    if (current_ == 0) {
      return fail(codes::kBrowserNoSuchTab,
                  "this thread has no tab yet: open a page with browser_navigate or browser_new_tab");
    }
    return current_;
  }
  if (std::find(tabs_.begin(), tabs_.end(), *requested) == tabs_.end()) {
    std::string known;
    for (int64_t id : tabs_) known += (known.empty() ? "" : ", ") + std::to_string(id);
    return fail(codes::kBrowserNoSuchTab, "no tab " + std::to_string(*requested) +
                                              " in this thread (tabs: " + (known.empty() ? "none" : known) +
                                              "; browser_list_tabs lists them)");
  }
  return *requested;
}

asio::awaitable<Result<int64_t>> BrowserThread::ensure_tab() {
  if (current_ != 0) co_return current_;
  std::shared_ptr<BrowserConnection> connection = runtime_->current_connection();
  if (!connection) co_return fail(codes::kBrowserCrashed, "the browser is not running");
  Result<int64_t> created = co_await connection->create_tab(runtime_->options().command_timeout);
  if (!created) co_return fail(created.error());
  adopt(*created);
  set_current(*created);
  runtime_->publish(*this);
  co_return *created;
}

void BrowserThread::set_current(int64_t tab_id) { current_ = tab_id; }

void BrowserThread::adopt(int64_t tab_id) {
  if (std::find(tabs_.begin(), tabs_.end(), tab_id) == tabs_.end()) tabs_.push_back(tab_id);
}

void BrowserThread::forget(int64_t tab_id) {
  std::erase(tabs_, tab_id);
  last_outlines_.erase(tab_id);
  last_urls_.erase(tab_id);
  last_boxes_.erase(tab_id);
  input_sessions_.erase(tab_id);  // went with its page
  if (current_ == tab_id) current_ = tabs_.empty() ? 0 : tabs_.back();
}

// --- BrowserRuntime --------------------------------------------------------------------------------------

std::shared_ptr<BrowserRuntime> BrowserRuntime::create(RuntimeOptions options) {
  return std::make_shared<BrowserRuntime>(PrivateTag(), std::move(options));
}

BrowserRuntime::BrowserRuntime(PrivateTag, RuntimeOptions options)
    : options_(std::move(options)),
      work_(asio::make_work_guard(io_)),
      save_schedule_(kStateSaveDelay),
      save_timer_(io_) {
  load_state();
  thread_ = std::thread([this] {
    // Every write to the browser's pipe happens on this thread. A browser that died makes the next write
    // raise SIGPIPE, which would end the whole process unless ignored (keel's CLI ignores it; a library must
    // not count on that): blocked here, the write fails with EPIPE and the connection reports the exit.
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
    io_.run();
  });
}

BrowserRuntime::~BrowserRuntime() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    for (auto& [id, queue] : queues_) {
      if (queue.in_flight) queue.in_flight->cancel("keel is shutting down");
    }
  }
  asio::co_spawn(io_, shut_down(this), asio::detached);
  thread_.join();
  connection_.reset();
  client_.reset();
  process_.reset();  // kills what is left of the browser's process group, removes a temporary profile
}

asio::awaitable<void> BrowserRuntime::shut_down(BrowserRuntime* self) {
  // The tabs as they are now, before closing the browser closes them: what the next keel reopens.
  if (!self->options_.state_file.empty()) {
    self->save_timer_.cancel();
    co_await self->save_state(/*final=*/true);
  }
  self->stop_.cancel("keel is shutting down");
  if (self->options_.attach && self->connection_ && !self->connection_->exited()) {
    // A person's browser: keel takes away what it opened, and leaves the browser and their tabs running.
    Result<void> released = co_await self->connection_->release(kReleaseTimeout);
    (void)released;  // an own context goes with keel's connection anyway (disposeOnDetach)
  }
  if (self->process_ && !self->process_->exit_status()) {
    if (self->client_) {
      self->client_->close(Error(codes::kCancelled, "keel is shutting down"));
      asio::steady_timer deadline(self->io_, kCloseGrace);
      BrowserProcess* process = self->process_.get();
      deadline.async_wait([process](const boost::system::error_code& error) {
        if (!error) process->signal_group(SIGKILL);
      });
      co_await self->process_->wait_exit();
      deadline.cancel();
    } else {
      co_await self->process_->terminate(std::chrono::seconds(2));
    }
  }
  if (self->client_) self->client_->close(Error(codes::kCancelled, "keel is shutting down"));
  self->work_.reset();
  self->io_.stop();
}

void BrowserRuntime::submit(std::string thread_id, CancellationToken cancel, BrowserOp op,
                            std::function<void(Result<ToolResult>)> done) {
  bool start = false;
  {
    MutexLock lock(mu_);
    if (stopping_) {
      asio::post(io_, [done] { done(fail(codes::kCancelled, "keel is shutting down")); });
      return;
    }
    if (!threads_.contains(thread_id)) threads_[thread_id] = std::make_shared<BrowserThread>(thread_id, this);
    Queue& queue = queues_[thread_id];
    queue.waiting.push_back(Pending{std::move(cancel), std::move(op), std::move(done)});
    start = !queue.running;
    queue.running = true;
  }
  // `this`, not a shared_ptr: the last reference must never be dropped on the runtime's own thread (its
  // destructor joins that thread). The destructor runs every pending handler's end before members go.
  if (start) asio::post(io_, [this, thread_id] { start_next(thread_id); });
}

void BrowserRuntime::start_next(const std::string& thread_id) {
  Pending next;
  {
    MutexLock lock(mu_);
    Queue& queue = queues_[thread_id];
    if (queue.waiting.empty()) {
      queue.running = false;
      queue.in_flight.reset();
      return;
    }
    next = std::move(queue.waiting.front());
    queue.waiting.pop_front();
    queue.in_flight = std::make_shared<CancellationSource>();
  }
  asio::co_spawn(io_, run_op(this, thread_id, std::move(next)), asio::detached);
}

asio::awaitable<void> BrowserRuntime::run_op(BrowserRuntime* self, std::string thread_id, Pending pending) {
  std::shared_ptr<CancellationSource> source;
  std::shared_ptr<BrowserThread> thread;
  bool taken_over = false;
  {
    MutexLock lock(self->mu_);
    source = self->queues_[thread_id].in_flight;
    thread = self->threads_[thread_id];
    taken_over = self->taken_over_.contains(thread_id);
  }
  // The call's own token (interrupt) and the runtime's (shutdown) both cancel the op.
  CancellationRegistration by_call = pending.cancel.on_cancel([source] { source->cancel("interrupted"); });
  CancellationRegistration by_stop = self->stop_.token().on_cancel([source] { source->cancel("shutdown"); });
  Result<ToolResult> result = fail(codes::kInternal, "the browser operation did not run");
  if (taken_over) {
    result = fail(codes::kBrowserTakenOver,
                  "a person has taken the browser over; no page tool runs until they hand it back");
  } else if (source->is_cancelled()) {
    result = fail(codes::kCancelled, "cancelled before it started");
  } else {
    Result<std::shared_ptr<BrowserConnection>> connection = co_await self->connect();
    if (!connection) {
      result = fail(connection.error());
    } else {
      if (self->to_reopen_.contains(thread_id)) co_await self->reopen_saved_tabs(thread, source->token());
      try {
        co_await self->reopen_crashed_tabs(thread);
        result = co_await pending.op(thread, source->token());
      } catch (const std::exception& e) {
        // A bug in an op: the call fails, the runtime goes on.
        result = fail(codes::kInternal, std::string("browser operation failed: ") + e.what());
      }
    }
  }
  result = with_notices(std::move(result), thread->take_notices());
  self->publish(*thread);
  pending.done(std::move(result));
  // Interrupt cleanup (plan §1.8): a cancelled op may have left keys or buttons down, or a drag running, in
  // an L2 input session. After `done` (the engine does not wait for it), before the thread's next op.
  if (source->is_cancelled() && !thread->input_sessions().empty()) {
    co_await release_input(thread, kInputCleanupCap);
  }
  self->start_next(thread_id);
}

asio::awaitable<Result<std::shared_ptr<BrowserConnection>>> BrowserRuntime::connect() {
  if (connection_ && !connection_->exited()) co_return connection_;
  Result<void> launched = co_await launch();
  if (!launched) co_return fail(launched.error());
  co_return connection_;
}

asio::awaitable<Result<void>> BrowserRuntime::launch() {
  std::optional<Error> previous_exit;
  if (connection_) previous_exit = connection_->exited();
  if (connection_) tab_high_water_ = std::max(tab_high_water_, connection_->highest_tab_id());
  connection_.reset();
  if (client_) client_->close(Error(codes::kBrowserCrashed, "relaunching"));
  client_.reset();
  process_.reset();
  {
    MutexLock lock(mu_);
    pid_ = 0;
    attached_ = false;
  }
  if (options_.attach) {
    Result<void> attached = co_await attach_browser();
    if (!attached) co_return fail(attached.error());
  } else {
    Result<void> started = co_await start_browser();
    if (!started) co_return fail(started.error());
  }
  ConnectionOptions connection_options;
  connection_options.setup_timeout = options_.command_timeout;
  if (options_.attach) {
    connection_options.ownership = options_.attach->own_context ? BrowserOwnership::kAttachedOwnContext
                                                                : BrowserOwnership::kAttachedDefaultContext;
  }
  connection_options.download_dir = options_.download_dir;
  // New tabs get ids above every earlier one; the reopened tabs take their old ids back.
  connection_options.tab_ids_above = tab_high_water_;
  // The navigation guard: every document request and every commit of a tab is held to the policy of the
  // thread that owns the tab (a popup not yet adopted: its opener's tab; no owner at all: "", which a
  // policy answers for no thread in particular).
  connection_options.navigation_guard = [this](int64_t tab_id, const PausedDocumentRequest& request) {
    return decide_paused_request(request, owner_of(tab_id), policy());
  };
  connection_options.commit_check = [this](int64_t tab_id, std::string_view url, FrameKind frame) {
    return check_committed_url(url, frame, owner_of(tab_id), policy());
  };
  Result<std::shared_ptr<BrowserConnection>> connection =
      co_await BrowserConnection::start(client_, std::move(connection_options));
  if (!connection) co_return fail(connection.error());
  connection_ = std::move(*connection);
  ++launches_;
  {
    MutexLock lock(mu_);
    pid_ = process_ ? process_->pid() : 0;
    attached_ = options_.attach.has_value();
  }
  if (launches_ > 1) co_await restore_tabs(connection_);
  asio::co_spawn(io_, watch(this, connection_, stop_.token()), asio::detached);
  co_return Result<void>{};
}

asio::awaitable<Result<void>> BrowserRuntime::start_browser() {
  Result<std::unique_ptr<BrowserProcess>> process =
      BrowserProcess::launch(io_.get_executor(), options_.launch);
  if (!process) co_return fail(process.error());
  process_ = std::move(*process);
  client_ = CdpClient::create(io_.get_executor(), process_->take_transport());
  client_->start();
  CallOptions first;
  first.timeout = kFirstReplyTimeout;
  Result<json> version = co_await client_->call("Browser.getVersion", json::object(), "", std::move(first));
  if (!version) {
    std::string tail = process_->stderr_tail(800);
    process_.reset();
    co_return fail(codes::kBrowserLaunchFailed,
                   "Chromium started but did not answer: " + version.error().message() + "\n" + tail);
  }
  co_return Result<void>{};
}

asio::awaitable<Result<void>> BrowserRuntime::attach_browser() {
  const std::string endpoint = options_.attach->endpoint;
  // Only the browser keel was told to attach to: when it is gone, keel says so (and starts none instead).
  const std::string gone = "; keel attaches only to the browser at " + endpoint +
                           " (started with --remote-debugging-port) and never starts one in its place";
  Result<std::unique_ptr<CdpTransport>> transport = co_await connect_websocket(
      io_.get_executor(), endpoint, options_.launch.max_message_bytes, kFirstReplyTimeout);
  if (!transport) co_return fail(Error(codes::kBrowserAttachFailed, transport.error().message() + gone));
  client_ = CdpClient::create(io_.get_executor(), std::move(*transport));
  client_->start();
  CallOptions first;
  first.timeout = kFirstReplyTimeout;
  Result<json> version = co_await client_->call("Browser.getVersion", json::object(), "", std::move(first));
  if (!version) {
    client_->close(Error(codes::kBrowserAttachFailed, "no answer"));
    client_.reset();
    co_return fail(codes::kBrowserAttachFailed,
                   "the browser at " + endpoint + " did not answer: " + version.error().message() + gone);
  }
  co_return Result<void>{};
}

asio::awaitable<void> BrowserRuntime::restore_tabs(std::shared_ptr<BrowserConnection> connection) {
  std::vector<std::shared_ptr<BrowserThread>> threads;
  {
    MutexLock lock(mu_);
    for (const auto& [id, thread] : threads_) threads.push_back(thread);
  }
  for (const std::shared_ptr<BrowserThread>& thread : threads) {
    if (thread->tabs_.empty()) continue;
    thread->refs().invalidate_all("the browser was relaunched");
    const std::vector<int64_t> old_tabs = thread->tabs_;
    const int64_t old_current = thread->current_;
    std::map<int64_t, std::string> urls = thread->last_urls_;
    thread->tabs_.clear();
    thread->current_ = 0;
    thread->last_outlines_.clear();
    thread->last_urls_.clear();
    thread->last_boxes_.clear();
    std::vector<ReopenedTab> reopened;
    for (int64_t old_tab : old_tabs) {
      const std::string url = urls.contains(old_tab) && reopenable(urls[old_tab]) ? urls[old_tab] : "";
      CancellationToken never;
      ReopenedTab outcome = co_await reopen_tab(connection, thread, old_tab, url, never);
      reopened.push_back(std::move(outcome));
    }
    // The current tab stays current (the last one when it could not be reopened).
    const bool current_back =
        std::find(thread->tabs_.begin(), thread->tabs_.end(), old_current) != thread->tabs_.end();
    if (current_back) {
      thread->set_current(old_current);
    } else if (!thread->tabs_.empty()) {
      thread->set_current(thread->tabs_.back());
    }
    for (ReopenedTab& tab : reopened) tab.current = tab.opened && tab.tab_id == thread->current_;
    thread->add_notice(restart_notice(reopened, ReopenCause::kBrowserRelaunched,
                                      !options_.launch.profile_dir.empty(), options_.attach.has_value()));
    publish(*thread);
  }
}

asio::awaitable<void> BrowserRuntime::reopen_crashed_tabs(std::shared_ptr<BrowserThread> thread) {
  std::shared_ptr<BrowserConnection> connection = connection_;
  const std::vector<int64_t> tabs = thread->tabs_;
  for (int64_t old_tab : tabs) {
    const TabState* state = connection->tab(old_tab);
    if (state == nullptr || !state->crashed) continue;
    const std::string url = thread->last_urls_.contains(old_tab) ? thread->last_urls_[old_tab] : "";
    const bool was_current = thread->current_ == old_tab;
    const size_t position = static_cast<size_t>(
        std::find(thread->tabs_.begin(), thread->tabs_.end(), old_tab) - thread->tabs_.begin());
    thread->refs().invalidate_tab(old_tab, "the tab crashed");
    Result<void> closed = co_await connection->close_tab(old_tab, options_.command_timeout);
    (void)closed;  // a crashed tab may already be gone; it is forgotten either way
    thread->forget(old_tab);
    // The replacement takes the crashed tab's id (and its place in the thread's list): `tab: N` still
    // means that page.
    std::optional<int64_t> same_id = old_tab;
    Result<int64_t> reopened = co_await connection->create_tab(options_.command_timeout, same_id);
    if (!reopened) {
      thread->add_notice("Tab " + std::to_string(old_tab) +
                         " crashed and could not be reopened; it is gone: " + reopened.error().message());
      publish(*thread);
      continue;
    }
    if (std::find(thread->tabs_.begin(), thread->tabs_.end(), *reopened) == thread->tabs_.end()) {
      thread->tabs_.insert(
          thread->tabs_.begin() + static_cast<std::ptrdiff_t>(std::min(position, thread->tabs_.size())),
          *reopened);
    }
    if (was_current || thread->current_ == 0) thread->set_current(*reopened);
    std::string notice = "Tab " + std::to_string(old_tab) + " had crashed; it was reopened under the same id";
    if (reopenable(url)) {
      CancellationToken never;
      Result<void> loaded = co_await connection->navigate(*reopened, url, options_.navigation_timeout, never);
      notice += " at " + url + " (GET, nothing re-submitted" +
                (loaded ? std::string(")") : "; it did not load: " + loaded.error().message() + ")");
    }
    thread->add_notice(notice + ". Refs from earlier snapshots of it no longer work: take a new snapshot.");
    publish(*thread);
  }
}

asio::awaitable<void> BrowserRuntime::watch(BrowserRuntime* self,
                                            std::shared_ptr<BrowserConnection> connection,
                                            CancellationToken stop) {
  // wait_until re-evaluates its predicate after every change of any tab: publishing from it keeps the views
  // current, and returning false keeps it waiting until the browser exits or keel stops.
  std::function<bool()> on_change = [self, connection] {
    if (self->connection_ == connection) self->publish_all();
    return false;
  };
  Result<void> ended = co_await connection->wait_until(std::move(on_change), kForever, std::move(stop));
  (void)ended;  // the browser exited (the next op relaunches it) or keel is stopping
  if (self->connection_ == connection) self->publish_all();
}

void BrowserRuntime::publish_all() {
  std::vector<std::shared_ptr<BrowserThread>> threads;
  {
    MutexLock lock(mu_);
    for (const auto& [id, thread] : threads_) threads.push_back(thread);
  }
  for (const std::shared_ptr<BrowserThread>& thread : threads) publish(*thread);
}

void BrowserRuntime::publish(BrowserThread& thread) {
  ThreadView view;
  if (connection_ && !connection_->exited()) {
    for (int64_t tab_id : std::vector<int64_t>(thread.tabs_)) {
      const TabState* state = connection_->tab(tab_id);
      if (state == nullptr || state->closed) {
        thread.refs().invalidate_tab(tab_id, "the tab was closed");
        thread.forget(tab_id);
        continue;
      }
      TabView tab;
      tab.tab_id = tab_id;
      tab.crashed = state->crashed;
      tab.title = state->title;
      if (state->modal) {
        tab.modal = state->modal->kind == ModalState::Kind::kFileChooser
                        ? "a file chooser"
                        : "a " + state->modal->dialog_type + " dialog";
      }
      if (const FrameState* main = state->main_frame()) {
        tab.url = main->url;
        tab.origin = main->origin == "null" ? "" : main->origin;
        if (reopenable(main->url)) thread.last_urls_[tab_id] = main->url;
      }
      for (const auto& [frame_id, frame] : state->frames) tab.frame_origins[frame_id] = frame.origin;
      view.tabs[tab_id] = std::move(tab);
    }
  } else {
    for (int64_t tab_id : thread.tabs_) {
      TabView tab;
      tab.tab_id = tab_id;
      tab.crashed = true;
      view.tabs[tab_id] = std::move(tab);
    }
  }
  view.current_tab = thread.current_;
  schedule_save();
  MutexLock lock(mu_);
  views_[thread.id()] = std::move(view);
}

namespace {
// The policy of a runtime created without one: every http(s) origin (tests, and tools run outside keel's
// engine); schemes and URLs without an origin are still refused by the guard's own rules.
class AnyOrigin final : public OriginPolicy {
 public:
  bool allows_navigation(const std::string&, const std::string&) const override { return true; }
};
}  // namespace

const OriginPolicy& BrowserRuntime::policy() const {
  static const AnyOrigin kAnyOrigin;
  return options_.policy ? *options_.policy : kAnyOrigin;
}

// --- Restart recovery ------------------------------------------------------------------------------------

void BrowserRuntime::load_state() {
  if (options_.state_file.empty()) return;
  Result<std::optional<BrowserState>> loaded = load_browser_state_file(options_.state_file);
  if (!loaded) {
    state_file_error_ = loaded.error();
    if (options_.on_state_file_error) options_.on_state_file_error(loaded.error());
    return;
  }
  if (!*loaded) return;  // a first start
  MutexLock lock(mu_);
  for (const auto& [id, saved] : (*loaded)->threads) {
    auto thread = std::make_shared<BrowserThread>(id, this);
    // Refs up to these marks are now "from before keel restarted" (decoding checked them with RefTable's
    // own rules, so this cannot fail).
    if (!thread->refs().restore_high_water(saved.ref_high_water)) continue;
    threads_[id] = std::move(thread);
    if (!saved.tabs.empty()) to_reopen_[id] = saved;
  }
  tab_high_water_ = (*loaded)->tab_high_water;
  last_saved_ = std::move(**loaded);
}

asio::awaitable<ReopenedTab> BrowserRuntime::reopen_tab(std::shared_ptr<BrowserConnection> connection,
                                                        std::shared_ptr<BrowserThread> thread, int64_t tab_id,
                                                        std::string url, CancellationToken cancel) {
  ReopenedTab outcome;
  outcome.tab_id = tab_id;
  outcome.url = url;
  std::optional<int64_t> same_id = tab_id;
  Result<int64_t> tab = co_await connection->create_tab(options_.command_timeout, same_id);
  if (!tab) {
    outcome.problem = tab.error().message();
    co_return outcome;
  }
  outcome.opened = true;
  thread->adopt(*tab);
  if (!url.empty()) {
    // Page.navigate: a GET of the last URL, never a reload that could re-submit a form.
    Result<void> loaded = co_await connection->navigate(*tab, url, options_.navigation_timeout, cancel);
    if (!loaded) outcome.problem = loaded.error().message();
  }
  co_return outcome;
}

asio::awaitable<void> BrowserRuntime::reopen_saved_tabs(std::shared_ptr<BrowserThread> thread,
                                                        CancellationToken cancel) {
  auto saved = to_reopen_.extract(thread->id());
  if (saved.empty()) co_return;
  const std::vector<ReopenTab> plan = reopen_plan(saved.mapped());
  std::shared_ptr<BrowserConnection> connection = connection_;
  std::vector<ReopenedTab> reopened;
  for (size_t i = 0; i < plan.size(); ++i) {
    const ReopenTab planned = plan[i];
    ReopenedTab outcome = co_await reopen_tab(connection, thread, planned.old_tab, planned.url, cancel);
    if (outcome.opened && (planned.current || thread->current() == 0)) thread->set_current(planned.old_tab);
    reopened.push_back(std::move(outcome));
  }
  for (ReopenedTab& tab : reopened) tab.current = tab.opened && tab.tab_id == thread->current();
  thread->add_notice(restart_notice(reopened, ReopenCause::kKeelRestarted,
                                    !options_.launch.profile_dir.empty(), options_.attach.has_value()));
  publish(*thread);
}

void BrowserRuntime::schedule_save() {
  if (options_.state_file.empty() || stop_.token().is_cancelled()) return;
  const std::optional<StateSaveSchedule::Clock::time_point> due =
      save_schedule_.changed(StateSaveSchedule::Clock::now());
  if (!due) return;
  save_timer_.expires_at(*due);
  save_timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error && !stop_.token().is_cancelled())
      asio::co_spawn(io_, save_state(/*final=*/false), asio::detached);
  });
}

asio::awaitable<void> BrowserRuntime::save_state(bool final) {
  save_schedule_.fired();
  // TabState has no titles (Chromium sends no event when a page's title changes); the browser knows them.
  std::map<std::string, std::string> titles;
  if (connection_ && !connection_->exited()) {
    CallOptions options;
    options.timeout = kTitlesTimeout;
    Result<json> targets =
        co_await connection_->call("Target.getTargets", json::object(), "", std::move(options));
    if (targets && targets->contains("targetInfos") && (*targets)["targetInfos"].is_array()) {
      for (const json& info : (*targets)["targetInfos"]) {
        if (info.is_object() && info.value("targetId", json()).is_string() &&
            info.value("title", json()).is_string()) {
          titles[info["targetId"].get<std::string>()] = info["title"].get<std::string>();
        }
      }
    }
  }
  // After shutdown began, the closing browser's tabs must not overwrite what shut_down saved.
  if (!final && stop_.token().is_cancelled()) co_return;
  BrowserState state = current_state(titles);
  if (last_saved_ ? *last_saved_ == state : state.threads.empty()) co_return;
  Result<void> saved = save_browser_state_file(options_.state_file, state);
  if (!saved) {
    if (!save_failing_ && options_.on_state_file_error) options_.on_state_file_error(saved.error());
    save_failing_ = true;
    co_return;
  }
  save_failing_ = false;
  last_saved_ = std::move(state);
}

BrowserState BrowserRuntime::current_state(const std::map<std::string, std::string>& titles) const {
  BrowserState state;
  state.profile = options_.launch.profile_dir.string();
  state.tab_high_water = std::max(tab_high_water_, connection_ ? connection_->highest_tab_id() : 0);
  std::vector<std::shared_ptr<BrowserThread>> threads;
  {
    MutexLock lock(mu_);
    for (const auto& [id, thread] : threads_) threads.push_back(thread);
  }
  for (const std::shared_ptr<BrowserThread>& thread : threads) {
    if (thread->id().empty()) continue;
    auto pending = to_reopen_.find(thread->id());
    if (pending != to_reopen_.end()) {
      // Not used since the restart: kept as it was, for the next one.
      SavedThread saved = pending->second;
      saved.ref_high_water = thread->refs().high_water();
      state.threads[thread->id()] = std::move(saved);
      continue;
    }
    std::vector<LiveTab> tabs;
    for (int64_t tab_id : thread->tabs_) {
      LiveTab tab;
      tab.tab_id = tab_id;
      auto url = thread->last_urls_.find(tab_id);
      if (url != thread->last_urls_.end()) tab.url = url->second;
      const TabState* live = connection_ ? connection_->tab(tab_id) : nullptr;
      if (live != nullptr) {
        auto title = titles.find(live->target_id);
        tab.title = title != titles.end() ? title->second : live->title;
      }
      tabs.push_back(std::move(tab));
    }
    SavedThread saved = saved_thread(tabs, thread->current_, thread->refs().high_water());
    if (worth_saving(saved)) state.threads[thread->id()] = std::move(saved);
  }
  return state;
}

std::string BrowserRuntime::owner_of(int64_t tab_id) const {
  MutexLock lock(mu_);
  for (const auto& [id, thread] : threads_) {
    if (std::find(thread->tabs_.begin(), thread->tabs_.end(), tab_id) != thread->tabs_.end()) return id;
  }
  return "";
}

ThreadView BrowserRuntime::view(const std::string& thread_id) const {
  MutexLock lock(mu_);
  auto it = views_.find(thread_id);
  return it == views_.end() ? ThreadView{} : it->second;
}

std::shared_ptr<BrowserThread> BrowserRuntime::thread_state(const std::string& thread_id) {
  MutexLock lock(mu_);
  std::shared_ptr<BrowserThread>& thread = threads_[thread_id];
  if (!thread) thread = std::make_shared<BrowserThread>(thread_id, this);
  return thread;
}

bool BrowserRuntime::busy(const std::string& thread_id) const {
  MutexLock lock(mu_);
  auto it = queues_.find(thread_id);
  return it != queues_.end() && it->second.running;
}

int BrowserRuntime::browser_pid() const {
  MutexLock lock(mu_);
  return pid_;
}

asio::awaitable<void> BrowserRuntime::hand_over_input(BrowserRuntime* self,
                                                      std::shared_ptr<BrowserThread> thread) {
  co_await release_input(thread, kInputCleanupCap);
  std::shared_ptr<BrowserConnection> connection = self->connection_;
  const TabState* tab = connection && !connection->exited() ? connection->tab(thread->current()) : nullptr;
  if (tab == nullptr) co_return;
  CallOptions options;
  options.timeout = kInputCleanupCap;
  Result<json> front =
      co_await connection->call("Page.bringToFront", json::object(), tab->session_id, options);
  (void)front;  // the person can pick the tab themselves
}

Result<json> BrowserRuntime::take_over(const std::string& thread_id) {
  json tabs = json::array();
  std::shared_ptr<BrowserThread> thread;
  {
    MutexLock lock(mu_);
    taken_over_.insert(thread_id);
    auto queue = queues_.find(thread_id);
    if (queue != queues_.end() && queue->second.in_flight) {
      queue->second.in_flight->cancel("a person took the browser over");
    }
    auto view = views_.find(thread_id);
    if (view != views_.end()) {
      for (const auto& [id, tab] : view->second.tabs) tabs.push_back({{"tab", id}, {"url", tab.url}});
    }
    thread = threads_.contains(thread_id) ? threads_[thread_id] : nullptr;
  }
  // The person gets a browser with nothing held down by keel and no keel input attached, showing the
  // thread's current tab (plan §1.8).
  if (thread) asio::co_spawn(io_, hand_over_input(this, thread), asio::detached);
  // A browser keel attached to is the person's own, with its windows.
  const bool headed = options_.attach || !options_.launch.headless;
  return json{{"headed", headed}, {"tabs", std::move(tabs)}};
}

Result<json> BrowserRuntime::hand_back(const std::string& thread_id) {
  std::shared_ptr<BrowserThread> thread;
  {
    MutexLock lock(mu_);
    if (taken_over_.erase(thread_id) == 0) return json{{"changed", false}};
    auto it = threads_.find(thread_id);
    if (it != threads_.end()) thread = it->second;
  }
  if (thread) {
    thread->refs().invalidate_all("a person used the browser since that snapshot");
    asio::post(io_, [thread] {
      thread->add_notice("A person used the browser and handed it back: take a new snapshot before acting.");
    });
  }
  return json{{"changed", true}};
}

json BrowserRuntime::state() const {
  MutexLock lock(mu_);
  json held = json::array();
  for (const std::string& thread_id : taken_over_) held.push_back(thread_id);
  return json{{"takenOverThreads", std::move(held)}, {"running", pid_ != 0 || attached_}};
}

}  // namespace keel::browser
