// keel serve: the engine behind JSON-RPC 2.0, over stdio (one client) or WebSocket (many, and the web
// interface on the same port: docs/web.md), until SIGINT or SIGTERM (or, over stdio, the end of the input).
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <functional>
#include <ostream>

#include "cli/cli_errors.h"
#include "cli/commands.h"
#include "cli/engine_host.h"
#include "cli/logging.h"
#include "cli/signals.h"
#include "cli/web_ui.h"
#include "keel/error_codes.h"
#include "transport/stdio_server.h"
#include "transport/websocket_server.h"
#include "util/private_file.h"
#include "util/random_hex.h"
#include "util/thread_annotations.h"

namespace keel::cli {
namespace fs = std::filesystem;

namespace {

constexpr PrivateFileCodes kTokenFileCodes{.io = codes::kServeTokenFile,
                                           .unsafe = codes::kServeTokenFileUnsafe,
                                           .permissions = codes::kServeTokenFilePermissions};

// The token from `path`, or a new one written there when the file does not exist. Like the master key
// (util/private_file.h): written through a fresh temporary (O_EXCL, O_NOFOLLOW, 0600) renamed into place,
// and read only from a regular file of this user that group and others cannot access, never through a
// symlink.
Result<std::string> token_from_file(const fs::path& path) {
  bool missing = false;
  Result<UniqueFd> fd = open_private_file(path, "the token file", kTokenFileCodes, missing);
  if (!fd && missing) {
    std::string token = random_hex(24);
    KEEL_TRY(write_private_file(path, token + "\n", "the token file", kTokenFileCodes));
    return token;
  }
  if (!fd) return std::unexpected(fd.error());
  std::string text;
  char buffer[512];
  for (;;) {
    const ssize_t n = ::read(fd->get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return fail(codes::kServeTokenFile, "cannot read " + path.string() + ": " + std::strerror(errno));
    if (n == 0 || text.size() > 4096) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  std::string token = text.substr(0, text.find('\n'));
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.size() < 16)
    return fail(codes::kServeTokenFile, path.string() + " holds no token of 16 or more characters");
  return token;
}

Result<std::pair<std::string, uint16_t>> parse_listen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos)
    return fail(codes::kInvalidArgument, "--listen takes HOST:PORT, e.g. 127.0.0.1:7777");
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port_text = listen.substr(colon + 1);
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 0 || port > 65535) {
    return fail(codes::kInvalidArgument, "--listen: '" + port_text + "' is not a port");
  }
  return std::pair{host, static_cast<uint16_t>(port)};
}

}  // namespace

int serve_command(const CommandContext& context, const ServeOptions& options) {
  spdlog::logger& log = *context.logger;
  if (options.stdio == !options.listen.empty()) {
    *context.err << "keel serve: give exactly one of --stdio and --listen HOST:PORT\n";
    return kExitSetup;
  }
  // Recovery waits until the event log and (over stdio) the client are subscribed, so that they see a
  // recovered turn from its turn.start {recovered: true} on (a WebSocket client connects later and learns of
  // it from initialize's `unfinished`).
  // Shared with the engine's store-failure callback, which may come from any engine thread.
  struct StopState {
    Mutex mu;
    std::condition_variable cv;
    int signal GUARDED_BY(mu) = 0;
    bool store_failed GUARDED_BY(mu) = false;
    std::function<void()> stop_server GUARDED_BY(mu);  // stdio: stops the server's run()
  } stop;
  HostOptions host_options{.config = context.config,
                           .model_name = options.model,
                           .workspace = options.workspace,
                           .defer_recovery = true};
  // A poisoned store refuses every write until reopened: rather than run on refusing everything, the
  // server stops (the engine has ended the running turns) and exits with kExitStoreFailed for a supervisor.
  host_options.logger = context.logger;
  host_options.on_store_failed = [&] {
    MutexLock guard(stop.mu);
    stop.store_failed = true;
    if (stop.stop_server) stop.stop_server();
    stop.cv.notify_all();
  };
  auto host = EngineHost::open(std::move(host_options));
  if (!host) {
    log.error("cannot start: {}", host.error().to_string());
    *context.err << "keel serve: " << host.error().to_string() << "\n";
    return kExitSetup;
  }
  EventLogger events((*host)->transport(), context.logger);
  log.info("engine on {} with model {} ({})", context.config.store_path.string(), (*host)->model_name(),
           (*host)->model_id());

  const auto stopped_for_store = [&] {
    log.error(
        "the store refuses writes (a failed sync: is the disk full?); exiting with {} so that keel is "
        "restarted and recovers what was synced",
        kExitStoreFailed);
    *context.err << "keel serve: the store refuses writes (a failed sync: is the disk full?); exiting with "
                 << kExitStoreFailed << "\n";
    return kExitStoreFailed;
  };

  if (options.stdio) {
    StdioServer server((*host)->transport(), STDIN_FILENO, STDOUT_FILENO);
    SignalWatcher signals([&](int signal_number) {
      log.info("signal {}: stopping", signal_number);
      server.stop();
    });
    {
      MutexLock guard(stop.mu);
      stop.stop_server = [&server] { server.stop(); };
      if (stop.store_failed) server.stop();
    }
    log.info("serving JSON-RPC on stdio");
    (*host)->start_recovery();
    const std::string why = server.run();
    log.info("stdio session ended: {}", why);
    MutexLock guard(stop.mu);
    stop.stop_server = nullptr;
    if (stop.store_failed) return stopped_for_store();
    return why == "io_error" ? kExitFailed : kExitOk;
  }

  auto listen = parse_listen(options.listen);
  if (!listen) {
    *context.err << "keel serve: " << listen.error().to_string() << "\n";
    return kExitSetup;
  }
  WebSocketServerOptions ws;
  ws.host = listen->first;
  ws.port = listen->second;
  ws.allow_remote = options.allow_remote;
  ws.allowed_origins = options.allowed_origins;
  ws.allowed_hosts = options.allowed_hosts;
  if (options.allow_remote && options.no_token) {
    // Anyone who can reach the port would drive keel: its tools, its approvals, its files.
    *context.err << "keel serve: --no-token cannot be combined with --allow-remote\n";
    return kExitSetup;
  }
  if (options.no_token) {
    ws.allow_without_token = true;
  } else if (options.token_file) {
    auto token = token_from_file(*options.token_file);
    if (!token) {
      *context.err << "keel serve: " << token.error().to_string() << "\n";
      return kExitSetup;
    }
    ws.token = *token;
  } else {
    ws.token = random_hex(24);
  }
  auto ui_dir = find_ui_dir(options.ui_dir, ui_dir_candidates());
  if (!ui_dir) {
    *context.err << "keel serve: " << ui_dir.error().to_string() << "\n";
    return kExitSetup;
  }
  ws.ui_dir = *ui_dir;
  // Before the first client can send an op: a recovered run is its thread's turn before any new one.
  (*host)->start_recovery();
  auto server = WebSocketServer::start((*host)->transport(), ws);
  if (!server) {
    *context.err << "keel serve: " << server.error().to_string() << "\n";
    return kExitSetup;
  }
  const uint16_t port = (*server)->port();
  if (options.port_file) {
    if (auto written = write_private_file(*options.port_file, std::to_string(port) + "\n", "the port file",
                                          kTokenFileCodes);
        !written) {
      *context.err << "keel serve: " << written.error().to_string() << "\n";
      return kExitSetup;
    }
  }
  *context.err << "keel: listening on ws://" << ws.host << ":" << port << "/\n";
  if (!is_loopback_address(ws.host)) {
    *context.err
        << "keel: warning: listening on a non-loopback address over plain ws://: the token crosses the "
           "network in clear, and whoever sees it can drive keel (prefer 127.0.0.1 behind a TLS proxy "
           "or an SSH tunnel)\n";
    log.warn("listening on non-loopback {} over plain ws://: the token crosses the network in clear",
             ws.host);
  }
  if (options.no_token) {
    *context.err
        << "keel: warning: --no-token: every program on this machine that reaches the port can drive "
           "keel, and the web interface opens a session for anyone (for tests only)\n";
    log.warn("--no-token: clients are accepted without a token");
  }
  if (!options.no_token && !options.token_file) {
    // A token made for this run: the person needs to see it to connect.
    *context.err << "keel: token " << ws.token << " (send as 'Authorization: Bearer <token>' or ?token=)\n";
  }
  // The web interface: the one-time token rides in the fragment (never sent to a server, never in a
  // Referer); with --no-token the page gets its session without one.
  const std::string url = web_ui_url(ws.host, port, options.no_token ? "" : (*server)->one_time_token());
  *context.err << "keel: web interface " << url << "\n";
  if (ws.ui_dir.empty()) {
    *context.err << "keel: the web interface is not built (cd web && npm ci && npm run build, or "
                    "./scripts/setup.sh); the page says so\n";
  }
  if (options.open_web_page && display_available()) open_web_page(url, log);
  log.info("serving JSON-RPC over WebSocket and the web interface on {}:{}", ws.host, port);
  {
    SignalWatcher signals([&](int signal_number) {
      MutexLock guard(stop.mu);
      stop.signal = signal_number;
      stop.cv.notify_all();
    });
    MutexLock lock(stop.mu);
    while (stop.signal == 0 && !stop.store_failed) lock.wait(stop.cv);
  }
  (*server)->stop();
  MutexLock guard(stop.mu);
  if (stop.signal == 0) return stopped_for_store();
  log.info("signal {}: stopping", stop.signal);
  return kExitOk;
}

}  // namespace keel::cli
