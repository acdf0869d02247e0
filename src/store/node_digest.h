// store/node_digest.h — the digest that seals each stored node, so that a damaged node is noticed when it
// is read instead of being served (issue 15 point 11).
//
// nodes.digest (schema 4) holds the lowercase hex SHA-256 over the node's columns id, thread_id,
// parent_id, kind, run_id, seq, body and created_at, each framed with its SQL type and length, so that no
// change of a byte, a type (an integer read back as text) or a NULL goes unnoticed and no two different rows
// frame to the same bytes. It is written with the row (ThreadRepository::append) and checked by every read
// of a node's body (ThreadRepository, SessionContextBuilder); the migration to schema 4 computes it for the
// rows that existed before. A row whose digest does not match, or that is not the row that was asked for (a
// damaged index can lead a lookup to another row), is refused with store.corrupt.
//
// What it does not cover: other tables (threads, runs, ...), whose damage PRAGMA quick_check at open may
// catch, and a row deleted whole. Nodes are append-only and never updated, so the digest never changes.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "keel/error.h"
#include "keel/store.h"
#include "store/schema.h"

namespace keel {

// The columns a verified read selects, in this order; the digest is the ninth.
inline constexpr std::string_view kNodeDigestColumns =
    "id, thread_id, parent_id, kind, run_id, seq, body, created_at, digest";
inline constexpr size_t kNodeDigestedColumnCount = 8;

// What a store.corrupt message about a node ends with: what happened and how to recover.
inline constexpr std::string_view kNodeRecovery =
    "; the store file is damaged. keel changed nothing. Stop keel, keep a copy of the file (with its -wal "
    "and "
    "-shm files), then restore a backup or salvage what is intact with `sqlite3 keel.db .recover | sqlite3 "
    "recovered.db` and point store.path at the result (docs/store.md, \"Damage\")";

// The digest of a node row's first kNodeDigestedColumnCount values, in kNodeDigestColumns' order.
// Precondition: values.size() >= kNodeDigestedColumnCount.
std::string node_digest(std::span<const SqlValue> values);

// Checks a row selected with kNodeDigestColumns: its digest matches, and (when given) it is the node
// `expected_id` (of thread `expected_thread`). Errors: store.corrupt, naming the node and how to recover.
Result<void> verify_node_row(const SqlRow& row, std::string_view expected_id = {},
                             std::string_view expected_thread = {});

// Sets the digest of every node row that has none, a batch at a time (the program of the migration to
// schema 4, inside its transaction).
Result<void> backfill_node_digests(MigrationSql& sql);

}  // namespace keel
