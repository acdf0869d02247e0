// store/snapshot_repository.h — run environment snapshots (spec §4, §5).
//
// A snapshot freezes what a run was started with: prompt, skills, model parameters, provider transport,
// credential reference shape, and the tool catalog with each entry's digest. Recovery checks its version
// and digest before a started run continues. This repository computes nothing: the caller builds, bounds
// and digests the body (SHA-256 over canonical JSON) and the repository stores digest and body as given,
// refusing a body larger than kMaxBodyBytes. Snapshots are immutable: there is no update.
//
// Methods run inside the caller's transaction. Errors: snapshot.not_found, invalid_argument,
// store.payload_too_large, json.* (a body that cannot be encoded), store.decode_failed (a damaged row),
// store.constraint (a duplicate id), and any store error.
#pragma once

#include <string>

#include "keel/clock.h"
#include "keel/error.h"
#include "keel/store.h"
#include "store/records.h"

namespace keel {

class SnapshotRepository {
 public:
  // Largest snapshot body, in bytes of canonical JSON (a backstop: the snapshot builder bounds it first).
  static constexpr size_t kMaxBodyBytes = 4 * 1024 * 1024;

  // `clock` must outlive the repository.
  explicit SnapshotRepository(const Clock& clock) : clock_(clock) {}

  // Inserts the snapshot; the repository sets created_at. An empty id or digest, or a version below 1, is
  // invalid_argument.
  Result<EnvironmentSnapshotRecord> put(Transaction& tx, EnvironmentSnapshotRecord snapshot);
  // snapshot.not_found when there is none.
  Result<EnvironmentSnapshotRecord> get(Transaction& tx, const std::string& snapshot_id);

 private:
  const Clock& clock_;
};

}  // namespace keel
