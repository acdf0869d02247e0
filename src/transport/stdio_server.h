// transport/stdio_server.h — newline-delimited JSON-RPC 2.0 over a pair of file descriptors (stdin/stdout).
//
// One client, one RpcSession. Each line read is one message (a trailing '\r' is ignored, empty lines are
// skipped); each message written is one line. A line longer than the message bound is discarded unread up
// to its newline and answered with rpc.message_too_large; the stream stays usable. Only protocol messages
// are written to the output descriptor: logs must go elsewhere (stderr or a file).
//
// run() serves on the calling thread until the input ends, the session is closed (a client too slow: the
// final `disconnect` notification is written first), an I/O error, or stop() from any thread. At the end of
// the input every request read before it is answered first: run() waits for the engine's answers and writes
// them (and whatever else is queued) before it returns; stop() cuts that wait short. A writer thread of its
// own sends what the session queues; the output descriptor is put in non-blocking mode so that stop() is
// never stuck behind a client that stopped reading, and both descriptors get their original status flags
// back when run() returns (O_NONBLOCK is shared with whoever handed the process its stdin and stdout). The
// descriptors are not owned: they must stay open until run() returns. The transport must outlive the server.
#pragma once

#include <atomic>
#include <string>

#include "keel/transport.h"
#include "transport/rpc_session.h"

namespace keel {

// The clientId of the stdio client's ops when they name none (docs/protocol.md, "JSON-RPC framing").
inline constexpr char kStdioClientId[] = "stdio-1";

inline RpcSessionOptions stdio_session_options() {
  RpcSessionOptions options;
  options.connection_id = kStdioClientId;
  return options;
}

class StdioServer {
 public:
  StdioServer(EngineTransport& transport, int in_fd, int out_fd,
              RpcSessionOptions options = stdio_session_options());
  ~StdioServer();
  StdioServer(const StdioServer&) = delete;
  StdioServer& operator=(const StdioServer&) = delete;

  // Why run() returned: "eof", "stopped", "io_error", or the session's close code (rpc.client_too_slow).
  std::string run();
  void stop();

  RpcSession& session() { return session_; }

 private:
  void write_loop();
  bool write_all(const std::string& line);
  void signal_stop();

  int in_fd_;
  int out_fd_;
  int wake_fd_ = -1;  // an eventfd: stop() wakes the reader's and the writer's poll
  std::atomic<bool> stopping_{false};
  std::atomic<bool> draining_{false};  // the input ended: send what is queued, then end
  std::atomic<bool> session_closed_{false};
  std::atomic<bool> write_failed_{false};
  RpcSession session_;
};

}  // namespace keel
