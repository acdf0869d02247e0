// store/thread_repository.h — threads and their node trees.
//
// A thread is a tree of nodes; its leaf is the tip of the selected branch, and a branch is the path from a
// leaf to the root. Nodes are append-only. A fork is a new thread whose history *is* a path of its parent
// thread (fork_node_id and everything above it): nodes are shared, never copied, so a fork costs one row.
//
// Every mutation runs inside the caller's write transaction and bumps the thread's revision; the leaf
// moves in the same transaction as the node it points to (docs/architecture.md §7). Methods take a
// Transaction and hold no state between calls apart from the injected clock, so one repository may serve
// every thread. Errors: thread.not_found, thread.deleted, node.not_found, node.not_in_thread,
// node.not_a_leaf, revision.conflict, store.payload_too_large, and any store error.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "keel/clock.h"
#include "keel/error.h"
#include "keel/store.h"
#include "store/records.h"

namespace keel {

struct NewNode {
  std::string id;  // assigned by the caller before persistence
  std::string thread_id;
  NodeKind kind = NodeKind::kNotice;
  nlohmann::json body = nlohmann::json::object();
  std::optional<std::string> run_id = std::nullopt;
  // The node to append under; nullopt appends under the thread's current leaf. A parent other than the
  // leaf starts a new branch (for example, an edited user message).
  std::optional<std::string> parent_id = std::nullopt;
  // Appends with no parent at all (parent_id is then ignored): a new root, a branch that shares no history
  // with the others (an edited first message).
  bool at_root = false;
};

struct BranchInfo {
  std::string leaf_node_id;
  int64_t leaf_seq = 0;  // creation order of the leaf within the thread (0 for an inherited leaf)
  int64_t leaf_created_at = 0;
  bool selected = false;  // the thread's current leaf
};

class ThreadRepository {
 public:
  // Largest node body, in bytes of canonical JSON.
  static constexpr size_t kMaxNodeBodyBytes = 4 * 1024 * 1024;

  // `clock` must outlive the repository.
  explicit ThreadRepository(const Clock& clock) : clock_(clock) {}

  // `title_given`: a person chose the title (set_title() will not replace it). `model`: the thread's chosen
  // model (nullopt: the engine's default).
  Result<ThreadRecord> create(Transaction& tx, std::string id, std::string title, bool title_given = false,
                              std::optional<std::string> model = std::nullopt);
  // The thread, deleted or not. thread.not_found when there is none.
  Result<ThreadRecord> get(Transaction& tx, const std::string& id);
  // Like get(), but thread.deleted for a deleted thread.
  Result<ThreadRecord> get_live(Transaction& tx, const std::string& id);
  // Live threads, most recently updated first.
  Result<std::vector<ThreadRecord>> list(Transaction& tx, int64_t limit = 1000);
  // Marks the thread deleted (its nodes stay: forks may share them). Idempotent on a deleted thread.
  Result<ThreadRecord> mark_deleted(Transaction& tx, const std::string& id);
  // Sets an automatic title (the first turn's fallback, the task model's). A title a person gave is kept:
  // the thread is returned unchanged, revision included.
  Result<ThreadRecord> set_title(Transaction& tx, const std::string& id, std::string title);
  // Chooses the model the thread's next turns use (nullopt: the engine's default). The store does not know
  // which models exist; the engine checks the name first.
  Result<ThreadRecord> set_model(Transaction& tx, const std::string& id, std::optional<std::string> model);
  // Chooses the MCP servers whose tools the thread's next turns may use (nullopt: every enabled server). Like
  // the model, the store does not know which servers are configured.
  Result<ThreadRecord> set_mcp_servers(Transaction& tx, const std::string& id,
                                       std::optional<std::vector<std::string>> servers);
  // Bumps the revision (for changes to records that belong to the thread, like its queue).
  Result<ThreadRecord> touch(Transaction& tx, const std::string& id);

  // Appends a node and moves the leaf to it, in the caller's transaction.
  Result<NodeRecord> append(Transaction& tx, NewNode node);
  Result<NodeRecord> get_node(Transaction& tx, const std::string& node_id);
  // Nodes of the thread itself (not inherited ones), in creation order, with seq > after_seq.
  Result<std::vector<NodeRecord>> nodes_of(Transaction& tx, const std::string& thread_id,
                                           int64_t after_seq = 0);
  // The path from the root to `leaf_id` (root first), crossing into parent threads for forks.
  Result<std::vector<NodeRecord>> path_to(Transaction& tx, const std::string& leaf_id);

  // Creates thread `new_id` whose history is the path to `at_node_id` of `source_id` (default: the
  // source's leaf), with the source's model and MCP servers. No node is written: the fork is empty until
  // something is appended.
  Result<ThreadRecord> fork(Transaction& tx, const std::string& source_id, std::string new_id,
                            std::optional<std::string> at_node_id, std::optional<std::string> title);
  // Moves the leaf to another leaf of the thread's tree.
  Result<ThreadRecord> select_branch(Transaction& tx, const std::string& thread_id,
                                     const std::string& leaf_id);
  // Every leaf of the thread's tree, oldest first.
  Result<std::vector<BranchInfo>> list_branches(Transaction& tx, const std::string& thread_id);

  // True when `node_id` belongs to the thread's tree: one of its own nodes, or on its inherited path.
  Result<bool> contains(Transaction& tx, const ThreadRecord& thread, const std::string& node_id);
  // True when `node_id` is a leaf of the thread's tree (a branch list_branches gives).
  Result<bool> is_leaf(Transaction& tx, const ThreadRecord& thread, const std::string& node_id);
  // True when some node of `kind`, in any thread, has `node_id` as its parent.
  Result<bool> has_child_of_kind(Transaction& tx, const std::string& node_id, NodeKind kind);

 private:
  Result<bool> has_children_in(Transaction& tx, const std::string& node_id, const std::string& thread_id);
  Result<ThreadRecord> bump(Transaction& tx, const ThreadRecord& thread, std::optional<std::string> leaf,
                            int64_t next_seq);
  const Clock& clock_;
};

}  // namespace keel
