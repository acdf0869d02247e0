// EngineCore::Impl, the read ops: thread.list, thread.read, thread.branches and queue.list answer from one
// read transaction, with the event seq taken before it so a client knows which events the answer already
// holds; publish_queue sends queue.updated after a change. Op routing is in engine_core.cc.
#include "engine/engine_core.h"
#include "engine/engine_impl.h"
#include "engine/thread_views.h"
#include "protocol/events.h"

namespace keel {

void EngineCore::Impl::publish_queue(const std::string& thread_id) {
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return;
  auto items = queue_.list(**tx, thread_id);
  auto thread = threads_.get(**tx, thread_id);
  if (!items || !thread) return;
  publish_event(thread_id, events::queue_updated(*thread, *items));
}

void EngineCore::Impl::list_queue(const Op& op, const protocol::QueueListParams& params) {
  const std::string& thread_id = params.thread_id;
  // Taken before the snapshot: every event up to it reports something the snapshot already holds.
  const uint64_t last_seq = bus_.last_seq(thread_id);
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return reject(op, thread_id, tx.error());
  auto thread = threads_.get_live(**tx, thread_id);
  if (!thread) return reject(op, thread_id, thread.error());
  auto items = queue_.list(**tx, thread_id);
  if (!items) return reject(op, thread_id, items.error());
  ack(op, thread_id,
      {{"threadId", thread_id},
       {"items", events::queue_items_payload(*items)},
       {"revision", thread->revision},
       {"lastSeq", last_seq}});
}

void EngineCore::Impl::list_threads(const Op& op) {
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return reject(op, "", tx.error());
  auto list = list_threads_view(**tx, threads_);
  if (!list) return reject(op, "", list.error());
  ack(op, "", std::move(*list));
}

void EngineCore::Impl::read_thread(const Op& op, const protocol::ThreadReadParams& params) {
  const std::string& thread_id = params.thread_id;
  // Taken before the snapshot: every event up to it reports something the snapshot already holds, so a
  // client applies only the events after it (docs/protocol.md, Reconnecting).
  const uint64_t last_seq = bus_.last_seq(thread_id);
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return reject(op, thread_id, tx.error());
  auto view = read_thread_view(**tx, threads_, runs_, thread_id);
  if (!view) return reject(op, thread_id, view.error());
  (*view)["lastSeq"] = last_seq;
  ack(op, thread_id, std::move(*view));
}

void EngineCore::Impl::read_branches(const Op& op, const protocol::ThreadBranchesParams& params) {
  const std::string& thread_id = params.thread_id;
  // Taken before the snapshot, as for thread.read.
  const uint64_t last_seq = bus_.last_seq(thread_id);
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return reject(op, thread_id, tx.error());
  auto view = thread_branches_view(**tx, threads_, thread_id);
  if (!view) return reject(op, thread_id, view.error());
  (*view)["lastSeq"] = last_seq;
  ack(op, thread_id, std::move(*view));
}

}  // namespace keel
