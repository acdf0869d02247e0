// keel/ids.h — the injectable source of stable identities.
//
// Every node, run, steer, approval, interaction and tool call gets its id from an IdSource *before* it is
// persisted, so the id is stable across retries and restarts. The production source makes UUIDv7 ids
// (RFC 9562): time-ordered, so ids sort by creation time and index well. Tests inject a
// SequentialIdSource (src/testing/) for reproducible ids.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "keel/clock.h"
#include "keel/thread_annotations.h"

namespace keel {

class IdSource {
 public:
  virtual ~IdSource() = default;
  // A new id, unique within this process and, with overwhelming probability, globally. Thread-safe.
  virtual std::string next_id() = 0;
};

// UUIDv7 in canonical lowercase text form (8-4-4-4-12 hex). Within one millisecond, ids from one source
// are strictly increasing (RFC 9562 §6.2 method 1: a 12-bit counter seeded randomly each millisecond;
// when it overflows, the timestamp is advanced by one millisecond). Randomness comes from OpenSSL.
//
// `clock` must outlive the source.
class UuidV7Source final : public IdSource {
 public:
  explicit UuidV7Source(const Clock& clock) : clock_(clock) {}
  std::string next_id() override;

 private:
  const Clock& clock_;
  Mutex mu_;
  int64_t last_ms_ KEEL_GUARDED_BY(mu_) = -1;
  uint16_t counter_ KEEL_GUARDED_BY(mu_) = 0;
};

// True when `text` is a canonical lowercase UUID string whose version nibble is 7 and variant is RFC 9562.
bool is_uuid_v7(const std::string& text);

}  // namespace keel
