// cli/logging.h — keel's log: levels, plain text or JSON lines, to stderr or a file — never to stdout, which
// belongs to the protocol (keel serve --stdio) or to the command's own output.
//
// The logger is made once in main() and passed down; there is no global registry. EventLogger turns the
// engine's events into log lines (turn start and end, run states, approvals, refusals).
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "keel/error.h"
#include "keel/transport.h"

namespace spdlog {
class logger;
}

namespace keel::cli {

struct LogOptions {
  config::LogLevel level = config::LogLevel::kInfo;
  config::LogFormat format = config::LogFormat::kText;
  std::string file;  // "" = stderr
};

// Errors: log.open_failed (the file cannot be opened for appending).
Result<std::shared_ptr<spdlog::logger>> make_logger(const LogOptions& options);

// Logs the events of every thread while it lives.
class EventLogger {
 public:
  EventLogger(EngineTransport& transport, std::shared_ptr<spdlog::logger> logger);
  ~EventLogger();
  EventLogger(const EventLogger&) = delete;
  EventLogger& operator=(const EventLogger&) = delete;

 private:
  std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<EventSubscription> subscription_;
};

}  // namespace keel::cli
