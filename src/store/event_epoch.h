// store/event_epoch.h — the engine's event epoch: a counter in the `settings` table that every engine start
// takes the next value of, so event seqs stay increasing across restarts (engine/event_bus.h stamps seqs
// above epoch * 2^32) without writing anything per event.
//
// Errors: the store's; store.decode_failed when the stored value is not a non-negative integer.
#pragma once

#include <cstdint>

#include "keel/clock.h"
#include "keel/error.h"
#include "keel/store.h"

namespace keel {

inline constexpr char kEventEpochKey[] = "events.epoch";

// Reads the stored epoch (0 when none), stores it + 1 and returns that, in the caller's write transaction.
Result<uint64_t> take_event_epoch(Transaction& tx, const Clock& clock);
// The stored epoch (0 when none), for a reader.
Result<uint64_t> stored_event_epoch(Transaction& tx);

}  // namespace keel
