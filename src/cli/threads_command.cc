// keel threads list | show | fork | select | delete — the store's threads without running an engine.
//
// list and show only read, so they work beside a running `keel serve` (WAL readers never block it); they
// print the protocol's shapes (engine/thread_views.h: thread.list's entries and thread.read's result), with
// a few additions a person needs (each thread's latest run, a thread's branches and parent). fork, select
// and delete are the receipted store commands the engine runs for thread.fork, thread.selectBranch and
// thread.delete (store/commands.h); they take the store lock, so they are refused while an engine runs on
// the store (a client of that engine sends thread.fork etc. instead). Whether the thread takes the change
// is the engine's rule (engine/thread_admission.h), applied to what the next engine's recovery will make
// of the thread's latest run: a run left waiting for a person holds it, a run left executing runs again.
#include <ctime>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/engine_host.h"
#include "cli/event_renderer.h"
#include "engine/thread_admission.h"
#include "engine/thread_views.h"
#include "keel/clock.h"
#include "keel/ids.h"
#include "store/commands.h"
#include "store/run_repository.h"
#include "store/thread_repository.h"
#include "util/terminal_text.h"

namespace keel::cli {

using nlohmann::json;

namespace {

std::string local_time(int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm local{};
  localtime_r(&seconds, &local);
  std::ostringstream out;
  out << std::put_time(&local, "%Y-%m-%d %H:%M");
  return out.str();
}

// The store could not be opened: exit 2 (setup); the command itself was refused: exit 1.
int print_error(const CommandContext& context, const Error& error, int status = kExitFailed) {
  *context.err << "keel threads: " << error.to_string() << "\n";
  return status;
}

int list_threads(const CommandContext& context, Store& store, bool as_json) {
  SystemClock clock;
  ThreadRepository threads(clock);
  RunRepository runs(clock);
  auto tx = store.begin(TxMode::kRead);
  if (!tx) return print_error(context, tx.error());
  auto list = list_threads_view(**tx, threads);
  if (!list) return print_error(context, list.error());
  // thread.list's entries, each with its latest run as thread.read shows it.
  json out = std::move((*list)["threads"]);
  for (json& entry : out) {
    auto latest = runs.latest_for_thread(**tx, entry.value("threadId", ""));
    entry["latestRun"] = latest && *latest ? run_summary_json(**latest) : json(nullptr);
  }
  if (as_json) {
    *context.out << json{{"threads", out}}.dump() << "\n";
    return kExitOk;
  }
  if (out.empty()) {
    *context.out << "no threads yet — start one with: keel run \"a task\"\n";
    return kExitOk;
  }
  for (const json& t : out) {
    std::string state = t["latestRun"].is_null() ? "new" : t["latestRun"].value("state", "");
    // Titles and conversation text come from clients and the model: shown, never obeyed, by the terminal.
    std::string title = terminal_safe(t.value("title", ""), LineBreaks::kShow);
    *context.out << t.value("threadId", "") << "  " << local_time(t.value("updatedAt", int64_t{0})) << "  "
                 << std::left << std::setw(18) << state << " "
                 << (title.empty() ? "(untitled)" : shorten(title, 60))
                 << (t["parentThreadId"].is_null() ? "" : "  (fork)") << "\n";
  }
  return kExitOk;
}

void print_node(std::ostream& out, const json& node) {
  const std::string kind = node.value("kind", "");
  const json& body = node["body"];
  const std::string id = node.value("id", "");
  if (kind == "user_message") {
    out << (body.value("steered", false) ? "↳ steer" : "you") << ": " << content_text(body["content"])
        << "\n";
  } else if (kind == "assistant_message") {
    const std::string text = content_text(body["content"]);
    if (!text.empty()) out << "keel: " << text << "\n";
  } else if (kind == "tool_call") {
    out << "  → " << body.value("name", "") << " "
        << shorten(body.value("arguments", json::object()).dump(), 200) << "\n";
  } else if (kind == "tool_result") {
    std::string text = content_text(body["content"]);
    for (char& c : text) {
      if (c == '\n') c = ' ';
    }
    out << "  " << (body.value("isError", false) ? "✗ " : "← ") << shorten(text, 200) << "\n";
  } else if (kind == "notice") {
    out << "  note: " << body.value("text", "") << "\n";
  } else if (kind == "compaction") {
    out << "  (history summarized: " << shorten(body.value("summary", ""), 200) << ")\n";
  } else if (kind == "approval_decision") {
    out << "  approval: " << body.value("decision", "") << "\n";
  } else if (kind != "turn_context") {  // turn_context is the engine's bookkeeping, not conversation
    out << "  [" << kind << " " << id << "]\n";
  }
}

int show_thread(const CommandContext& context, Store& store, const ThreadsOptions& options) {
  SystemClock clock;
  ThreadRepository threads(clock);
  RunRepository runs(clock);
  auto tx = store.begin(TxMode::kRead);
  if (!tx) return print_error(context, tx.error());
  // thread.read's result, with the thread's parent and branches.
  auto view = read_thread_view(**tx, threads, runs, options.thread_id);
  if (!view) return print_error(context, view.error());
  auto thread = threads.get_live(**tx, options.thread_id);
  if (!thread) return print_error(context, thread.error());
  auto branches = threads.list_branches(**tx, thread->id);
  if (!branches) return print_error(context, branches.error());
  json branch_list = json::array();
  for (const BranchInfo& branch : *branches) {
    branch_list.push_back({{"leafNodeId", branch.leaf_node_id}, {"selected", branch.selected}});
  }
  json out = std::move(*view);
  out["parentThreadId"] = thread->parent_thread_id ? json(*thread->parent_thread_id) : json(nullptr);
  out["branches"] = branch_list;
  if (options.json) {
    *context.out << out.dump() << "\n";
    return kExitOk;
  }
  std::ostream& o = *context.out;
  o << (thread->title.empty() ? "(untitled)" : terminal_safe(thread->title, LineBreaks::kShow)) << "  "
    << thread->id << "\n";
  if (thread->parent_thread_id) o << "forked from " << *thread->parent_thread_id << "\n";
  o << "\n";
  for (const json& node : out["nodes"]) print_node(o, terminal_safe_json(node));
  if (!out["latestRun"].is_null()) {
    o << "\nlast run: " << out["latestRun"].value("state", "") << "\n";
  }
  if (branch_list.size() > 1) {
    o << "branches (select one with: keel threads select " << thread->id << " LEAF):\n";
    for (const json& branch : branch_list) {
      o << "  " << (branch.value("selected", false) ? "* " : "  ") << branch.value("leafNodeId", "") << "\n";
    }
  }
  return kExitOk;
}

// The engine's rule (engine/thread_admission.h) for `method` on the thread, as the next engine will see
// it: its latest run as recovery takes it up.
Result<void> check_thread_accepts(Store& store, const std::string& thread_id, const std::string& method) {
  SystemClock clock;
  RunRepository runs(clock);
  auto tx = KEEL_TRY(store.begin(TxMode::kRead));
  auto latest = KEEL_TRY(runs.latest_for_thread(*tx, thread_id));
  if (!latest) return {};
  return thread_accepts(activity_after_recovery(*latest), method);
}

int change_thread(const CommandContext& context, Store& store, const ThreadsOptions& options) {
  CommandRequest request;
  json payload = {{"threadId", options.thread_id}};
  if (options.action == "fork") {
    request.kind = protocol::OpKind::kThreadFork;
    if (!options.node_id.empty()) payload["atNodeId"] = options.node_id;
    if (!options.title.empty()) payload["title"] = options.title;
  } else if (options.action == "select") {
    request.kind = protocol::OpKind::kThreadSelectBranch;
    payload["leafNodeId"] = options.node_id;
  } else {
    request.kind = protocol::OpKind::kThreadDelete;
  }
  if (auto accepted =
          check_thread_accepts(store, options.thread_id, std::string(protocol::to_string(request.kind)));
      !accepted) {
    print_error(context, accepted.error());
    *context.err << "keel threads: keel resume " << options.thread_id << " continues the thread's turn\n";
    return kExitFailed;
  }
  SystemClock clock;
  UuidV7Source ids(clock);
  StoreCommands commands(store, clock, ids);
  request.client_id = "cli-threads";
  request.submission_id = ids.next_id();
  request.payload = payload;
  auto result = commands.execute(request);
  if (!result) return print_error(context, result.error());
  const CommandOutcome& outcome = result->outcome;
  if (!outcome.accepted) return print_error(context, *outcome.rejection);
  if (options.json) {
    *context.out << outcome.result.dump() << "\n";
  } else if (options.action == "fork") {
    *context.out << "forked " << options.thread_id << " as " << outcome.result.value("threadId", "") << "\n";
  } else if (options.action == "select") {
    *context.out << "selected branch " << options.node_id << " of " << options.thread_id << "\n";
  } else {
    *context.out << "deleted " << options.thread_id << "\n";
  }
  return kExitOk;
}

}  // namespace

int threads_command(const CommandContext& context, const ThreadsOptions& options) {
  const bool changes = options.action == "fork" || options.action == "select" || options.action == "delete";
  auto handle = open_store(context.config, /*exclusive=*/changes);
  if (!handle) return print_error(context, handle.error(), kExitSetup);
  Store& store = *handle->store;
  if (options.action == "list") return list_threads(context, store, options.json);
  if (options.action == "show") return show_thread(context, store, options);
  return change_thread(context, store, options);
}

}  // namespace keel::cli
