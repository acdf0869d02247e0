#include "engine/thread_views.h"

namespace keel {

using nlohmann::json;

namespace {

json optional_json(const std::optional<std::string>& value) { return value ? json(*value) : json(nullptr); }

}  // namespace

json thread_entry_json(const ThreadRecord& thread) {
  return {{"threadId", thread.id},
          {"title", thread.title},
          {"revision", thread.revision},
          {"leafNodeId", optional_json(thread.leaf_node_id)},
          {"parentThreadId", optional_json(thread.parent_thread_id)},
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
  if (thread.leaf_node_id) {
    for (const NodeRecord& node : KEEL_TRY(threads.path_to(tx, *thread.leaf_node_id))) {
      nodes.push_back(node_json(node));
    }
  }
  // A latest run that cannot be read is shown as none: the thread's history is still worth reading.
  auto latest = runs.latest_for_thread(tx, thread_id);
  return json{{"threadId", thread.id},
              {"title", thread.title},
              {"revision", thread.revision},
              {"leafNodeId", optional_json(thread.leaf_node_id)},
              {"nodes", std::move(nodes)},
              {"latestRun", latest && *latest ? run_summary_json(**latest) : json(nullptr)}};
}

}  // namespace keel
