#include "store/session_context.h"

#include <algorithm>
#include <optional>
#include <unordered_set>
#include <utility>

#include "keel/error_codes.h"
#include "store/data_envelope.h"
#include "store/json_column.h"
#include "store/node_body.h"
#include "store/node_digest.h"
#include "store/records.h"

namespace keel {
namespace {

// One statement, always the same text: the SQLite backend keeps it prepared. Every column the digest
// covers is read, so that the row can be checked against it (store/node_digest.h).
constexpr std::string_view kReadNode =
    "SELECT id, thread_id, parent_id, kind, run_id, seq, body, created_at, digest FROM nodes WHERE id = ?";

std::string node_context(const std::string& id) { return "node " + id; }

}  // namespace

struct SessionContextBuilder::PendingNode {
  std::string id;
  NodeKind kind = NodeKind::kNotice;
  std::string body;                        // JSON text read from the store, parsed when the node is applied
  const nlohmann::json* parsed = nullptr;  // or the body already parsed (extend())
};

namespace {

// Decodes a node's body with `decode` (one of node_body.h's decoders), parsing its JSON text first when the
// node came from the store.
template <typename Node, typename Decode>
auto decode_body(const Node& node, Decode decode) -> decltype(decode(nlohmann::json())) {
  if (node.parsed != nullptr) {
    auto body = decode(*node.parsed);
    if (!body) return fail(body.error().with_context(node_context(node.id)));
    return body;
  }
  auto parsed = decode_json_column(node.body, "body");
  if (!parsed) return fail(parsed.error().with_context(node_context(node.id)));
  auto body = decode(std::move(parsed).value());
  if (!body) return fail(body.error().with_context(node_context(node.id)));
  return body;
}

}  // namespace

Result<std::span<const Message>> SessionContextBuilder::extend(const NodeRecord& node) {
  last_ = BuildStats{};
  if (path_.empty() || !node.parent_id || *node.parent_id != path_.back().node_id) {
    invalidate();
    return fail(codes::kContextStale, "node " + node.id + " does not continue the cached path");
  }
  if (auto applied = apply(PendingNode{node.id, node.kind, {}, &node.body}); !applied) {
    invalidate();
    return fail(applied.error());
  }
  last_.nodes_kept = path_.size() - 1;
  return std::span<const Message>(messages_);
}

void SessionContextBuilder::invalidate() {
  path_.clear();
  position_.clear();
  messages_.clear();
  call_ids_.clear();
  replaced_.clear();
  image_blocks_ = 0;
}

void SessionContextBuilder::count_call_id(const std::string& id) {
  if (!id.empty()) ++call_ids_[id];
}

void SessionContextBuilder::uncount_call_id(const std::string& id) {
  if (id.empty()) return;
  auto it = call_ids_.find(id);
  if (it != call_ids_.end() && --it->second == 0) call_ids_.erase(it);
}

namespace {
size_t count_images(const std::vector<ContentBlock>& content) {
  return static_cast<size_t>(std::count_if(content.begin(), content.end(), [](const ContentBlock& block) {
    return block.kind == ContentBlock::Kind::kImage;
  }));
}
// Where a result for `call_id` goes when user messages sit between its call's assistant message (and the
// results after it) and the end: before them. No user message may come between an assistant's tool calls
// and their results (every provider refuses that history), yet older versions persisted the failure
// breaker's notices between the results of parallel calls, and stores written before calls committed with
// their assistant message interleave calls and results; both are repaired here. nullopt: at the end.
// Only user messages are passed over, so no assistant message moves and the indexes of the path's entries
// that tool calls attach to stay valid.
std::optional<size_t> result_position(const std::vector<Message>& messages, const std::string& call_id) {
  size_t at = messages.size();
  while (at > 0 && messages[at - 1].role == Role::kUser) --at;
  if (at == messages.size()) return std::nullopt;
  size_t owner = at;
  while (owner > 0 && messages[owner - 1].role == Role::kTool) --owner;
  if (owner == 0 || messages[owner - 1].role != Role::kAssistant) return std::nullopt;
  const std::vector<ToolCall>& calls = messages[owner - 1].tool_calls;
  const bool owns =
      std::any_of(calls.begin(), calls.end(), [&](const ToolCall& c) { return c.id == call_id; });
  if (!owns) return std::nullopt;
  return at;
}

}  // namespace

Result<std::span<const Message>> SessionContextBuilder::build(Transaction& tx, const std::string& leaf_id) {
  last_ = BuildStats{};

  // 1. Walk up from the leaf until a node of the cached path (or the root). Nothing in the cache changes
  //    here, so an error leaves it as it was.
  std::vector<PendingNode> pending;  // leaf first
  std::optional<size_t> meet;        // index in path_ of the first cached ancestor
  if (!leaf_id.empty()) {
    std::unordered_set<std::string> seen;
    std::optional<std::string> cursor = leaf_id;
    while (cursor) {
      if (auto it = position_.find(*cursor); it != position_.end()) {
        meet = it->second;
        break;
      }
      if (!seen.insert(*cursor).second) {
        return fail(codes::kStoreDecode,
                    "the node tree has a cycle at node " + *cursor + "; the store is damaged");
      }
      const SqlValue param(*cursor);
      auto rows = tx.query(kReadNode, std::span<const SqlValue>(&param, 1));
      if (!rows) return fail(rows.error());
      ++last_.nodes_read;
      if (rows->empty()) {
        if (*cursor == leaf_id) return fail(codes::kNodeNotFound, "no node " + leaf_id);
        return fail(codes::kStoreDecode, "node " + *cursor + ", an ancestor of node " + leaf_id +
                                             ", is missing from the store; the store is damaged");
      }
      const SqlRow& row = rows->front();
      KEEL_TRY(verify_node_row(row, *cursor));
      auto kind = parse_node_kind(row.text(3));
      if (!kind) return fail(kind.error().with_context(node_context(*cursor)));
      std::optional<std::string> parent = row.optional_text(2);
      pending.push_back(PendingNode{std::move(*cursor), *kind, row.text(6)});
      cursor = std::move(parent);
    }
  }

  // 2. Drop what is no longer on the path, newest first.
  const size_t keep = meet ? *meet + 1 : 0;
  last_.nodes_undone = path_.size() - keep;
  last_.nodes_kept = keep;
  truncate_after(keep);

  // 3. Append the new nodes, root first.
  for (auto it = pending.rbegin(); it != pending.rend(); ++it) {
    if (auto applied = apply(std::move(*it)); !applied) {
      invalidate();
      return fail(applied.error());
    }
  }
  return std::span<const Message>(messages_);
}

void SessionContextBuilder::truncate_after(size_t keep) {
  while (path_.size() > keep) {
    PathEntry& entry = path_.back();
    switch (entry.contribution) {
      case Contribution::kMessage: {
        // Contributions are undone in the reverse order they were made, so the message is where it was
        // put: the last one, or (a tool result moved before misplaced user messages) message_index, with
        // only those user messages after it.
        auto message = messages_.begin() + static_cast<std::ptrdiff_t>(entry.message_index);
        uncount_call_id(message->tool_call_id);
        image_blocks_ -= count_images(message->content);
        messages_.erase(message);
        break;
      }
      case Contribution::kToolCall:
        uncount_call_id(messages_[entry.message_index].tool_calls.back().id);
        messages_[entry.message_index].tool_calls.pop_back();
        break;
      case Contribution::kReset:
        messages_ = std::move(replaced_.back().messages);
        image_blocks_ = replaced_.back().image_blocks;
        replaced_.pop_back();
        break;
      case Contribution::kNone:
        break;
    }
    position_.erase(entry.node_id);
    path_.pop_back();
  }
}

Result<void> SessionContextBuilder::apply(PendingNode&& node) {
  PathEntry entry{node.id, Contribution::kNone, 0};
  const std::string& id = entry.node_id;
  // `at`: where the message goes (the end unless given).
  auto add_message = [&](Role role, std::vector<ContentBlock> content,
                         std::optional<size_t> at = std::nullopt) -> Message& {
    const size_t index = at.value_or(messages_.size());
    Message& message = *messages_.emplace(messages_.begin() + static_cast<std::ptrdiff_t>(index));
    message.role = role;
    image_blocks_ += count_images(content);
    message.content = std::move(content);
    message.source_node_id = id;
    entry.contribution = Contribution::kMessage;
    entry.message_index = index;
    return message;
  };

  switch (node.kind) {
    case NodeKind::kTurnContext:
    case NodeKind::kApprovalDecision:
      break;  // not part of the model context; the body is not even parsed
    case NodeKind::kUserMessage: {
      auto body = decode_body(node, decode_user_message);
      if (!body) return fail(body.error());
      add_message(Role::kUser, std::move(body->content));
      break;
    }
    case NodeKind::kAssistantMessage: {
      auto body = decode_body(node, decode_assistant_message);
      if (!body) return fail(body.error());
      add_message(Role::kAssistant, std::move(body->content));
      break;
    }
    case NodeKind::kToolCall: {
      auto body = decode_body(node, decode_tool_call);
      if (!body) return fail(body.error());
      auto owner = position_.find(body->assistant_node_id);
      // (An assistant message before the last compaction is no longer a message of the context.)
      const bool compacted_away =
          owner != position_.end() && !replaced_.empty() && owner->second < replaced_.back().path_position;
      if (owner == position_.end() || compacted_away ||
          path_[owner->second].contribution != Contribution::kMessage ||
          messages_[path_[owner->second].message_index].role != Role::kAssistant) {
        return fail(codes::kStoreDecode, "tool_call node " + id + " (call " + body->tool_call_id +
                                             ") belongs to assistant node " + body->assistant_node_id +
                                             ", which is not an assistant_message on the path to it");
      }
      const size_t index = path_[owner->second].message_index;
      count_call_id(body->tool_call_id);
      messages_[index].tool_calls.push_back(
          ToolCall{std::move(body->tool_call_id), std::move(body->name), std::move(body->arguments)});
      entry.contribution = Contribution::kToolCall;
      entry.message_index = index;
      break;
    }
    case NodeKind::kToolResult: {
      auto body = decode_body(node, decode_tool_result);
      if (!body) return fail(body.error());
      // Content from outside keel reaches the model only inside its envelope; the node keeps it as it was.
      std::vector<ContentBlock> content =
          body->untrusted ? envelope_content(body->content, *body->untrusted, envelope_id(id))
                          : std::move(body->content);
      Message& message =
          add_message(Role::kTool, std::move(content), result_position(messages_, body->tool_call_id));
      count_call_id(body->tool_call_id);
      message.tool_call_id = std::move(body->tool_call_id);
      message.is_error = body->is_error;
      break;
    }
    case NodeKind::kNotice: {
      auto body = decode_body(node, decode_notice);
      if (!body) return fail(body.error());
      if (body->for_model) {
        std::vector<ContentBlock> content(1);
        content[0].kind = ContentBlock::Kind::kText;
        content[0].text = std::move(body->text);
        add_message(Role::kUser, std::move(content));
      }
      break;
    }
    case NodeKind::kCompaction: {
      auto body = decode_body(node, decode_compaction);
      if (!body) return fail(body.error());
      std::vector<Message> compacted;
      compacted.reserve(body->tail.size() + 1);
      Message& summary = compacted.emplace_back();
      summary.role = Role::kUser;
      summary.content.push_back(
          ContentBlock{.text = "Summary of the earlier conversation, which was compacted to fit "
                               "the context window:\n\n" +
                               body->summary});
      summary.source_node_id = id;
      size_t images = 0;
      for (Message& message : body->tail) {
        images += count_images(message.content);
        compacted.push_back(std::move(message));
      }
      replaced_.push_back(Replaced{std::move(messages_), image_blocks_, path_.size()});
      messages_ = std::move(compacted);
      image_blocks_ = images;
      entry.contribution = Contribution::kReset;
      break;
    }
  }

  position_.emplace(entry.node_id, path_.size());
  path_.push_back(std::move(entry));
  return {};
}

}  // namespace keel
