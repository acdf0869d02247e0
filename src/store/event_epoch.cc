#include "store/event_epoch.h"

#include <charconv>
#include <string>

#include "keel/error_codes.h"

namespace keel {

Result<uint64_t> stored_event_epoch(Transaction& tx) {
  auto row =
      KEEL_TRY(tx.query_one("SELECT value FROM settings WHERE key = ?", {std::string(kEventEpochKey)}));
  if (!row) return uint64_t{0};
  const std::string text = row->text(0);
  uint64_t epoch = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), epoch);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return fail(codes::kStoreDecode,
                std::string("settings row ") + kEventEpochKey + " is not an epoch: " + text);
  }
  return epoch;
}

Result<uint64_t> take_event_epoch(Transaction& tx, const Clock& clock) {
  const uint64_t epoch = KEEL_TRY(stored_event_epoch(tx)) + 1;
  const std::string value = std::to_string(epoch);
  const int64_t now = clock.now_unix_ms();
  // UPDATE, then INSERT when there was no row: portable SQL, and the write transaction keeps anyone else
  // from inserting the key in between.
  const int64_t changed = KEEL_TRY(tx.execute("UPDATE settings SET value = ?, updated_at = ? WHERE key = ?",
                                              {value, now, std::string(kEventEpochKey)}));
  if (changed == 0) {
    KEEL_TRY(tx.execute("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)",
                        {std::string(kEventEpochKey), value, now}));
  }
  return epoch;
}

}  // namespace keel
