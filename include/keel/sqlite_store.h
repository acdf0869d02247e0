// keel/sqlite_store.h — the SQLite backend of keel/store.h: the factory that opens a keel store in one
// SQLite file.
//
// The file is in WAL mode; one engine per file (a host holds a lock on it, docs/architecture.md). Schema
// and migrations: docs/store.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "keel/clock.h"
#include "keel/error.h"
#include "keel/fail_points.h"
#include "keel/store.h"

namespace keel {

enum class Synchronous { kOff, kNormal, kFull };

struct SqliteStoreOptions {
  std::string path;
  // kFull (default) survives power loss; kNormal survives a process crash but may lose the last
  // commits on power loss; kOff is for tests and benchmarks only.
  Synchronous synchronous = Synchronous::kFull;
  // How long begin()/statements wait for a lock held by another process before store.busy.
  int busy_timeout_ms = 5000;
  // Upper bound on the database size in pages (0 = unlimited). Exceeding it fails like a full disk.
  int64_t max_page_count = 0;
  // Largest single text or blob value a statement may carry; larger ones fail with
  // store.payload_too_large before reaching the database.
  size_t max_value_bytes = 16 * 1024 * 1024;
  // Fail points hit at every transaction boundary. Not owned; must outlive the store. May be null.
  FailPoints* fail_points = nullptr;
  // Time budget of the PRAGMA quick_check run at open (a damaged file is refused with store.corrupt
  // before anything is read or written). A check that runs out of time is abandoned and the store opens;
  // node digests still guard every node read. 0 skips the check.
  int64_t quick_check_ms = 2000;
  // The clock the budget is measured on. Not owned; must outlive open_sqlite_store(). Null: the system
  // clock.
  const Clock* clock = nullptr;
};

// Opens (creating if missing) a SQLite database in WAL mode, checks it (PRAGMA quick_check, bounded by
// quick_check_ms) and migrates it to the current schema.
// Errors: store.open_failed, store.corrupt (not a database / damaged: the check failed; the message says
// how to recover, nothing was changed), store.foreign_database (a SQLite
// file that is not keel's), store.schema_too_new (written by a newer keel), store.busy (locked),
// store.migration_failed.
Result<std::unique_ptr<Store>> open_sqlite_store(const SqliteStoreOptions& options);

}  // namespace keel
