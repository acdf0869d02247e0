#include "cli/demo.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "keel/clock.h"
#include "keel/ids.h"
#include "keel/message.h"
#include "keel/store.h"
#include "store/commands.h"
#include "store/session_context.h"
#include "store/thread_repository.h"

namespace keel::cli {
namespace {

using nlohmann::json;

json text_content(const std::string& text) { return json::array({{{"type", "text"}, {"text", text}}}); }

const char* role_name(Role role) {
  switch (role) {
    case Role::kUser:
      return "user";
    case Role::kAssistant:
      return "assistant";
    case Role::kTool:
      return "tool";
  }
  return "?";
}

std::string first_text(const Message& message) {
  for (const ContentBlock& block : message.content) {
    if (block.kind == ContentBlock::Kind::kText) return block.text;
  }
  return "";
}

void print_context(std::ostream& out, std::span<const Message> messages) {
  for (const Message& message : messages) {
    out << "    " << role_name(message.role);
    if (message.role == Role::kTool) out << "[" << message.tool_call_id << (message.is_error ? ", error" : "") << "]";
    out << ": " << first_text(message);
    for (const ToolCall& call : message.tool_calls) out << "\n      -> " << call.name << call.arguments.dump();
    out << "\n";
  }
}

// Runs a body of demo steps; any failure is printed with its stable code.
int report(const Error& error, std::ostream& out) {
  out << "keel demo failed: " << error.to_string() << "\n";
  return 1;
}

NewNode node(std::string id, std::string thread_id, NodeKind kind, json body,
             std::optional<std::string> parent_id = std::nullopt) {
  NewNode n;
  n.id = std::move(id);
  n.thread_id = std::move(thread_id);
  n.kind = kind;
  n.body = std::move(body);
  n.parent_id = std::move(parent_id);
  return n;
}

Result<NodeRecord> append(Store& store, ThreadRepository& threads, NewNode node) {
  auto tx = KEEL_TRY(store.begin(TxMode::kWrite));
  NodeRecord record = KEEL_TRY(threads.append(*tx, std::move(node)));
  KEEL_TRY(tx->commit());
  return record;
}

Result<void> run(const std::string& db_path, std::ostream& out) {
  SystemClock clock;
  UuidV7Source ids(clock);
  auto store = KEEL_TRY(open_sqlite_store(SqliteStoreOptions{.path = db_path}));
  StoreCommands commands(*store, clock, ids);
  ThreadRepository threads(clock);

  out << "keel demo — the durable store (SQLite, WAL, synchronous=FULL, schema v" << store->schema_version()
      << ") at " << db_path << "\n\n";

  // 1. A receipted command, and its duplicate.
  CommandRequest create{"demo-client", ids.next_id(), "thread.create", {{"title", "Plan a trip to Lisbon"}}};
  CommandResult created = KEEL_TRY(commands.execute(create));
  CommandResult again = KEEL_TRY(commands.execute(create));
  const std::string thread_id = created.outcome.result["threadId"].get<std::string>();
  out << "thread.create  -> " << created.outcome.to_json().dump() << "\n";
  out << "same submission again -> replayed=" << (again.replayed ? "true" : "false")
      << ", same thread: " << (again.outcome.result["threadId"] == thread_id ? "yes" : "NO") << "\n\n";

  // 2. A turn: its context node, the user message, an assistant reply with two parallel tool calls, interleaved call/result nodes.
  KEEL_TRY(append(*store, threads, node(ids.next_id(), thread_id, NodeKind::kTurnContext,
                                    {{"turnId", ids.next_id()}, {"model", "scripted"}})));
  auto user = KEEL_TRY(append(*store, threads, node(ids.next_id(), thread_id, NodeKind::kUserMessage,
                                                {{"content", text_content("Find flights and a hotel for May.")}})));
  auto assistant = KEEL_TRY(append(
      *store, threads,
      node(ids.next_id(), thread_id, NodeKind::kAssistantMessage,
       {{"content", text_content("I'll search both at once.")}, {"stopReason", "tool_use"},
        {"providerStopReason", "tool_calls"}})));
  const char* calls[][2] = {{"call_flights", "search_flights"}, {"call_hotels", "search_hotels"}};
  const char* results[] = {"3 direct flights from 89 EUR", "12 hotels in Alfama"};
  for (int i = 0; i < 2; ++i) {
    KEEL_TRY(append(*store, threads,
                    node(ids.next_id(), thread_id, NodeKind::kToolCall,
                     {{"toolCallId", calls[i][0]}, {"name", calls[i][1]}, {"arguments", {{"month", "May"}}},
                      {"assistantNodeId", assistant.id}})));
    KEEL_TRY(append(*store, threads,
                    node(ids.next_id(), thread_id, NodeKind::kToolResult,
                     {{"toolCallId", calls[i][0]}, {"content", text_content(results[i])}, {"isError", false}})));
  }
  auto answer = KEEL_TRY(append(*store, threads,
                                node(ids.next_id(), thread_id, NodeKind::kAssistantMessage,
                                 {{"content", text_content("Flights from 89 EUR; 12 hotels in Alfama.")},
                                  {"stopReason", "end"}, {"providerStopReason", "stop"}})));

  // 3. Edit the first question: a second branch under the same parent as the first user message.
  auto edited = KEEL_TRY(append(*store, threads,
                                node(ids.next_id(), thread_id, NodeKind::kUserMessage,
                                 {{"content", text_content("Actually, find a train instead.")}},
                                 user.parent_id)));
  (void)edited;

  // 4. An empty fork at the first answer, continued on its own.
  CommandResult forked = KEEL_TRY(commands.execute(
      {"demo-client", ids.next_id(), "thread.fork", {{"threadId", thread_id}, {"atNodeId", answer.id},
                                                     {"title", "Lisbon, with a budget"}}}));
  const std::string fork_id = forked.outcome.result["threadId"].get<std::string>();
  KEEL_TRY(append(*store, threads, node(ids.next_id(), fork_id, NodeKind::kUserMessage,
                                    {{"content", text_content("Keep it under 500 EUR.")}})));

  // 5. Show every branch of the original thread, then switch back to the first one.
  SessionContextBuilder builder;
  {
    auto tx = KEEL_TRY(store->begin(TxMode::kRead));
    auto branches = KEEL_TRY(threads.list_branches(*tx, thread_id));
    out << "thread " << thread_id << " has " << branches.size() << " branches:\n";
    for (const BranchInfo& branch : branches) {
      out << "  branch at leaf " << branch.leaf_node_id << (branch.selected ? " (selected)" : "") << "\n";
      print_context(out, KEEL_TRY(builder.build(*tx, branch.leaf_node_id)));
    }
    KEEL_TRY(tx->commit());
  }
  CommandResult selected = KEEL_TRY(commands.execute(
      {"demo-client", ids.next_id(), "thread.selectBranch", {{"threadId", thread_id}, {"leafNodeId", answer.id}}}));
  out << "\nthread.selectBranch -> " << selected.outcome.to_json().dump() << "\n";

  auto tx = KEEL_TRY(store->begin(TxMode::kRead));
  ThreadRecord fork = KEEL_TRY(threads.get(*tx, fork_id));
  out << "\nfork " << fork_id << " (parent " << fork.parent_thread_id.value_or("-") << ") shares the history:\n";
  print_context(out, KEEL_TRY(builder.build(*tx, *fork.leaf_node_id)));
  KEEL_TRY(tx->commit());

  StoreStats stats = store->stats();
  out << "\n" << stats.commits << " durable commits in " << stats.syncs << " syncs. Kill keel at any point: "
      << "what was committed is there when it reopens.\n";
  return {};
}

}  // namespace

int run_store_demo(const std::string& db_path, bool keep_existing, std::ostream& out) {
  if (!keep_existing) {
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db_path + suffix, ignored);
  }
  auto done = run(db_path, out);
  if (!done) return report(done.error(), out);
  return 0;
}

}  // namespace keel::cli
