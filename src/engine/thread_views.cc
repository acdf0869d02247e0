#include "engine/thread_views.h"

#include <algorithm>
#include <unordered_set>

#include "util/utf8.h"

namespace keel {

using nlohmann::json;

namespace {

json optional_json(const std::optional<std::string>& value) { return value ? json(*value) : json(nullptr); }

// The text blocks of a message body's content, joined by spaces; "" when there are none.
std::string text_of(const json& body) {
  std::string text;
  auto content = body.find("content");
  if (content == body.end() || !content->is_array()) return text;
  for (const json& block : *content) {
    if (!block.is_object() || block.value("type", "") != "text") continue;
    auto part = block.find("text");
    if (part == block.end() || !part->is_string()) continue;
    if (!text.empty()) text += ' ';
    text += part->get_ref<const std::string&>();
  }
  return text;
}

// The first `max_chars` characters of `text` (well-formed UTF-8: the store's canonical JSON checked it).
std::string first_chars(const std::string& text, size_t max_chars) {
  size_t end = 0;
  for (size_t chars = 0; chars < max_chars && end < text.size(); ++chars) {
    end += decode_utf8(std::string_view(text).substr(end)).length;
  }
  return text.substr(0, end);
}

json mcp_servers_json(const ThreadRecord& thread) {
  return thread.mcp_servers ? json(*thread.mcp_servers) : json(nullptr);
}

}  // namespace

json thread_entry_json(const ThreadRecord& thread) {
  return {{"threadId", thread.id},
          {"title", thread.title},
          {"revision", thread.revision},
          {"leafNodeId", optional_json(thread.leaf_node_id)},
          {"parentThreadId", optional_json(thread.parent_thread_id)},
          {"model", optional_json(thread.model)},
          {"mcpServers", mcp_servers_json(thread)},
          {"updatedAt", thread.updated_at}};
}

json run_summary_json(const RunRecord& run) {
  return {{"runId", run.id},
          {"turnId", run.turn_id},
          {"state", to_string(run.state)},
          {"stopReason", optional_json(run.stop_reason)},
          {"usage", run.usage}};
}

json node_json(const NodeRecord& node) {
  return {{"id", node.id},
          {"kind", to_string(node.kind)},
          {"runId", optional_json(node.run_id)},
          {"body", node.body},
          {"createdAt", node.created_at}};
}

Result<json> list_threads_view(Transaction& tx, ThreadRepository& threads) {
  json list = json::array();
  for (const ThreadRecord& thread : KEEL_TRY(threads.list(tx))) list.push_back(thread_entry_json(thread));
  return json{{"threads", std::move(list)}};
}

Result<json> read_thread_view(Transaction& tx, ThreadRepository& threads, RunRepository& runs,
                              const std::string& thread_id) {
  ThreadRecord thread = KEEL_TRY(threads.get_live(tx, thread_id));
  json nodes = json::array();
  // Each run the branch shows, once, in the order its nodes come: a client shows every turn's usage and
  // cost, not only the latest's.
  json branch_runs = json::array();
  std::unordered_set<std::string> runs_seen;
  if (thread.leaf_node_id) {
    for (const NodeRecord& node : KEEL_TRY(threads.path_to(tx, *thread.leaf_node_id))) {
      nodes.push_back(node_json(node));
      if (!node.run_id || !runs_seen.insert(*node.run_id).second) continue;
      // A run that cannot be read is left out: the thread's history is still worth reading.
      if (auto run = runs.get(tx, *node.run_id)) branch_runs.push_back(run_summary_json(*run));
    }
  }
  // A latest run that cannot be read is shown as none, for the same reason.
  auto latest = runs.latest_for_thread(tx, thread_id);
  return json{{"threadId", thread.id},
              {"title", thread.title},
              {"revision", thread.revision},
              {"leafNodeId", optional_json(thread.leaf_node_id)},
              {"model", optional_json(thread.model)},
              {"mcpServers", mcp_servers_json(thread)},
              {"nodes", std::move(nodes)},
              {"runs", std::move(branch_runs)},
              {"latestRun", latest && *latest ? run_summary_json(**latest) : json(nullptr)}};
}

std::string branch_preview(const std::vector<NodeRecord>& path) {
  for (auto node = path.rbegin(); node != path.rend(); ++node) {
    if (node->kind != NodeKind::kUserMessage && node->kind != NodeKind::kAssistantMessage) continue;
    std::string text = text_of(node->body);
    if (!text.empty()) return first_chars(text, kBranchPreviewChars);
  }
  return "";
}

Result<json> thread_branches_view(Transaction& tx, ThreadRepository& threads, const std::string& thread_id) {
  ThreadRecord thread = KEEL_TRY(threads.get_live(tx, thread_id));
  std::vector<BranchInfo> leaves = KEEL_TRY(threads.list_branches(tx, thread_id));
  // Newest first; list_branches gives them oldest first, so a stable reverse keeps ties in creation order.
  std::ranges::reverse(leaves);
  std::ranges::stable_sort(leaves, std::ranges::greater{}, &BranchInfo::leaf_created_at);
  const bool truncated = leaves.size() > kMaxBranchesListed;
  if (truncated) {
    auto selected = std::ranges::find_if(leaves, &BranchInfo::selected);
    // The selected branch is always listed: it takes the last place when it is older than the rest.
    if (selected != leaves.end() && selected - leaves.begin() >= static_cast<ptrdiff_t>(kMaxBranchesListed)) {
      leaves[kMaxBranchesListed - 1] = *selected;
    }
    leaves.resize(kMaxBranchesListed);
  }
  std::unordered_set<std::string> on_selected;
  if (thread.leaf_node_id) {
    for (const NodeRecord& node : KEEL_TRY(threads.path_to(tx, *thread.leaf_node_id)))
      on_selected.insert(node.id);
  }
  json branches = json::array();
  for (const BranchInfo& leaf : leaves) {
    std::vector<NodeRecord> path = KEEL_TRY(threads.path_to(tx, leaf.leaf_node_id));
    json fork_node = nullptr;
    json first_node = nullptr;
    json first_created_at = nullptr;
    if (!leaf.selected) {
      auto shared = std::ranges::find_if(
          path.rbegin(), path.rend(), [&](const NodeRecord& node) { return on_selected.contains(node.id); });
      if (shared != path.rend()) fork_node = shared->id;
      // The path's nodes after the shared part are the branch's own: the first of them says where it goes.
      const auto own = shared.base();
      if (own != path.end()) {
        first_node = own->id;
        first_created_at = own->created_at;
      }
    }
    branches.push_back({{"leafNodeId", leaf.leaf_node_id},
                        {"forkNodeId", std::move(fork_node)},
                        {"firstNodeId", std::move(first_node)},
                        {"firstNodeCreatedAt", std::move(first_created_at)},
                        {"lastNodeKind", path.empty() ? json(nullptr) : json(to_string(path.back().kind))},
                        {"preview", branch_preview(path)},
                        {"updatedAt", leaf.leaf_created_at},
                        {"length", path.size()}});
  }
  return json{{"threadId", thread.id},
              {"selectedLeafNodeId", optional_json(thread.leaf_node_id)},
              {"branches", std::move(branches)},
              {"truncated", truncated}};
}

}  // namespace keel
