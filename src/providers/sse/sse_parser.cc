#include "providers/sse/sse_parser.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "providers/provider_errors.h"

namespace keel::providers {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

// The position of the next `c` at or after `from`, or bytes.size(). memchr is vectorized; the caller keeps
// the answer until it passes it, so each byte is looked at once per delimiter.
size_t next_of(std::string_view bytes, size_t from, char c) {
  const void* hit = std::memchr(bytes.data() + from, c, bytes.size() - from);
  return hit == nullptr ? bytes.size() : static_cast<size_t>(static_cast<const char*>(hit) - bytes.data());
}

// The standard's "only ASCII digits" rule; nullopt also for values too large to represent.
std::optional<int64_t> parse_retry(std::string_view value) {
  if (value.empty()) return std::nullopt;
  int64_t result = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    if (result > (std::numeric_limits<int64_t>::max() - (c - '0')) / 10) return std::nullopt;
    result = result * 10 + (c - '0');
  }
  return result;
}

}  // namespace

SseParser::SseParser(SseParserOptions options) : options_(options) {}

Result<void> SseParser::feed(std::string_view chunk, std::vector<SseEvent>& out) {
  if (failed_) return fail(*failed_);
  if (!bom_checked_) {
    // Hold the first bytes until they are known to be, or not to be, the BOM.
    const size_t take = std::min(kBom.size() - head_.size(), chunk.size());
    head_.append(chunk.substr(0, take));
    chunk.remove_prefix(take);
    if (head_.size() < kBom.size() && kBom.starts_with(head_)) return {};
    bom_checked_ = true;
    const std::string head = std::exchange(head_, {});
    auto r = consume(std::string_view(head).substr(head.starts_with(kBom) ? kBom.size() : 0), out);
    if (!r) return r;
  }
  return consume(chunk, out);
}

Result<void> SseParser::consume(std::string_view bytes, std::vector<SseEvent>& out) {
  size_t pos = 0;
  if (skip_lf_ && !bytes.empty()) {
    skip_lf_ = false;
    if (bytes[0] == '\n') pos = 1;
  }
  if (pos >= bytes.size()) return {};
  size_t next_cr = next_of(bytes, pos, '\r');
  size_t next_lf = next_of(bytes, pos, '\n');
  while (pos < bytes.size()) {
    if (next_cr < pos) next_cr = next_of(bytes, pos, '\r');
    if (next_lf < pos) next_lf = next_of(bytes, pos, '\n');
    const size_t eol = std::min(next_cr, next_lf);
    if (eol == bytes.size()) {
      line_.append(bytes.substr(pos));
      return check_size(line_.size());
    }
    const std::string_view piece = bytes.substr(pos, eol - pos);
    if (line_.empty()) {
      auto r = take_line(piece, out);
      if (!r) return r;
    } else {
      line_.append(piece);
      KEEL_TRY(check_size(line_.size()));
      auto r = take_line(line_, out);  // take_line never touches line_
      line_.clear();
      if (!r) return r;
    }
    pos = eol + 1;
    if (bytes[eol] == '\r') {
      if (pos == bytes.size()) {
        skip_lf_ = true;
      } else if (bytes[pos] == '\n') {
        ++pos;
      }
    }
  }
  return {};
}

Result<void> SseParser::take_line(std::string_view line, std::vector<SseEvent>& out) {
  if (line.empty()) {
    dispatch(out);
    return {};
  }
  if (line.front() == ':') return {};  // a comment: keep-alives
  in_event_ = true;
  std::string_view field = line;
  std::string_view value;
  if (const size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
    return check_size(0);
  }
  if (field == "event") {
    event_type_.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) last_event_id_.assign(value);
  } else if (field == "retry") {
    if (auto ms = parse_retry(value)) {
      retry_ms_ = ms;
      event_retry_ms_ = ms;
    }
  }
  return {};
}

void SseParser::dispatch(std::vector<SseEvent>& out) {
  if (has_data_) {
    SseEvent& event = out.emplace_back();
    event.event = event_type_.empty() ? std::string("message") : std::move(event_type_);
    event.data = std::move(data_);
    event.id = last_event_id_;
    event.retry_ms = event_retry_ms_;
  }
  in_event_ = false;
  has_data_ = false;
  data_.clear();
  event_type_.clear();
  event_retry_ms_.reset();
}

Result<void> SseParser::check_size(size_t pending_bytes) {
  if (data_.size() + pending_bytes <= options_.max_event_bytes) return {};
  failed_ = Error(codes::kProviderEventTooLarge, "one server-sent event is larger than " +
                                                     std::to_string(options_.max_event_bytes) + " bytes");
  return fail(*failed_);
}

Result<void> SseParser::finish() {
  if (failed_) return fail(*failed_);
  // Bytes held as a possible BOM are the start of a line that never ended.
  const bool cut_line = !head_.empty() || (!line_.empty() && line_.front() != ':');
  const bool truncated = cut_line || in_event_;
  const std::string last_event_id = last_event_id_;
  const std::optional<int64_t> retry_ms = retry_ms_;
  *this = SseParser(options_);
  last_event_id_ = last_event_id;  // a reconnection sends it back as Last-Event-ID
  retry_ms_ = retry_ms;
  if (truncated) {
    return fail(codes::kProviderStreamTruncated, "the event stream ended in the middle of an event",
                /*retryable=*/true);
  }
  return {};
}

}  // namespace keel::providers
