#include "store/thread_repository.h"

#include <algorithm>
#include <unordered_set>

#include "keel/error_codes.h"
#include "store/json_column.h"
#include "store/node_body.h"
#include "store/node_digest.h"

namespace keel {
namespace {

constexpr char kThreadColumns[] =
    "id, title, leaf_node_id, parent_thread_id, fork_node_id, revision, next_node_seq, created_at, "
    "updated_at, "
    "deleted, title_given, model, mcp_servers";
constexpr char kNodeColumns[] = "id, thread_id, parent_id, kind, run_id, seq, body, created_at, digest";

// threads.mcp_servers: NULL or a JSON array of names; anything else is a damaged row.
Result<std::optional<std::vector<std::string>>> mcp_servers_from_column(
    const std::optional<std::string>& text, const std::string& thread_id) {
  const std::string what = "threads.mcp_servers of thread " + thread_id;
  auto value = KEEL_TRY(decode_optional_json_column(text, what));
  if (!value) return std::optional<std::vector<std::string>>();
  std::vector<std::string> names;
  if (!value->is_array()) return fail(codes::kStoreDecode, what + " is not a JSON array");
  for (const auto& name : *value) {
    if (!name.is_string()) return fail(codes::kStoreDecode, what + " holds a value that is not a name");
    names.push_back(name.get<std::string>());
  }
  return std::optional<std::vector<std::string>>(std::move(names));
}

Result<ThreadRecord> thread_from_row(const SqlRow& row) {
  ThreadRecord t;
  t.id = row.text(0);
  t.title = row.text(1);
  t.leaf_node_id = row.optional_text(2);
  t.parent_thread_id = row.optional_text(3);
  t.fork_node_id = row.optional_text(4);
  t.revision = row.integer(5);
  t.next_node_seq = row.integer(6);
  t.created_at = row.integer(7);
  t.updated_at = row.integer(8);
  t.deleted = row.integer(9) != 0;
  t.title_given = row.integer(10) != 0;
  t.model = row.optional_text(11);
  t.mcp_servers = KEEL_TRY(mcp_servers_from_column(row.optional_text(12), t.id));
  return t;
}

// `expected_id` / `expected_thread`: what the query asked for, "" when not one node or one thread.
Result<NodeRecord> node_from_row(const SqlRow& row, std::string_view expected_id = {},
                                 std::string_view expected_thread = {}) {
  KEEL_TRY(verify_node_row(row, expected_id, expected_thread));
  NodeRecord n;
  n.id = row.text(0);
  n.thread_id = row.text(1);
  n.parent_id = row.optional_text(2);
  n.kind = KEEL_TRY(parse_node_kind(row.text(3)));
  n.run_id = row.optional_text(4);
  n.seq = row.integer(5);
  n.body = KEEL_TRY(decode_json_column(row.text(6), "body of node " + n.id));
  n.created_at = row.integer(7);
  return n;
}

Result<std::vector<NodeRecord>> nodes_from_rows(const std::vector<SqlRow>& rows, std::string_view thread_id) {
  std::vector<NodeRecord> nodes;
  nodes.reserve(rows.size());
  for (const SqlRow& row : rows) nodes.push_back(KEEL_TRY(node_from_row(row, {}, thread_id)));
  return nodes;
}

}  // namespace

Result<ThreadRecord> ThreadRepository::create(Transaction& tx, std::string id, std::string title,
                                              bool title_given, std::optional<std::string> model) {
  const int64_t now = clock_.now_unix_ms();
  KEEL_TRY(
      tx.execute("INSERT INTO threads (id, title, leaf_node_id, parent_thread_id, fork_node_id, revision, "
                 "next_node_seq, created_at, updated_at, deleted, title_given, model) "
                 "VALUES (?, ?, NULL, NULL, NULL, 1, 1, ?, ?, 0, ?, ?)",
                 {id, title, now, now, int64_t{title_given ? 1 : 0}, model}));
  return get(tx, id);
}

Result<ThreadRecord> ThreadRepository::get(Transaction& tx, const std::string& id) {
  auto row =
      KEEL_TRY(tx.query_one(std::string("SELECT ") + kThreadColumns + " FROM threads WHERE id = ?", {id}));
  if (!row) return fail(codes::kThreadNotFound, "no thread " + id);
  return thread_from_row(*row);
}

Result<ThreadRecord> ThreadRepository::get_live(Transaction& tx, const std::string& id) {
  ThreadRecord thread = KEEL_TRY(get(tx, id));
  if (thread.deleted) return fail(codes::kThreadDeleted, "thread " + id + " was deleted");
  return thread;
}

Result<std::vector<ThreadRecord>> ThreadRepository::list(Transaction& tx, int64_t limit) {
  auto rows =
      KEEL_TRY(tx.query(std::string("SELECT ") + kThreadColumns +
                            " FROM threads WHERE deleted = 0 ORDER BY updated_at DESC, id DESC LIMIT ?",
                        {limit}));
  std::vector<ThreadRecord> threads;
  threads.reserve(rows.size());
  for (const SqlRow& row : rows) threads.push_back(KEEL_TRY(thread_from_row(row)));
  return threads;
}

Result<ThreadRecord> ThreadRepository::bump(Transaction& tx, const ThreadRecord& thread,
                                            std::optional<std::string> leaf, int64_t next_seq) {
  const int64_t now = clock_.now_unix_ms();
  KEEL_TRY(tx.execute(
      "UPDATE threads SET leaf_node_id = ?, next_node_seq = ?, revision = revision + 1, updated_at = ? "
      "WHERE id = ?",
      {leaf, next_seq, now, thread.id}));
  ThreadRecord updated = thread;
  updated.leaf_node_id = std::move(leaf);
  updated.next_node_seq = next_seq;
  updated.revision += 1;
  updated.updated_at = now;
  return updated;
}

Result<ThreadRecord> ThreadRepository::mark_deleted(Transaction& tx, const std::string& id) {
  ThreadRecord thread = KEEL_TRY(get(tx, id));
  if (thread.deleted) return thread;
  const int64_t now = clock_.now_unix_ms();
  KEEL_TRY(tx.execute("UPDATE threads SET deleted = 1, revision = revision + 1, updated_at = ? WHERE id = ?",
                      {now, id}));
  return get(tx, id);
}

Result<ThreadRecord> ThreadRepository::set_title(Transaction& tx, const std::string& id, std::string title) {
  ThreadRecord thread = KEEL_TRY(get_live(tx, id));
  if (thread.title_given) return thread;
  const int64_t now = clock_.now_unix_ms();
  KEEL_TRY(tx.execute("UPDATE threads SET title = ?, revision = revision + 1, updated_at = ? WHERE id = ?",
                      {title, now, id}));
  return get(tx, id);
}

Result<ThreadRecord> ThreadRepository::set_model(Transaction& tx, const std::string& id,
                                                 std::optional<std::string> model) {
  KEEL_TRY(get_live(tx, id));
  const int64_t now = clock_.now_unix_ms();
  KEEL_TRY(tx.execute("UPDATE threads SET model = ?, revision = revision + 1, updated_at = ? WHERE id = ?",
                      {model, now, id}));
  return get(tx, id);
}

Result<ThreadRecord> ThreadRepository::set_mcp_servers(Transaction& tx, const std::string& id,
                                                       std::optional<std::vector<std::string>> servers) {
  KEEL_TRY(get_live(tx, id));
  std::optional<std::string> column;
  if (servers) column = KEEL_TRY(encode_json_column(nlohmann::json(*servers)));
  const int64_t now = clock_.now_unix_ms();
  KEEL_TRY(
      tx.execute("UPDATE threads SET mcp_servers = ?, revision = revision + 1, updated_at = ? WHERE id = ?",
                 {column, now, id}));
  return get(tx, id);
}

Result<ThreadRecord> ThreadRepository::touch(Transaction& tx, const std::string& id) {
  ThreadRecord thread = KEEL_TRY(get_live(tx, id));
  return bump(tx, thread, thread.leaf_node_id, thread.next_node_seq);
}

Result<bool> ThreadRepository::contains(Transaction& tx, const ThreadRecord& thread,
                                        const std::string& node_id) {
  auto row = KEEL_TRY(tx.query_one("SELECT thread_id FROM nodes WHERE id = ?", {node_id}));
  if (!row) return false;
  if (row->text(0) == thread.id) return true;
  // Inherited history: the node must be the fork point or one of its ancestors (possibly across several
  // generations of forks, which path_to follows).
  if (!thread.fork_node_id) return false;
  std::optional<std::string> cursor = thread.fork_node_id;
  while (cursor) {
    if (*cursor == node_id) return true;
    auto parent = KEEL_TRY(tx.query_one("SELECT parent_id FROM nodes WHERE id = ?", {*cursor}));
    if (!parent) return fail(codes::kStoreDecode, "node " + *cursor + " is missing from the store");
    cursor = parent->optional_text(0);
  }
  return false;
}

Result<NodeRecord> ThreadRepository::append(Transaction& tx, NewNode node) {
  // A body that would not decode is refused now rather than found later, when a context is built.
  ThreadRecord thread = KEEL_TRY(get_live(tx, node.thread_id));
  std::optional<std::string> parent = node.parent_id ? node.parent_id : thread.leaf_node_id;
  if (node.at_root) parent.reset();
  if (!node.at_root && node.parent_id && !KEEL_TRY(contains(tx, thread, *node.parent_id))) {
    return fail(codes::kNodeNotInThread, "node " + *node.parent_id + " is not in thread " + thread.id);
  }
  std::string body = KEEL_TRY(encode_json_column(node.body, kMaxNodeBodyBytes));
  if (auto valid = validate_node_body(node.kind, node.body); !valid) {
    return fail(codes::kInvalidArgument,
                "malformed " + std::string(to_string(node.kind)) + " body: " + valid.error().message());
  }
  const int64_t now = clock_.now_unix_ms();
  const int64_t seq = thread.next_node_seq;
  std::vector<SqlValue> values = {node.id,     thread.id, parent,          to_string(node.kind),
                                  node.run_id, seq,       std::move(body), now};
  values.emplace_back(node_digest(values));
  KEEL_TRY(tx.execute(
      "INSERT INTO nodes (" + std::string(kNodeColumns) + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values));
  KEEL_TRY(bump(tx, thread, node.id, seq + 1));
  return NodeRecord{std::move(node.id),   thread.id, parent, node.kind, node.run_id, seq,
                    std::move(node.body), now};
}

Result<NodeRecord> ThreadRepository::get_node(Transaction& tx, const std::string& node_id) {
  auto row =
      KEEL_TRY(tx.query_one("SELECT " + std::string(kNodeColumns) + " FROM nodes WHERE id = ?", {node_id}));
  if (!row) return fail(codes::kNodeNotFound, "no node " + node_id);
  return node_from_row(*row, node_id);
}

Result<std::vector<NodeRecord>> ThreadRepository::nodes_of(Transaction& tx, const std::string& thread_id,
                                                           int64_t after_seq) {
  auto rows = KEEL_TRY(tx.query(
      "SELECT " + std::string(kNodeColumns) + " FROM nodes WHERE thread_id = ? AND seq > ? ORDER BY seq",
      {thread_id, after_seq}));
  std::vector<NodeRecord> nodes = KEEL_TRY(nodes_from_rows(rows, thread_id));
  // A thread's own nodes have the seqs 1 .. next_node_seq - 1, each once (append() is the only writer and
  // nodes are never deleted). A gap or a short tail means a damaged index hid rows: not served as whole.
  auto thread = KEEL_TRY(tx.query_one("SELECT next_node_seq FROM threads WHERE id = ?", {thread_id}));
  const int64_t first = std::max<int64_t>(after_seq, 0) + 1;
  const int64_t end = thread ? thread->integer(0) : first;  // one past the last seq
  bool whole = static_cast<int64_t>(nodes.size()) == std::max<int64_t>(end - first, 0);
  for (size_t i = 0; whole && i < nodes.size(); ++i) whole = nodes[i].seq == first + static_cast<int64_t>(i);
  if (!whole) {
    return fail(codes::kStoreCorrupt, "thread " + thread_id + " should have nodes up to seq " +
                                          std::to_string(end - 1) + " but its listing does not match" +
                                          std::string(kNodeRecovery));
  }
  return nodes;
}

Result<std::vector<NodeRecord>> ThreadRepository::path_to(Transaction& tx, const std::string& leaf_id) {
  std::vector<NodeRecord> path;
  std::unordered_set<std::string> seen;
  std::optional<std::string> cursor = leaf_id;
  while (cursor) {
    if (!seen.insert(*cursor).second) {
      return fail(codes::kStoreDecode,
                  "the node tree has a cycle at node " + *cursor + "; the store is damaged");
    }
    NodeRecord node = KEEL_TRY(get_node(tx, *cursor));
    cursor = node.parent_id;
    path.push_back(std::move(node));
  }
  std::reverse(path.begin(), path.end());
  return path;
}

Result<ThreadRecord> ThreadRepository::fork(Transaction& tx, const std::string& source_id, std::string new_id,
                                            std::optional<std::string> at_node_id,
                                            std::optional<std::string> title) {
  ThreadRecord source = KEEL_TRY(get_live(tx, source_id));
  std::optional<std::string> at = at_node_id ? at_node_id : source.leaf_node_id;
  if (at_node_id && !KEEL_TRY(contains(tx, source, *at_node_id))) {
    return fail(codes::kNodeNotInThread, "node " + *at_node_id + " is not in thread " + source_id);
  }
  std::optional<std::string> servers;
  if (source.mcp_servers) servers = KEEL_TRY(encode_json_column(nlohmann::json(*source.mcp_servers)));
  const int64_t now = clock_.now_unix_ms();
  KEEL_TRY(
      tx.execute("INSERT INTO threads (id, title, leaf_node_id, parent_thread_id, fork_node_id, revision, "
                 "next_node_seq, created_at, updated_at, deleted, title_given, model, mcp_servers) "
                 "VALUES (?, ?, ?, ?, ?, 1, 1, ?, ?, 0, ?, ?, ?)",
                 {new_id, title.value_or(source.title), at, source.id, at, now, now,
                  int64_t{title.has_value() || source.title_given ? 1 : 0}, source.model, servers}));
  return get(tx, new_id);
}

Result<bool> ThreadRepository::has_children_in(Transaction& tx, const std::string& node_id,
                                               const std::string& thread_id) {
  auto row = KEEL_TRY(tx.query_one("SELECT 1 FROM nodes WHERE parent_id = ? AND thread_id = ? LIMIT 1",
                                   {node_id, thread_id}));
  return row.has_value();
}

Result<bool> ThreadRepository::is_leaf(Transaction& tx, const ThreadRecord& thread,
                                       const std::string& node_id) {
  auto row = KEEL_TRY(tx.query_one("SELECT thread_id FROM nodes WHERE id = ?", {node_id}));
  if (!row) return false;
  // An inherited node is a leaf of the fork only as its fork point: the others have their child on the path.
  if (row->text(0) != thread.id && thread.fork_node_id != node_id) return false;
  return !KEEL_TRY(has_children_in(tx, node_id, thread.id));
}

Result<bool> ThreadRepository::has_child_of_kind(Transaction& tx, const std::string& node_id, NodeKind kind) {
  auto row = KEEL_TRY(tx.query_one("SELECT 1 FROM nodes WHERE parent_id = ? AND kind = ? LIMIT 1",
                                   {node_id, std::string(to_string(kind))}));
  return row.has_value();
}

Result<ThreadRecord> ThreadRepository::select_branch(Transaction& tx, const std::string& thread_id,
                                                     const std::string& leaf_id) {
  ThreadRecord thread = KEEL_TRY(get_live(tx, thread_id));
  auto row = KEEL_TRY(tx.query_one("SELECT thread_id FROM nodes WHERE id = ?", {leaf_id}));
  if (!row) return fail(codes::kNodeNotFound, "no node " + leaf_id);
  const bool own = row->text(0) == thread.id;
  if (!own && thread.fork_node_id != leaf_id) {
    return fail(codes::kNodeNotInThread, "node " + leaf_id + " is not a leaf of thread " + thread_id);
  }
  if (KEEL_TRY(has_children_in(tx, leaf_id, thread.id))) {
    return fail(codes::kNodeNotLeaf, "node " + leaf_id + " has children in thread " + thread_id +
                                         "; select a leaf (keel threads show lists the branches)");
  }
  if (thread.leaf_node_id == leaf_id) return thread;
  return bump(tx, thread, leaf_id, thread.next_node_seq);
}

Result<std::vector<BranchInfo>> ThreadRepository::list_branches(Transaction& tx,
                                                                const std::string& thread_id) {
  ThreadRecord thread = KEEL_TRY(get_live(tx, thread_id));
  auto rows = KEEL_TRY(tx.query(
      "SELECT n.id, n.seq, n.created_at FROM nodes n WHERE n.thread_id = ? AND NOT EXISTS "
      "(SELECT 1 FROM nodes c WHERE c.parent_id = n.id AND c.thread_id = n.thread_id) ORDER BY n.seq",
      {thread_id}));
  std::vector<BranchInfo> branches;
  if (thread.fork_node_id && !KEEL_TRY(has_children_in(tx, *thread.fork_node_id, thread.id))) {
    NodeRecord fork_point = KEEL_TRY(get_node(tx, *thread.fork_node_id));
    branches.push_back(BranchInfo{fork_point.id, 0, fork_point.created_at, false});
  }
  for (const SqlRow& row : rows)
    branches.push_back(BranchInfo{row.text(0), row.integer(1), row.integer(2), false});
  for (BranchInfo& branch : branches) branch.selected = thread.leaf_node_id == branch.leaf_node_id;
  return branches;
}

}  // namespace keel
