// mcp/host/mcp_host.cc — McpHost (mcp_host.h).
//
// Locking: one mutex guards every server's state. Nothing that can call back into the host runs under it:
// session calls (list_tools may answer at once), session close, the factory, and the destruction of timer
// handles (a handle's destructor waits for its running callback, which takes the mutex) all happen after
// it is released; the functions below collect them in an Actions value that runs on scope exit.
#include "mcp/host/mcp_host.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "keel/error_codes.h"
#include "mcp/host/mcp_host_errors.h"
#include "mcp/host/session_factory.h"
#include "mcp/host/tool_names.h"

namespace keel::mcp {

std::string_view to_string(McpStart start) { return start == McpStart::kLazy ? "lazy" : "startup"; }

std::string_view to_string(McpServerState state) {
  switch (state) {
    case McpServerState::kDisabled:
      return "disabled";
    case McpServerState::kIdle:
      return "idle";
    case McpServerState::kConnecting:
      return "connecting";
    case McpServerState::kReady:
      return "ready";
    case McpServerState::kFailed:
      return "failed";
    case McpServerState::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::string McpServerSettings::endpoint() const {
  if (!url.empty()) return url;
  std::string line = command;
  for (const std::string& arg : args) line += " " + arg;
  return line;
}

namespace {

// Work that must run after the host's mutex is released, in this order.
struct Actions {
  std::vector<std::unique_ptr<ScheduledTask>> cancelled_timers;
  std::vector<std::shared_ptr<McpSession>> to_close;
  std::vector<std::function<void()>> then;

  Actions() = default;
  Actions(const Actions&) = delete;
  Actions& operator=(const Actions&) = delete;
  ~Actions() {
    cancelled_timers.clear();
    for (auto& session : to_close) session->close();
    for (auto& f : then) f();
  }
};

}  // namespace

struct McpHost::Core : std::enable_shared_from_this<McpHost::Core> {
  struct Server {
    McpServerSettings settings;
    McpServerState state = McpServerState::kIdle;
    uint64_t epoch = 0;  // one per connection attempt; callbacks of older attempts are ignored
    std::shared_ptr<McpSession> session;
    std::optional<Error> last_error;
    int failures = 0;
    std::optional<std::chrono::steady_clock::time_point> retry_at;
    std::unique_ptr<ScheduledTask> retry_timer;
    std::unique_ptr<ScheduledTask> connect_timer;
    uint64_t list_requests = 0;  // tools/list requests sent in this session
    uint64_t list_applied = 0;   // the newest one whose answer was applied
    std::map<std::string, std::shared_ptr<const ToolDescriptor>> registered;  // keel name -> descriptor
    std::vector<McpToolStatus> tools;
    std::vector<McpSkippedTool> skipped;
  };

  Core(McpSessionFactory factory_in, ToolRegistry& registry_in, const Clock& clock_in,
       Scheduler& scheduler_in, McpHostOptions options_in)
      : factory(std::move(factory_in)),
        registry(registry_in),
        clock(clock_in),
        scheduler(scheduler_in),
        options(options_in) {}

  McpSessionFactory factory;
  ToolRegistry& registry;
  const Clock& clock;
  Scheduler& scheduler;
  McpHostOptions options;

  mutable std::mutex mu;
  std::condition_variable settled;
  std::map<std::string, Server> servers;
  bool stopping = false;
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Worker> workers;

  // --- connecting ---

  // Precondition: mu held, server not connecting.
  void connect(Server& server, Actions& actions) {
    if (stopping) return;
    const uint64_t epoch = ++server.epoch;
    server.state = McpServerState::kConnecting;
    server.retry_at.reset();
    settled.notify_all();
    if (server.retry_timer) actions.cancelled_timers.push_back(std::move(server.retry_timer));
    std::weak_ptr<Core> weak = weak_from_this();
    const std::string name = server.settings.name;
    server.connect_timer = scheduler.schedule_after(server.settings.connect_timeout, [weak, name, epoch] {
      if (auto core = weak.lock()) {
        core->attempt_failed(
            name, epoch, Error(codes::kMcpConnectTimedOut, "MCP server " + name + " did not connect in time"),
            /*only_while_connecting=*/true);
      }
    });
    McpSessionEvents events;
    events.on_tools_changed = [weak, name, epoch] {
      if (auto core = weak.lock()) core->list(name, epoch);
    };
    events.on_closed = [weak, name, epoch](const Error& reason) {
      if (auto core = weak.lock()) core->attempt_failed(name, epoch, reason);
    };
    // Finished workers are joined here, so their number stays bounded by the attempts in flight.
    std::erase_if(workers, [](Worker& worker) {
      if (!worker.done->load()) return false;
      worker.thread.join();
      return true;
    });
    auto done = std::make_shared<std::atomic<bool>>(false);
    workers.push_back(Worker{std::thread([weak, settings = server.settings, events = std::move(events), epoch,
                                          factory = factory, done]() mutable {
                               Result<std::shared_ptr<McpSession>> session =
                                   factory(settings, std::move(events));
                               if (auto core = weak.lock())
                                 core->opened(settings.name, epoch, std::move(session));
                               done->store(true);
                             }),
                             done});
  }

  void opened(const std::string& name, uint64_t epoch, Result<std::shared_ptr<McpSession>> session) {
    if (!session) {
      attempt_failed(name, epoch, session.error());
      return;
    }
    if (*session == nullptr) {
      attempt_failed(name, epoch,
                     Error(codes::kMcpServerUnavailable, "the session factory returned no session"));
      return;
    }
    Actions actions;
    std::lock_guard lock(mu);
    auto it = servers.find(name);
    if (stopping || it == servers.end() || it->second.epoch != epoch ||
        it->second.state != McpServerState::kConnecting) {
      actions.to_close.push_back(std::move(*session));  // a late answer to an attempt given up on
      return;
    }
    it->second.session = std::move(*session);
    actions.then.emplace_back([self = shared_from_this(), name, epoch] { self->list(name, epoch); });
  }

  // Sends tools/list for the session of attempt `epoch` (after connecting, and on list_changed).
  void list(const std::string& name, uint64_t epoch) {
    std::shared_ptr<McpSession> session;
    uint64_t request = 0;
    {
      std::lock_guard lock(mu);
      auto it = servers.find(name);
      if (stopping || it == servers.end() || it->second.epoch != epoch || !it->second.session) return;
      session = it->second.session;
      request = ++it->second.list_requests;
    }
    std::weak_ptr<Core> weak = weak_from_this();
    session->list_tools([weak, name, epoch, request](Result<std::vector<McpToolInfo>> tools) {
      if (auto core = weak.lock()) core->listed(name, epoch, request, std::move(tools));
    });
  }

  void listed(const std::string& name, uint64_t epoch, uint64_t request,
              Result<std::vector<McpToolInfo>> tools) {
    if (!tools) {
      attempt_failed(name, epoch, tools.error());
      return;
    }
    Actions actions;
    std::lock_guard lock(mu);
    auto it = servers.find(name);
    if (stopping || it == servers.end() || it->second.epoch != epoch || !it->second.session) return;
    Server& server = it->second;
    if (request <= server.list_applied) return;  // an older list answered after a newer one
    server.list_applied = request;
    if (server.connect_timer) actions.cancelled_timers.push_back(std::move(server.connect_timer));
    sync_tools(server, *tools);
    server.state = McpServerState::kReady;
    server.failures = 0;
    server.last_error.reset();
    settled.notify_all();
  }

  // Brings the registry in step with `listed` (mu held).
  void sync_tools(Server& server, const std::vector<McpToolInfo>& listed) {
    const McpServerSettings& settings = server.settings;
    McpToolOrigin origin{settings.name, settings.endpoint(), settings.credential, settings.trusted,
                         settings.limits};
    std::weak_ptr<Core> weak = weak_from_this();
    McpSessionSource sessions = [weak, name = settings.name]() -> Result<std::shared_ptr<McpSession>> {
      auto core = weak.lock();
      if (!core) return fail(codes::kMcpServerUnavailable, "MCP server " + name + " was shut down");
      return core->session_of(name);
    };

    std::vector<std::string> server_names;
    server_names.reserve(listed.size());
    for (const McpToolInfo& info : listed) server_names.push_back(info.name);
    const std::vector<Result<std::string>> names = assign_tool_names(settings.name, server_names);

    // Unchanged tools stay as they are; changed and new ones, and the removal of vanished ones, go into
    // the registry as one new generation (replace_tools), so no turn binds a half-updated set.
    std::map<std::string, std::shared_ptr<const ToolDescriptor>> kept;
    std::vector<std::optional<McpToolStatus>> statuses(listed.size());
    std::vector<McpSkippedTool> skipped;
    std::vector<std::string> remove;
    std::vector<std::shared_ptr<AgentTool>> add;
    std::vector<size_t> added_index;  // the listed tool each entry of `add` came from
    std::set<std::string> listed_names;
    for (size_t i = 0; i < listed.size(); ++i) {
      const McpToolInfo& info = listed[i];
      if (!names[i]) {
        skipped.push_back({info.name, names[i].error()});
        continue;
      }
      auto tool = make_mcp_tool(info, *names[i], origin, sessions);
      if (!tool) {
        skipped.push_back({info.name, tool.error()});
        continue;
      }
      auto descriptor = make_tool_descriptor((*tool)->spec());
      if (!descriptor) {
        skipped.push_back({info.name, descriptor.error()});
        continue;
      }
      listed_names.insert(*names[i]);
      statuses[i] = McpToolStatus{*names[i], info.name, descriptor->effects, descriptor->recovery};
      const auto old = server.registered.find(*names[i]);
      if (old != server.registered.end() && old->second->digest == descriptor->digest) {
        kept[*names[i]] = old->second;
        continue;
      }
      if (old != server.registered.end()) remove.push_back(*names[i]);
      add.push_back(std::move(*tool));
      added_index.push_back(i);
    }
    for (const auto& [keel_name, descriptor] : server.registered) {
      if (!listed_names.contains(keel_name)) remove.push_back(keel_name);
    }
    const auto results = registry.replace_tools(remove, std::move(add));
    for (size_t j = 0; j < results.size(); ++j) {
      const size_t i = added_index[j];
      if (results[j]) {
        kept[statuses[i]->keel_name] = *results[j];
      } else {
        skipped.push_back({listed[i].name, results[j].error()});
        statuses[i].reset();
      }
    }
    server.tools.clear();
    for (auto& status : statuses) {
      if (status) server.tools.push_back(std::move(*status));
    }
    server.registered = std::move(kept);
    server.skipped = std::move(skipped);
  }

  Result<std::shared_ptr<McpSession>> session_of(const std::string& name) const {
    std::lock_guard lock(mu);
    auto it = servers.find(name);
    if (it == servers.end() || it->second.state != McpServerState::kReady || !it->second.session) {
      return fail(codes::kMcpServerUnavailable, "MCP server " + name + " is not connected");
    }
    return it->second.session;
  }

  // Attempt `epoch` failed or its session ended: tools out, reconnect later.
  // The connect timer passes only_while_connecting: its handle is released after the mutex, so it may still
  // fire just after the server became ready.
  void attempt_failed(const std::string& name, uint64_t epoch, const Error& reason,
                      bool only_while_connecting = false) {
    Actions actions;
    std::lock_guard lock(mu);
    auto it = servers.find(name);
    if (stopping || it == servers.end() || it->second.epoch != epoch) return;
    Server& server = it->second;
    const bool ends = server.state == McpServerState::kConnecting ||
                      (!only_while_connecting && server.state == McpServerState::kReady);
    if (!ends) return;
    ++server.epoch;  // anything still arriving for this attempt is stale
    if (server.session) actions.to_close.push_back(std::move(server.session));
    if (server.connect_timer) actions.cancelled_timers.push_back(std::move(server.connect_timer));
    unregister_all(server);
    server.state = McpServerState::kFailed;
    server.last_error = reason;
    ++server.failures;
    std::chrono::milliseconds delay = options.backoff_initial;
    for (int i = 1; i < server.failures && delay < options.backoff_max; ++i) delay *= 2;
    delay = std::min(delay, options.backoff_max);
    server.retry_at = clock.steady_now() + delay;
    const uint64_t retry_epoch = server.epoch;
    std::weak_ptr<Core> weak = weak_from_this();
    if (server.retry_timer) actions.cancelled_timers.push_back(std::move(server.retry_timer));
    server.retry_timer = scheduler.schedule_after(delay, [weak, name, retry_epoch] {
      if (auto core = weak.lock()) core->retry(name, retry_epoch);
    });
    settled.notify_all();
  }

  void retry(const std::string& name, uint64_t epoch) {
    Actions actions;
    std::lock_guard lock(mu);
    auto it = servers.find(name);
    if (stopping || it == servers.end() || it->second.epoch != epoch ||
        it->second.state != McpServerState::kFailed) {
      return;
    }
    // This runs inside the retry timer's own callback: its handle may be destroyed here (keel/scheduler.h).
    actions.cancelled_timers.push_back(std::move(it->second.retry_timer));
    connect(it->second, actions);
  }

  std::vector<McpServerStatus> status_locked() const {
    std::vector<McpServerStatus> out;
    for (const auto& [name, server] : servers) {
      out.push_back(McpServerStatus{name, server.state, server.last_error, server.failures, server.retry_at,
                                    server.tools, server.skipped});
    }
    return out;
  }

  void unregister_all(Server& server) {
    std::vector<std::string> names;
    for (const auto& [keel_name, descriptor] : server.registered) names.push_back(keel_name);
    if (!names.empty()) (void)registry.replace_tools(names, {});
    server.registered.clear();
    server.tools.clear();
  }
};

McpHost::McpHost(std::vector<McpServerSettings> servers, McpSessionFactory factory, ToolRegistry& registry,
                 const Clock& clock, Scheduler& scheduler, McpHostOptions options)
    : core_(std::make_shared<Core>(std::move(factory), registry, clock, scheduler, options)) {
  for (McpServerSettings& settings : servers) {
    Core::Server server;
    server.state = settings.enabled ? McpServerState::kIdle : McpServerState::kDisabled;
    const std::string name = settings.name;
    server.settings = std::move(settings);
    core_->servers.emplace(name, std::move(server));
  }
}

McpHost::~McpHost() { shutdown(); }

void McpHost::start() {
  Actions actions;
  std::lock_guard lock(core_->mu);
  for (auto& [name, server] : core_->servers) {
    if (server.state == McpServerState::kIdle && server.settings.start == McpStart::kStartup) {
      core_->connect(server, actions);
    }
  }
}

void McpHost::activate() {
  Actions actions;
  std::lock_guard lock(core_->mu);
  for (auto& [name, server] : core_->servers) {
    if (server.state == McpServerState::kIdle) core_->connect(server, actions);
  }
}

bool McpHost::wait_settled(std::chrono::milliseconds bound) {
  return wait_until(
      [](const std::vector<McpServerStatus>& servers) {
        return std::none_of(servers.begin(), servers.end(),
                            [](const McpServerStatus& s) { return s.state == McpServerState::kConnecting; });
      },
      bound);
}

bool McpHost::wait_until(const std::function<bool(const std::vector<McpServerStatus>&)>& done,
                         std::chrono::milliseconds bound) {
  std::unique_lock lock(core_->mu);
  return core_->settled.wait_for(lock, bound, [&] { return done(core_->status_locked()); });
}

std::vector<McpServerStatus> McpHost::status() const {
  std::lock_guard lock(core_->mu);
  return core_->status_locked();
}

void McpHost::shutdown() {
  std::vector<Core::Worker> workers;
  {
    Actions actions;
    std::lock_guard lock(core_->mu);
    if (core_->stopping) return;
    core_->stopping = true;
    for (auto& [name, server] : core_->servers) {
      ++server.epoch;
      if (server.session) actions.to_close.push_back(std::move(server.session));
      if (server.retry_timer) actions.cancelled_timers.push_back(std::move(server.retry_timer));
      if (server.connect_timer) actions.cancelled_timers.push_back(std::move(server.connect_timer));
      core_->unregister_all(server);
      server.retry_at.reset();
      if (server.state != McpServerState::kDisabled) server.state = McpServerState::kStopped;
    }
    workers.swap(core_->workers);
    core_->settled.notify_all();
  }
  for (auto& worker : workers) worker.thread.join();
}

}  // namespace keel::mcp
