#include "store/queue_repository.h"

#include <utility>

#include "keel/error_codes.h"
#include "store/json_column.h"

namespace keel {
namespace {

constexpr char kQueueColumns[] = "id, thread_id, position, input, revision, created_at, updated_at";

Result<QueuedInput> item_from_row(const SqlRow& row) {
  QueuedInput item;
  item.id = row.text(0);
  item.thread_id = row.text(1);
  item.position = row.integer(2);
  item.input = KEEL_TRY(decode_json_column(row.text(3), "input of queued item " + item.id));
  item.revision = row.integer(4);
  item.created_at = row.integer(5);
  item.updated_at = row.integer(6);
  return item;
}

}  // namespace

Result<QueuedInput> QueueRepository::enqueue(Transaction& tx, QueuedInput item) {
  if (item.id.empty()) return fail(codes::kInvalidArgument, "a queued input needs an id");
  auto thread = KEEL_TRY(tx.query_one("SELECT deleted FROM threads WHERE id = ?", {item.thread_id}));
  if (!thread) return fail(codes::kThreadNotFound, "no thread " + item.thread_id);
  if (thread->integer(0) != 0)
    return fail(codes::kThreadDeleted, "thread " + item.thread_id + " was deleted");

  std::string input = KEEL_TRY(encode_json_column(item.input, kMaxInputBytes));
  auto stats = KEEL_TRY(tx.query_one(
      "SELECT COUNT(*), COALESCE(MAX(position), 0) FROM run_queue WHERE thread_id = ?", {item.thread_id}));
  const int64_t queued = stats ? stats->integer(0) : 0;
  const int64_t last_position = stats ? stats->integer(1) : 0;
  if (queued >= kMaxQueuedPerThread) {
    return fail(codes::kQueueFull, "thread " + item.thread_id + " already has " + std::to_string(queued) +
                                       " queued inputs (the limit is " + std::to_string(kMaxQueuedPerThread) +
                                       ")");
  }
  const int64_t now = clock_.now_unix_ms();
  item.position = last_position + 1;
  item.revision = 1;
  item.created_at = now;
  item.updated_at = now;
  KEEL_TRY(
      tx.execute("INSERT INTO run_queue (" + std::string(kQueueColumns) + ") VALUES (?, ?, ?, ?, ?, ?, ?)",
                 {item.id, item.thread_id, item.position, input, item.revision, now, now}));
  return item;
}

Result<std::vector<QueuedInput>> QueueRepository::list(Transaction& tx, const std::string& thread_id) {
  auto rows = KEEL_TRY(tx.query(
      "SELECT " + std::string(kQueueColumns) + " FROM run_queue WHERE thread_id = ? ORDER BY position, id",
      {thread_id}));
  std::vector<QueuedInput> items;
  items.reserve(rows.size());
  for (const SqlRow& row : rows) items.push_back(KEEL_TRY(item_from_row(row)));
  return items;
}

Result<QueuedInput> QueueRepository::get(Transaction& tx, const std::string& thread_id,
                                         const std::string& item_id) {
  auto row = KEEL_TRY(
      tx.query_one("SELECT " + std::string(kQueueColumns) + " FROM run_queue WHERE id = ? AND thread_id = ?",
                   {item_id, thread_id}));
  if (!row) return fail(codes::kQueueItemNotFound, "thread " + thread_id + " has no queued item " + item_id);
  return item_from_row(*row);
}

Result<QueuedInput> QueueRepository::update(Transaction& tx, const std::string& thread_id,
                                            const std::string& item_id, nlohmann::json input,
                                            std::optional<int64_t> expected_revision) {
  QueuedInput item = KEEL_TRY(get(tx, thread_id, item_id));
  if (expected_revision && *expected_revision != item.revision) {
    return fail(codes::kRevisionConflict, "queued item " + item_id + " is at revision " +
                                              std::to_string(item.revision) + ", not " +
                                              std::to_string(*expected_revision));
  }
  std::string text = KEEL_TRY(encode_json_column(input, kMaxInputBytes));
  const int64_t now = clock_.now_unix_ms();
  const int64_t changed = KEEL_TRY(tx.execute(
      "UPDATE run_queue SET input = ?, revision = revision + 1, updated_at = ? WHERE id = ? AND revision = ?",
      {text, now, item_id, item.revision}));
  if (changed != 1)
    return fail(codes::kRevisionConflict, "queued item " + item_id + " changed while updating it");
  item.input = std::move(input);
  item.revision += 1;
  item.updated_at = now;
  return item;
}

Result<QueuedInput> QueueRepository::remove(Transaction& tx, const std::string& thread_id,
                                            const std::string& item_id) {
  QueuedInput item = KEEL_TRY(get(tx, thread_id, item_id));
  KEEL_TRY(tx.execute("DELETE FROM run_queue WHERE id = ?", {item_id}));
  return item;
}

Result<std::optional<QueuedInput>> QueueRepository::pop_front(Transaction& tx, const std::string& thread_id) {
  auto row = KEEL_TRY(tx.query_one("SELECT " + std::string(kQueueColumns) +
                                       " FROM run_queue WHERE thread_id = ? ORDER BY position, id LIMIT 1",
                                   {thread_id}));
  if (!row) return std::optional<QueuedInput>();
  QueuedInput item = KEEL_TRY(item_from_row(*row));
  KEEL_TRY(tx.execute("DELETE FROM run_queue WHERE id = ?", {item.id}));
  return std::optional<QueuedInput>(std::move(item));
}

Result<int64_t> QueueRepository::count(Transaction& tx, const std::string& thread_id) {
  auto row = KEEL_TRY(tx.query_one("SELECT COUNT(*) FROM run_queue WHERE thread_id = ?", {thread_id}));
  return row ? row->integer(0) : 0;
}

Result<std::vector<std::string>> QueueRepository::threads_with_items(Transaction& tx) {
  auto rows = KEEL_TRY(tx.query("SELECT DISTINCT thread_id FROM run_queue ORDER BY thread_id", {}));
  std::vector<std::string> threads;
  threads.reserve(rows.size());
  for (const SqlRow& row : rows) threads.push_back(row.text(0));
  return threads;
}

}  // namespace keel
