#include "cli/engine_host.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>

#include "browser/tools/register.h"
#include "cli/browser_setup.h"
#include "cli/gatekeeper_origin_policy.h"
#include "cli/mcp_sessions.h"
#include "cli/model_binding.h"
#include "cli/skill_setup.h"
#include "cli/store_files.h"
#include "config/credential_resolver.h"
#include "config/credential_vault.h"
#include "config/master_key.h"
#include "engine/engine_core.h"
#include "keel/clock.h"
#include "keel/ids.h"
#include "keel/sqlite_store.h"
#include "keel/tool_registry.h"
#include "mcp/host/mcp_host.h"
#include "mcp/host/server_settings.h"
#include "policy/policy_gatekeeper.h"
#include "providers/http/http_client.h"
#include "skills/read_skill_tool.h"
#include "tools/builtin/builtin_tools.h"
#include "transport/direct_transport.h"
#include "util/fail_points.h"
#include "util/terminal_text.h"
#include "util/thread_scheduler.h"

namespace keel::cli {
namespace fs = std::filesystem;

namespace {

// The pid of the process holding an flock on the file `fd` refers to, from /proc/locks; "?" when it cannot
// be told (another kernel, a pid namespace that hides it). Only for the refusal's message.
std::string flock_holder(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return "?";
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    // "3: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's line has "->" after the index.
    std::istringstream in(line);
    std::string index, type, mode, access, pid, id;
    in >> index >> type >> mode >> access >> pid >> id;
    if (type != "FLOCK") continue;
    unsigned major_id = 0, minor_id = 0;
    unsigned long long inode = 0;
    if (std::sscanf(id.c_str(), "%x:%x:%llu", &major_id, &minor_id, &inode) != 3) continue;
    if (major_id == major(st.st_dev) && minor_id == minor(st.st_dev) && inode == st.st_ino) return pid;
  }
  return "?";
}

// Takes an exclusive flock on the database file itself, without waiting. Locking the file rather than a
// name derived from its path makes every spelling of the store (a symlink, a hard link, `..` in the path)
// meet the same lock: the kernel keeps flocks per inode. flock is independent of the POSIX byte-range
// locks SQLite takes on the same file, and the descriptor stays open until after the store is closed (closing
// a descriptor of the file would drop SQLite's POSIX locks of this process). The lock goes with the process,
// so a SIGKILLed engine never leaves the store locked.
Result<int> lock_store(const fs::path& store_path) {
  // O_CREAT: an empty file is what SQLite makes of a new store anyway (docs/store.md, Opening a database).
  const int fd = ::open(store_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return fail(codes::kStoreOpen, "cannot open " + store_path.string() + ": " + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) {  // no lock support here (ENOLCK...): not another engine
      const std::string reason = std::strerror(errno);
      ::close(fd);
      return fail(codes::kStoreOpen, "cannot lock " + store_path.string() + ": " + reason);
    }
    const std::string pid = flock_holder(fd);
    ::close(fd);
    return fail(kStoreInUse, "another keel engine (pid " + pid + ") is running on " + store_path.string() +
                                 " (through this or another name of the same file); stop it, or connect to "
                                 "it with a client");
  }
  return fd;
}

}  // namespace

StoreHandle::StoreHandle(StoreHandle&& other) noexcept
    : store(std::move(other.store)), lock_fd(std::exchange(other.lock_fd, -1)) {}

StoreHandle& StoreHandle::operator=(StoreHandle&& other) noexcept {
  if (this != &other) {
    store.reset();
    if (lock_fd >= 0) ::close(lock_fd);
    store = std::move(other.store);
    lock_fd = std::exchange(other.lock_fd, -1);
  }
  return *this;
}

StoreHandle::~StoreHandle() {
  store.reset();
  if (lock_fd >= 0) ::close(lock_fd);
}

std::string workspace_key(const std::optional<fs::path>& workspace) {
  if (!workspace) return "";
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(fs::absolute(*workspace, ec), ec);
  return ec ? fs::absolute(*workspace).lexically_normal().string() : canonical.string();
}

Result<StoreHandle> open_store(const config::Config& config, bool exclusive, FailPoints* fail_points) {
  // The directory 0700 and the database 0600 when keel creates them; a warning on stderr for what exists and
  // is open to others (cli/store_files.h).
  for (const Error& warning : KEEL_TRY(prepare_store_files(config.store_path))) {
    std::cerr << "keel: warning: " << warning.to_string() << "\n";
  }
  StoreHandle handle;
  if (exclusive) handle.lock_fd = KEEL_TRY(lock_store(config.store_path));
  SqliteStoreOptions options;
  options.path = config.store_path.string();
  options.synchronous = config.durability;
  options.quick_check_ms = config.quick_check_ms;
  options.fail_points = fail_points;
  handle.store = KEEL_TRY(open_sqlite_store(options));
  return handle;
}

namespace {

// Forwards to the engine's transport; the first op that starts or queues a turn activates the lazy MCP
// servers (start = "lazy", docs/mcp-client.md): they are connected when keel is first asked to work.
class LazyMcpTransport final : public EngineTransport {
 public:
  LazyMcpTransport(EngineTransport& inner, mcp::McpHost& host) : inner_(inner), host_(host) {}
  void send(Op op) override {
    if (!activated_.load() &&
        (op.method == "turn.submit" || op.method == "turn.input" || op.method == "turn.enqueue")) {
      activated_.store(true);
      host_.activate();
    }
    inner_.send(std::move(op));
  }
  std::unique_ptr<EventSubscription> on_event(std::function<void(const AgentEvent&)> callback) override {
    return inner_.on_event(std::move(callback));
  }

 private:
  EngineTransport& inner_;
  mcp::McpHost& host_;
  std::atomic<bool> activated_{false};
};

}  // namespace

class EngineHost::Impl {
 public:
  explicit Impl(HostOptions options) : options_(std::move(options)) {}

  Result<void> open() {
    const config::Config& config = options_.config;
    const std::string model_name = options_.model_name.empty() ? config.default_model : options_.model_name;
    if (model_name.empty()) {
      return fail(
          kNoModel,
          "no model is configured: set default_model in a config file (docs/configuration.md), or pass "
          "--model; `keel demo` runs without one");
    }
    // End-to-end tests fail the store on purpose (a full disk) through KEEL_FAILPOINTS; nothing is armed
    // without it, or in a build without fail points.
    KEEL_TRY(fail_points_.arm_from_env());
    store_ = KEEL_TRY(open_store(config, /*exclusive=*/true, &fail_points_));
    // Stored credentials need the master key; without one, environment-variable keys still work.
    if (auto key = config::MasterKey::load_or_create(config.master_key_file)) {
      vault_ = std::make_unique<config::CredentialVault>(std::move(*key), clock_);
    }
    resolver_ = std::make_unique<config::CredentialResolver>(*store_.store, vault_.get(),
                                                             config::process_environment());
    // MCP servers' OAuth sign-ins are kept in the vault; without a master key, none is attempted.
    if (vault_) grants_ = std::make_unique<mcp::OAuthGrantVault>(*store_.store, *vault_);
    ModelBindingDeps deps{
        .credentials = resolver_.get(), .client = &http_, .scheduler = &scheduler_, .clock = &clock_};
    // Every configured model, for the threads to choose from (model.list, thread.setModel); one that
    // cannot be bound is left out with a warning, the default one (or --model) must bind.
    models_ = KEEL_TRY(bind_models(config, model_name, deps));
    for (const Error& skipped : models_.skipped) {
      std::cerr << "keel: warning: a model is left out of the model list: " << skipped.to_string() << "\n";
    }
    catalog_.emplace(catalog_of(models_, model_name));
    for (const NamedBinding& named : models_.models) {
      if (named.name == model_name) model_ = &named.binding;
    }
    model_name_ = model_name;
    const std::string task_name = config.task_model;
    if (!task_name.empty() && task_name != model_name)
      task_model_ = KEEL_TRY(bind_model(config, task_name, deps));

    // Each start is a new policy session: decisions remembered "until keel exits" end with it.
    PolicySession session{.id = ids_.next_id(), .workspace = workspace_key(options_.workspace)};
    gatekeeper_ =
        KEEL_TRY(PolicyGatekeeper::open(*store_.store, clock_, ids_, config.policy_mode, std::move(session)));
    builtin::BuiltinToolsOptions tool_options;
    tool_options.workspace_root = options_.workspace;
    tool_options.scheduler = &scheduler_;
    tool_options.interactions = true;
    KEEL_TRY(builtin::register_builtin_tools(tools_, tool_options));
    if (config.browser.enabled) KEEL_TRY(open_browser());
    if (!config.mcp_servers.empty()) start_mcp_servers();
    // [skills]: loaded once, now. read_skill only when there is a skill to read, so a host without skill
    // folders offers exactly the tools (and run digests) it did before skills existed.
    skills_ = open_skill_catalog(config.skills);
    if (skills_) {
      for (const SkillProblem& problem : skills_->problems()) {
        std::cerr << "keel: warning: a skill is not loaded: " << problem.error.to_string() << "\n";
      }
      if (!skills_->skills().empty()) {
        auto registered = tools_.register_tool(std::make_shared<skills::ReadSkillTool>(*skills_));
        if (!registered) return std::unexpected(std::move(registered.error()));
      }
    }

    EngineOptions engine_options;
    engine_options.model = model_->settings;
    engine_options.transport = model_->transport;
    if (task_model_) engine_options.task_model = task_model_->settings.model;
    engine_options.default_budget_tokens = config.token_budget;
    engine_options.compaction.enabled = config.compaction.enabled;
    engine_options.compaction.threshold = config.compaction.threshold;
    engine_options.recover_on_start = !options_.defer_recovery;
    engine_options.on_store_failed = options_.on_store_failed;
    EngineDeps engine_deps;
    engine_deps.store = store_.store.get();
    engine_deps.provider = model_->provider.get();
    engine_deps.task_provider = task_model_ ? task_model_->provider.get() : model_->provider.get();
    engine_deps.models = &*catalog_;
    engine_deps.tools = &tools_;
    engine_deps.gatekeeper = gatekeeper_.get();
    engine_deps.clock = &clock_;
    engine_deps.ids = &ids_;
    engine_deps.fail_points = &fail_points_;
    if (browser_) engine_deps.takeover_targets.push_back(browser_.get());
    engine_deps.skills = skills_.get();
    engine_ = std::make_unique<EngineCore>(engine_deps, std::move(engine_options));
    transport_ = std::make_unique<DirectTransport>(*engine_);
    if (mcp_) mcp_transport_ = std::make_unique<LazyMcpTransport>(*transport_, *mcp_);
    return {};
  }

  // [mcp.servers.*]: their tools join the registry (docs/mcp-client.md). Start-up servers connect now, in
  // parallel, and the host waits until each is ready or failed (each bounded by its connect timeout) before
  // the engine takes up unfinished runs, so a run that used their tools can be recovered; one that fails is
  // reported and keel goes on without it (it reconnects in the background).
  void start_mcp_servers() {
    const std::vector<mcp::McpServerSettings> settings = mcp::mcp_server_settings(options_.config);
    std::chrono::milliseconds bound{0};
    for (const auto& s : settings) bound = std::max(bound, s.connect_timeout);
    mcp_ = std::make_unique<mcp::McpHost>(
        settings, mcp_session_factory(resolver_.get(), options_.logger, grants_.get()), tools_, clock_,
        scheduler_);
    mcp_->start();
    (void)mcp_->wait_settled(bound + std::chrono::seconds(5));
    for (const mcp::McpServerStatus& server : mcp_->status()) {
      if (server.state == mcp::McpServerState::kFailed && server.last_error) {
        std::cerr << "keel: warning: MCP server " << terminal_safe(server.name, LineBreaks::kShow)
                  << " is not available (retrying): "
                  << terminal_safe(server.last_error->to_string(), LineBreaks::kShow) << "\n";
      }
    }
  }

  // [browser] enabled: the runtime (its browser starts with the first browser tool call), the browser_*
  // tools, and the runtime as the engine's "browser" takeover target. Pages go only to origins the
  // gatekeeper does not deny (GatekeeperOriginPolicy); uploads come only from the file tools' workspace.
  Result<void> open_browser() {
    const config::Config& config = options_.config;
    browser::RuntimeOptions runtime_options =
        KEEL_TRY(browser_runtime_options(config.browser, config.data_dir));
    runtime_options.policy = KEEL_TRY(GatekeeperOriginPolicy::create(*gatekeeper_));
    if (options_.workspace)
      runtime_options.workspace = KEEL_TRY(builtin::Workspace::open(*options_.workspace));
    browser_ = browser::BrowserRuntime::create(std::move(runtime_options));
    return browser::register_browser_tools(tools_, browser_);
  }

  HostOptions options_;
  FailPoints fail_points_;  // before the store, which uses it
  SystemClock clock_;
  UuidV7Source ids_{clock_};
  StoreHandle store_;
  ThreadScheduler scheduler_;
  providers::CurlHttpClient http_;
  std::unique_ptr<config::CredentialVault> vault_;
  std::unique_ptr<config::CredentialResolver> resolver_;
  std::unique_ptr<mcp::OAuthGrantVault> grants_;  // MCP servers' OAuth grants (null without a vault)
  BoundModels models_;
  std::optional<ModelCatalog> catalog_;  // points into models_
  const ModelBinding* model_ = nullptr;  // the default one, in models_
  std::optional<ModelBinding> task_model_;
  std::string model_name_;
  std::unique_ptr<PolicyGatekeeper> gatekeeper_;
  // Created after the gatekeeper its origin policy asks, destroyed after the engine (~EngineHost), so no
  // tool call outlives it; the browser tools hold it too.
  std::shared_ptr<browser::BrowserRuntime> browser_;
  // Before the tools: read_skill holds it.
  std::unique_ptr<skills::DirectorySkillCatalog> skills_;
  ToolRegistry tools_;
  // Destroyed after the engine (no MCP call outlives its session) and before the registry it registers in.
  std::unique_ptr<mcp::McpHost> mcp_;
  std::unique_ptr<EngineCore> engine_;
  std::unique_ptr<DirectTransport> transport_;
  std::unique_ptr<EngineTransport> mcp_transport_;  // transport_ that activates lazy MCP servers
};

EngineHost::EngineHost(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EngineHost::~EngineHost() {
  if (!impl_) return;
  // The engine first: it stops running turns, which use everything else.
  impl_->mcp_transport_.reset();
  impl_->transport_.reset();
  impl_->engine_.reset();
  // Then the MCP servers, before the registry their tools are in.
  impl_->mcp_.reset();
  // The browser then goes with the members: the tools (declared after it) first, then the runtime, whose
  // destructor closes Chromium and joins its thread.
}

Result<std::unique_ptr<EngineHost>> EngineHost::open(HostOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  KEEL_TRY(impl->open());
  return std::make_unique<EngineHost>(std::move(impl));
}

EngineTransport& EngineHost::transport() {
  if (impl_->mcp_transport_) return *impl_->mcp_transport_;
  return *impl_->transport_;
}
void EngineHost::start_recovery() { impl_->engine_->recover(); }
Store& EngineHost::store() { return *impl_->store_.store; }
const config::Config& EngineHost::config() const { return impl_->options_.config; }
const std::string& EngineHost::model_name() const { return impl_->model_name_; }
const std::string& EngineHost::model_id() const { return impl_->model_->settings.model; }

}  // namespace keel::cli
