// cli/engine_host.h — one keel engine process assembled from the configuration: the SQLite store, the
// gatekeeper, the builtin tools on a workspace folder, the configured models (every
// one offered to the threads; cli/model_binding.h bind_models) and the EngineCore, reached
// through an in-process EngineTransport. Every command that runs turns (serve, run, chat, resume, demo)
// opens one; read-only commands use open_store_only().
//
// One engine per store: the host takes an exclusive flock on the database file itself before SQLite opens
// it, because an engine's recovery takes over every unfinished run it finds, and two engines on one SQLite
// file would run the same turn twice. The lock is on the file (its inode), not on the path's spelling, so
// a symlink or a hard link to the store meets it too. A second process gets host.store_in_use, naming the
// holder's pid when /proc/locks tells it.
//
// With [browser] enabled (config.browser.enabled; the commands' --browser sets it) the host also runs a
// BrowserRuntime (cli/browser_setup.h): the browser_* tools on it, pages confined to the origins the
// gatekeeper does not deny (cli/gatekeeper_origin_policy.h), uploads to the file tools' workspace, and the
// runtime offered to takeover.start as the "browser" target. Chromium starts with the first browser tool
// call. Disabled (the default), the tools and their catalog digests are exactly those of a host without it.
//
// With [skills] enabled (the default) the host loads the skill catalog once (cli/skill_setup.h), warns on
// stderr about each skill it could not load, gives the catalog to the engine (EngineDeps::skills) and, when
// there is at least one skill, registers read_skill; without skill folders the tools are unchanged.
//
// Members are destroyed in reverse order of construction: the engine (which interrupts running turns and
// waits for their terminal state) goes before the tools, the browser runtime, the provider and the store
// it uses.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_errors.h"
#include "config/config.h"
#include "keel/error.h"
#include "keel/store.h"
#include "keel/transport.h"

namespace keel {
class FailPoints;
}

namespace spdlog {
class logger;
}

namespace keel::cli {

using codes::kNoModel;
using codes::kStoreInUse;

struct HostOptions {
  config::Config config;
  std::string model_name;                          // the default model; "" = config.default_model
  std::optional<std::filesystem::path> workspace;  // file tools' root; nullopt = no file tools
  // The engine's own clientId prefix is the caller's business; this only names the process in logs.
  std::string purpose = "keel";
  // true: the runs an earlier process left unfinished are taken up only at start_recovery(), so that the
  // host's subscribers (a stdio client, the event log) see the recovered turns from their turn.start on.
  bool defer_recovery = false;
  // Called once, on an engine thread, when the store refuses writes for good
  // (EngineOptions::on_store_failed): the running turns have ended with an error event. Must return quickly;
  // the host is still alive.
  std::function<void()> on_store_failed = nullptr;
  // keel's log: what MCP servers log goes there (mcp/host/server_log.h). Null: nowhere.
  std::shared_ptr<spdlog::logger> logger = nullptr;
};

// The store with its lock held, without an engine: for commands that only read (threads list/show).
struct StoreHandle {
  std::unique_ptr<Store> store;
  int lock_fd = -1;
  StoreHandle() = default;
  StoreHandle(StoreHandle&& other) noexcept;
  StoreHandle& operator=(StoreHandle&& other) noexcept;
  ~StoreHandle();
};

// Opens config.store_path (creating its directory 0700 and the database 0600, and warning on stderr about
// files of an existing store that others may access: cli/store_files.h), taking the store lock when
// `exclusive`. A reader that
// does not take the lock can run beside a serving engine (SQLite WAL readers never block the writer).
// `fail_points` (may be null; must outlive the store) is what tests arm through KEEL_FAILPOINTS.
// Errors: host.store_in_use, the store's open errors.
Result<StoreHandle> open_store(const config::Config& config, bool exclusive,
                               FailPoints* fail_points = nullptr);

// The workspace folder as remembered policy decisions name it: its canonical absolute path ("" for none).
std::string workspace_key(const std::optional<std::filesystem::path>& workspace);

class EngineHost {
 public:
  // Errors: host.store_in_use, host.no_model (no model named and none configured), config.* and
  // credential.* from binding the model, store errors, tools.* (a workspace that is not a folder).
  static Result<std::unique_ptr<EngineHost>> open(HostOptions options);
  ~EngineHost();
  EngineHost(const EngineHost&) = delete;
  EngineHost& operator=(const EngineHost&) = delete;

  EngineTransport& transport();
  // With HostOptions::defer_recovery: starts the engine's recovery (once; later calls do nothing).
  void start_recovery();
  Store& store();
  const config::Config& config() const;
  // The bound model's name as configured, and the provider's model id.
  const std::string& model_name() const;
  const std::string& model_id() const;

  class Impl;
  explicit EngineHost(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace keel::cli
