// store/session_context.h — buildSessionContext(leafId): a thread's selected path as provider-neutral
// messages, rebuilt incrementally.
//
// The path from the root to the leaf (crossing into parent threads for forks, like
// ThreadRepository::path_to) becomes messages by these rules (node bodies: store/node_body.h):
//   user_message       -> a Role::kUser message with its content;
//   assistant_message  -> a Role::kAssistant message with its content (reasoning blocks included);
//   tool_call          -> its ToolCall is appended to the assistant message of the node named by
//                         assistantNodeId, so the parallel calls of one response stay grouped with it
//                         although the store interleaves them with their results (spec §2):
//                         A, tc1, tr1, tc2, tr2 -> assistant{calls: [1, 2]}, tool(1), tool(2);
//                         an assistantNodeId that is not an assistant_message on the path is
//                         store.decode_failed;
//   tool_result        -> a Role::kTool message with tool_call_id, is_error and content (details, which
//                         are for the UI, are dropped); content marked untrusted goes inside a data
//                         envelope (store/data_envelope.h) whose id derives from the node's id; when user
//                         messages (notices, steers) sit between its call's assistant message and the results
//                         after it and the end, the result goes before them, since no provider accepts a user
//                         message between an assistant's tool calls and their results: older versions
//                         persisted the failure breaker's notices between the results of parallel calls (A,
//                         tc1, tc2, tr1, notice, tr2 -> assistant{1, 2}, tool(1), tool(2), user);
//   notice             -> with forModel, a Role::kUser text message; otherwise nothing;
//   compaction         -> replaces every message before it by its summary (a Role::kUser text message)
//                         followed by its kept tail (spec §1, the context window); what follows it appends
//                         as usual. Tool call ids of the replaced messages still count as used.
//   turn_context, approval_decision -> nothing.
// Every message's source_node_id names the node it was built from (a kept tail message: its original).
//
// Cost (ARCHITECTURE.md §6: proportional to the nodes added since the last request, not to the thread):
// the builder keeps the path of its previous build, an index id -> position, and what each node
// contributed (a message, or a tool call appended to message i). build() walks from the new leaf up through
// parent ids only until it meets a node of the cached path (or the root), truncates the cached path after
// that node, undoing contributions in reverse order, and appends the nodes it read. Building after one
// appended node reads one node; selecting another branch reads the nodes below the common ancestor.
//
// The cache relies on nodes being immutable once committed. A build done inside a write transaction that
// then rolls back may have cached nodes that were never committed; call invalidate() in that case (the
// rolled-back ids could be written again with another body on retry).
//
// Not thread-safe: use one builder per conversation thread, from one OS thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "keel/error.h"
#include "keel/message.h"
#include "keel/store.h"
#include "store/records.h"

namespace keel {

class SessionContextBuilder {
 public:
  struct BuildStats {
    size_t nodes_read = 0;    // nodes read from the store by the last build()
    size_t nodes_undone = 0;  // cached nodes dropped because they are no longer on the path
    size_t nodes_kept = 0;    // cached nodes reused as they were
  };

  SessionContextBuilder() = default;
  SessionContextBuilder(const SessionContextBuilder&) = delete;
  SessionContextBuilder& operator=(const SessionContextBuilder&) = delete;
  SessionContextBuilder(SessionContextBuilder&&) = default;
  SessionContextBuilder& operator=(SessionContextBuilder&&) = default;

  // The messages of the path from the root to `leaf_id`, oldest first. An empty `leaf_id` (a thread with
  // no node yet) gives no messages. The span stays valid until the next build(), invalidate() or the
  // builder's destruction.
  // Errors: node.not_found (no node `leaf_id`), store.decode_failed (a missing ancestor, a cycle, a body
  // that does not decode, a tool call naming an assistant message that is not on the path), and any store
  // error. An error while reading nodes leaves the cache as it was; an error while decoding one drops the
  // cache, and the next build() starts over.
  Result<std::span<const Message>> build(Transaction& tx, const std::string& leaf_id);

  // Adds a node the caller has just appended below the cached path's last node, decoding the body it
  // already holds instead of reading it back. Returns the messages as build() would for the new leaf.
  // A node that does not continue the cached path (another parent, or nothing cached yet) only drops the
  // cache and gives context.stale; the caller then build()s from the store. A decode error drops the cache.
  Result<std::span<const Message>> extend(const NodeRecord& node);

  // Forgets the cached path; the next build() reads the whole path again.
  void invalidate();

  const BuildStats& last_build_stats() const { return last_; }
  size_t nodes_read() const { return last_.nodes_read; }
  // Nodes on the cached path (the length of the last built path).
  size_t cached_nodes() const { return path_.size(); }
  // The last node of the cached path ("" when nothing is cached).
  std::string_view cached_leaf() const { return path_.empty() ? std::string_view() : path_.back().node_id; }
  // The messages of the cached path, as the last build() or extend() returned them.
  std::span<const Message> messages() const { return messages_; }
  // Whether a tool call or tool result on the cached path carries `tool_call_id` (kept up to date as nodes
  // are added and undone, so asking costs one hash lookup however long the thread is).
  bool uses_tool_call_id(std::string_view tool_call_id) const { return call_ids_.contains(tool_call_id); }
  // How many image blocks the cached path's messages hold.
  size_t image_blocks() const { return image_blocks_; }

 private:
  // kReset: a compaction replaced all messages; undoing it restores them from replaced_.
  enum class Contribution : uint8_t { kNone, kMessage, kToolCall, kReset };
  struct PathEntry {
    std::string node_id;
    Contribution contribution = Contribution::kNone;
    size_t message_index = 0;  // kMessage: the message it added; kToolCall: the message it added to
  };
  struct PendingNode;

  void truncate_after(size_t keep);
  void count_call_id(const std::string& id);
  void uncount_call_id(const std::string& id);
  Result<void> apply(PendingNode&& node);

  std::vector<PathEntry> path_;                       // root first
  std::unordered_map<std::string, size_t> position_;  // node id -> index in path_
  std::vector<Message> messages_;
  struct IdHash {
    using is_transparent = void;
    size_t operator()(std::string_view id) const { return std::hash<std::string_view>{}(id); }
  };
  std::unordered_map<std::string, size_t, IdHash, std::equal_to<>> call_ids_;  // id -> uses on the path
  size_t image_blocks_ = 0;
  // What each compaction on the path replaced, innermost last: the messages and their image count.
  struct Replaced {
    std::vector<Message> messages;
    size_t image_blocks = 0;
    size_t path_position = 0;  // of the compaction node
  };
  std::vector<Replaced> replaced_;
  BuildStats last_;
};

}  // namespace keel
