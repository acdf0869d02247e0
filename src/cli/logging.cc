#include "cli/logging.h"

#include <fcntl.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cli/cli_errors.h"
#include "util/private_file.h"
#include "util/terminal_text.h"

namespace keel::cli {

namespace {

spdlog::level::level_enum to_spdlog(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::kTrace:
      return spdlog::level::trace;
    case config::LogLevel::kDebug:
      return spdlog::level::debug;
    case config::LogLevel::kInfo:
      return spdlog::level::info;
    case config::LogLevel::kWarn:
      return spdlog::level::warn;
    case config::LogLevel::kError:
      return spdlog::level::err;
    case config::LogLevel::kOff:
      return spdlog::level::off;
  }
  return spdlog::level::info;
}

// One JSON object per line: {"ts": ISO-8601 UTC with milliseconds, "level", "logger", "msg"}. spdlog's
// patterns cannot escape the message, so the line is built with nlohmann.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto millis =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
    const std::time_t seconds = static_cast<std::time_t>(millis / 1000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char stamp[32];
    const size_t n = std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &utc);
    std::snprintf(stamp + n, sizeof(stamp) - n, ".%03dZ", static_cast<int>(millis % 1000));
    const auto level = spdlog::level::to_string_view(msg.level);
    nlohmann::json line = {{"ts", stamp},
                           {"level", std::string(level.data(), level.size())},
                           {"logger", std::string(msg.logger_name.data(), msg.logger_name.size())},
                           {"msg", std::string(msg.payload.data(), msg.payload.size())}};
    const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

// Log messages quote clients' ids, methods and error messages, and a log on stderr is read on a terminal:
// every message passes through terminal_safe() before `inner` lays the line out, newlines shown too, so a
// message can neither drive the terminal nor fake a line of its own.
class SafeMessageFormatter final : public spdlog::formatter {
 public:
  explicit SafeMessageFormatter(std::unique_ptr<spdlog::formatter> inner) : inner_(std::move(inner)) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string safe =
        terminal_safe(std::string_view(msg.payload.data(), msg.payload.size()), LineBreaks::kShow);
    spdlog::details::log_msg shown = msg;
    shown.payload = spdlog::string_view_t(safe.data(), safe.size());
    inner_->format(shown, dest);
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<SafeMessageFormatter>(inner_->clone());
  }

 private:
  std::unique_ptr<spdlog::formatter> inner_;
};

}  // namespace

Result<std::shared_ptr<spdlog::logger>> make_logger(const LogOptions& options) {
  spdlog::sink_ptr sink;
  if (options.file.empty()) {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  } else {
    // A log quotes clients and tools: a file keel creates is the owner's alone (0600 whatever the umask),
    // made before spdlog opens it for appending. An existing file (or the one a symlink names) keeps its
    // mode.
    UniqueFd created(
        ::open(options.file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (created.valid() && ::fchmod(created.get(), 0600) != 0) {
      return fail(codes::kLogOpenFailed,
                  "cannot make the log file " + options.file + " private: " + std::strerror(errno));
    }
    try {
      sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.file, /*truncate=*/false);
    } catch (const spdlog::spdlog_ex& error) {
      return fail(codes::kLogOpenFailed, "cannot open the log file " + options.file + ": " + error.what());
    }
  }
  auto logger = std::make_shared<spdlog::logger>("keel", sink);
  if (options.format == config::LogFormat::kJson) {
    logger->set_formatter(std::make_unique<SafeMessageFormatter>(std::make_unique<JsonFormatter>()));
  } else {
    logger->set_formatter(std::make_unique<SafeMessageFormatter>(
        std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v")));
  }
  logger->set_level(to_spdlog(options.level));
  logger->flush_on(spdlog::level::trace);
  return logger;
}

EventLogger::EventLogger(EngineTransport& transport, std::shared_ptr<spdlog::logger> logger)
    : logger_(std::move(logger)) {
  subscription_ = transport.on_event([log = logger_](const AgentEvent& event) {
    const nlohmann::json& p = event.payload;
    if (event.type == "turn.start") {
      log->info("thread {} turn {} started{}", event.thread_id, p.value("turnId", ""),
                p.value("recovered", false) ? " (recovered after a restart)" : "");
    } else if (event.type == "turn.complete") {
      const std::string error = p.contains("error") ? " " + p["error"].value("code", "") : "";
      log->info("thread {} turn {} ended: {}{}", event.thread_id, p.value("turnId", ""),
                p.value("stopReason", ""), error);
    } else if (event.type == "run.updated") {
      log->debug("thread {} run {} is {}", event.thread_id, p.value("runId", ""), p.value("state", ""));
    } else if (event.type == "approval.request") {
      log->info("thread {} asks approval {} for {}", event.thread_id, p.value("approvalId", ""),
                p.contains("tool") ? p["tool"].value("name", "") : "");
    } else if (event.type == "command.rejected") {
      const nlohmann::json& error = p.contains("error") ? p["error"] : nlohmann::json::object();
      // `internal`: an op's handler failed (a bug the engine caught at its boundary): worth an error line.
      log->log(error.value("code", "") == "internal" ? spdlog::level::err : spdlog::level::info,
               "{} from {} refused: {}: {}", p.value("method", ""), p.value("clientId", ""),
               error.value("code", ""), error.value("message", ""));
    } else if (event.type == "command.ack") {
      log->debug("{} from {} accepted", p.value("method", ""), p.value("clientId", ""));
    }
  });
}

EventLogger::~EventLogger() {
  if (subscription_) subscription_->cancel();
}

}  // namespace keel::cli
