// engine/thread_views.h — the protocol's JSON shapes of threads, runs and nodes (docs/protocol.md:
// thread.list, thread.read; queued inputs are protocol/events.h's queue_items_payload), and the read-only
// queries that build thread.list's and thread.read's results from a transaction. The engine answers those ops
// with them and `keel threads list|show` prints them, so the CLI's shapes and the protocol's cannot drift.
//
// Read-only: every function reads through the transaction it is given and writes nothing. Any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "keel/error.h"
#include "keel/store.h"
#include "store/records.h"
#include "store/run_repository.h"
#include "store/thread_repository.h"

namespace keel {

// An entry of thread.list: threadId, title, revision, leafNodeId, parentThreadId, model (the chosen model's
// name; null: the engine's default), updatedAt.
nlohmann::json thread_entry_json(const ThreadRecord& thread);
// A run as thread.read's latestRun shows it: runId, turnId, state, stopReason, usage.
nlohmann::json run_summary_json(const RunRecord& run);
// A node of thread.read's path: id, kind, runId, body, createdAt.
nlohmann::json node_json(const NodeRecord& node);

// thread.list's result: {threads: [thread_entry_json...]}, live threads in the repository's order.
Result<nlohmann::json> list_threads_view(Transaction& tx, ThreadRepository& threads);
// thread.read's result without lastSeq (which only an engine's event bus knows): threadId, title, revision,
// leafNodeId, model (as in thread.list), nodes (the path from the root to the leaf) and latestRun (null when
// the thread has no run). Errors: thread.not_found (no live thread), store errors.
Result<nlohmann::json> read_thread_view(Transaction& tx, ThreadRepository& threads, RunRepository& runs,
                                        const std::string& thread_id);

// thread.branches's bound: at most this many branches, the newest (the selected one always among them).
inline constexpr size_t kMaxBranchesListed = 200;
// thread.branches's preview: at most this many characters of a branch's last user or assistant text.
inline constexpr size_t kBranchPreviewChars = 120;

// thread.branches's result without lastSeq: threadId, selectedLeafNodeId (null for a thread without
// nodes), branches (newest leaf first: leafNodeId, forkNodeId — the last node the branch shares with the
// selected one, null for the selected branch and for one that shares no node with it —, firstNodeId and
// firstNodeCreatedAt — the branch's first node the selected one does not hold, null for the selected
// branch —, lastNodeKind, preview, updatedAt (the leaf's createdAt), length (nodes from the root to the
// leaf)) and truncated. Errors: thread.not_found, thread.deleted, store
// errors.
Result<nlohmann::json> thread_branches_view(Transaction& tx, ThreadRepository& threads,
                                            const std::string& thread_id);
// The first kBranchPreviewChars characters of the text blocks of the last user or assistant message on
// `path` (root first); "" when it has none. Cut between characters, so it stays well-formed UTF-8.
std::string branch_preview(const std::vector<NodeRecord>& path);

}  // namespace keel
