// mcp/host/server_log.cc — see server_log.h.
#include "mcp/host/server_log.h"

#include <algorithm>
#include <utility>

namespace keel::mcp {

using nlohmann::json;

namespace {

// One line, at most `max` bytes (cut on a UTF-8 character boundary, the cut said), no control characters.
std::string bounded_line(std::string_view text, size_t max) {
  std::string out;
  size_t cut = text.size();
  if (cut > max) {
    cut = max;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) --cut;  // a continuation byte
  }
  out.reserve(cut + 32);
  for (size_t i = 0; i < cut; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out.push_back(c < 0x20U || c == 0x7FU ? ' ' : text[i]);
  }
  if (cut < text.size()) out += " ... (" + std::to_string(text.size() - cut) + " more bytes cut)";
  return out;
}

std::string data_text(const json& data) {
  if (data.is_string()) return data.get<std::string>();
  if (data.is_null()) return "";
  return data.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

McpServerLog::McpServerLog(std::string server, std::shared_ptr<spdlog::logger> logger,
                           std::shared_ptr<const Clock> clock, McpServerLogOptions options)
    : server_(std::move(server)),
      logger_(std::move(logger)),
      clock_(clock ? std::move(clock) : std::make_shared<SystemClock>()),
      options_(options),
      tokens_(options.burst),
      refilled_(clock_->steady_now()) {}

McpServerLog::~McpServerLog() {
  if (dropped_ > 0 && logger_) {
    logger_->warn("MCP server {}: {} more log lines dropped (over {} a second)", server_, dropped_,
                  options_.per_second);
  }
}

void McpServerLog::message(const McpLogMessage& message) {
  const std::optional<spdlog::level::level_enum> level = spdlog_level(message.level);
  std::string text;
  if (!level) text = "(level " + bounded_line(message.level, 32) + ") ";
  if (!message.logger.empty()) text += "[" + bounded_line(message.logger, 64) + "] ";
  text += data_text(message.data);
  write(level.value_or(spdlog::level::warn), std::move(text));
}

void McpServerLog::stderr_line(std::string_view line) { write(spdlog::level::info, std::string(line)); }

void McpServerLog::problem(const Error& problem) { write(spdlog::level::warn, problem.to_string()); }

void McpServerLog::write(spdlog::level::level_enum level, std::string text) {
  if (!logger_ || !logger_->should_log(level)) return;
  size_t dropped = 0;
  {
    std::lock_guard lock(mu_);
    const auto now = clock_->steady_now();
    const double elapsed = std::chrono::duration<double>(now - refilled_).count();
    refilled_ = now;
    tokens_ = std::min(options_.burst, tokens_ + std::max(0.0, elapsed) * options_.per_second);
    if (tokens_ < 1) {
      ++dropped_;
      return;
    }
    tokens_ -= 1;
    dropped = std::exchange(dropped_, 0);
  }
  if (dropped > 0) {
    logger_->warn("MCP server {}: {} log lines dropped (over {} a second)", server_, dropped,
                  options_.per_second);
  }
  logger_->log(level, "MCP server {}: {}", server_, bounded_line(text, options_.max_line_bytes));
}

std::string mcp_log_level(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warning";
    case spdlog::level::err:
      return "error";
    case spdlog::level::critical:
      return "critical";
    default:
      return "emergency";
  }
}

std::optional<spdlog::level::level_enum> spdlog_level(std::string_view mcp_level) {
  if (mcp_level == "debug") return spdlog::level::debug;
  if (mcp_level == "info" || mcp_level == "notice") return spdlog::level::info;
  if (mcp_level == "warning") return spdlog::level::warn;
  if (mcp_level == "error") return spdlog::level::err;
  if (mcp_level == "critical" || mcp_level == "alert" || mcp_level == "emergency")
    return spdlog::level::critical;
  return std::nullopt;
}

}  // namespace keel::mcp
