// providers/sse/sse_parser.h — an incremental Server-Sent Events parser (the WHATWG HTML "event stream"
// interpretation), for the model providers' streaming responses.
//
// Bytes arrive in chunks cut anywhere (inside a field, inside a CRLF, inside a UTF-8 character or the
// leading byte-order mark); feed() parses what is complete and keeps the rest. It follows the standard's
// rules exactly:
//   - lines end at CRLF, LF or CR; one leading U+FEFF (BOM) is dropped;
//   - a line that starts with ':' is a comment (keep-alives) and is ignored;
//   - "field:value" or "field: value" (one space dropped); a line without ':' is a field with an empty value;
//   - data lines of one event are joined with '\n'; an event is dispatched only at a blank line, and only if
//     it had at least one data line (an empty "data:" counts);
//   - event names the type (dispatched as "message" when absent); id sets the last event id, which
//     persists across events (an id containing NUL is ignored); retry takes ASCII digits only;
//   - unknown fields are ignored.
// Bytes are passed through as they are: the data's JSON reader validates UTF-8 where it matters.
//
// Bounds: one event (its data plus the line being read) may hold at most `max_event_bytes`; beyond that
// feed() fails with provider.event_too_large, as a server that never ends a line would otherwise grow the
// buffer without limit. After a failure the parser stays failed.
//
// Not thread-safe: one parser per response stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"

namespace keel::providers {

struct SseEvent {
  std::string event;  // the type; "message" when the event had no event field
  std::string data;
  std::string id;                   // the last event id at dispatch (it persists across events)
  std::optional<int64_t> retry_ms;  // a retry field inside this event, if any

  friend bool operator==(const SseEvent&, const SseEvent&) = default;
};

struct SseParserOptions {
  size_t max_event_bytes = size_t{16} << 20;
};

class SseParser {
 public:
  explicit SseParser(SseParserOptions options = {});

  // Parses `chunk` and appends every event it completes to `out`. Errors: provider.event_too_large.
  [[nodiscard]] Result<void> feed(std::string_view chunk, std::vector<SseEvent>& out);

  // The stream ended. provider.stream_truncated (retryable) when it ended inside an event: a field line was
  // read since the last blank line, or a line was cut. The parser is reset for a new stream either way
  // (the failed state of feed() excepted).
  [[nodiscard]] Result<void> finish();

  // The reconnection time the stream asked for last, if any.
  std::optional<int64_t> retry_ms() const { return retry_ms_; }
  const std::string& last_event_id() const { return last_event_id_; }

 private:
  Result<void> consume(std::string_view bytes, std::vector<SseEvent>& out);
  Result<void> take_line(std::string_view line, std::vector<SseEvent>& out);
  void dispatch(std::vector<SseEvent>& out);
  Result<void> check_size(size_t pending_bytes);

  SseParserOptions options_;
  std::optional<Error> failed_;
  bool bom_checked_ = false;
  std::string head_;      // the stream's first bytes while they may still be a BOM
  bool skip_lf_ = false;  // the last chunk ended with CR: a leading LF completes that CRLF
  std::string line_;      // the part of a line cut by a chunk boundary
  // The event being read.
  bool in_event_ = false;  // a field line was read since the last blank line
  bool has_data_ = false;
  std::string data_;
  std::string event_type_;
  std::optional<int64_t> event_retry_ms_;
  // Stream state that persists across events.
  std::string last_event_id_;
  std::optional<int64_t> retry_ms_;
};

}  // namespace keel::providers
