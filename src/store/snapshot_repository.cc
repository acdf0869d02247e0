#include "store/snapshot_repository.h"

#include <utility>

#include "keel/error_codes.h"
#include "store/json_column.h"

namespace keel {

Result<EnvironmentSnapshotRecord> SnapshotRepository::put(Transaction& tx,
                                                          EnvironmentSnapshotRecord snapshot) {
  if (snapshot.id.empty() || snapshot.digest.empty()) {
    return fail(codes::kInvalidArgument, "a snapshot needs an id and a digest");
  }
  if (snapshot.version < 1) {
    return fail(codes::kInvalidArgument, "snapshot " + snapshot.id + " has version " +
                                             std::to_string(snapshot.version) + "; expected >= 1");
  }
  std::string body = KEEL_TRY(encode_json_column(snapshot.body, kMaxBodyBytes));
  snapshot.created_at = clock_.now_unix_ms();
  KEEL_TRY(tx.execute(
      "INSERT INTO environment_snapshots (id, version, digest, body, created_at) VALUES (?, ?, ?, ?, ?)",
      {snapshot.id, snapshot.version, snapshot.digest, body, snapshot.created_at}));
  return snapshot;
}

Result<EnvironmentSnapshotRecord> SnapshotRepository::get(Transaction& tx, const std::string& snapshot_id) {
  auto row = KEEL_TRY(tx.query_one(
      "SELECT id, version, digest, body, created_at FROM environment_snapshots WHERE id = ?", {snapshot_id}));
  if (!row) return fail(codes::kSnapshotNotFound, "no environment snapshot " + snapshot_id);
  EnvironmentSnapshotRecord snapshot;
  snapshot.id = row->text(0);
  snapshot.version = static_cast<int>(row->integer(1));
  snapshot.digest = row->text(2);
  snapshot.body = KEEL_TRY(decode_json_column(row->text(3), "body of environment snapshot " + snapshot.id));
  snapshot.created_at = row->integer(4);
  return snapshot;
}

}  // namespace keel
