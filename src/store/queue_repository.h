// store/queue_repository.h — the bounded queue of inputs waiting to run as a thread's next turns.
//
// spec §3 (turn.enqueue): a queued input runs as the next turn after the current one finishes; a thread
// holds at most kMaxQueuedPerThread of them. Items keep the order they were enqueued in: an item's
// position is one more than the largest position in its thread's queue, and removing or popping an item
// leaves the others' positions alone (positions may have gaps; only their order matters).
//
// Every mutation runs inside the caller's write transaction. Each item has its own revision, which starts
// at 1 and is bumped by update(). The thread's revision is the caller's to bump (ThreadRepository::touch)
// in the same transaction, so that queue.updated reports a persisted thread revision.
//
// Errors: queue.full, queue.item_not_found (also for an item of another thread), revision.conflict,
// thread.not_found, thread.deleted (enqueue), invalid_argument, store.payload_too_large, store.decode_failed
// (a damaged row), store.constraint (a duplicate id), and any store error.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "keel/clock.h"
#include "keel/error.h"
#include "keel/store.h"
#include "store/records.h"

namespace keel {

class QueueRepository {
 public:
  static constexpr int64_t kMaxQueuedPerThread = 8;
  // Largest queued input, in bytes of canonical JSON.
  static constexpr size_t kMaxInputBytes = 4 * 1024 * 1024;

  // `clock` must outlive the repository.
  explicit QueueRepository(const Clock& clock) : clock_(clock) {}

  // Appends `item` (id, thread_id and input are used; position, revision 1 and timestamps are assigned)
  // to the queue of a live thread. queue.full when the thread already has kMaxQueuedPerThread items.
  Result<QueuedInput> enqueue(Transaction& tx, QueuedInput item);
  // The thread's queued items, front first.
  Result<std::vector<QueuedInput>> list(Transaction& tx, const std::string& thread_id);
  Result<QueuedInput> get(Transaction& tx, const std::string& thread_id, const std::string& item_id);
  // Replaces the item's input and bumps its revision; its position is kept. revision.conflict when
  // `expected_revision` is given and differs from the stored one.
  Result<QueuedInput> update(Transaction& tx, const std::string& thread_id, const std::string& item_id,
                             nlohmann::json input, std::optional<int64_t> expected_revision = std::nullopt);
  // Removes the item and returns it as it was stored.
  Result<QueuedInput> remove(Transaction& tx, const std::string& thread_id, const std::string& item_id);
  // Removes and returns the front item; nullopt when the queue is empty.
  Result<std::optional<QueuedInput>> pop_front(Transaction& tx, const std::string& thread_id);
  Result<int64_t> count(Transaction& tx, const std::string& thread_id);
  // Threads with at least one queued input (recovery starts the queues a crash left behind).
  Result<std::vector<std::string>> threads_with_items(Transaction& tx);

 private:
  const Clock& clock_;
};

}  // namespace keel
