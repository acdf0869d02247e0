#include "store/commands.h"

#include <array>
#include <optional>

#include "keel/error_codes.h"
#include "store/queue_repository.h"
#include "store/thread_repository.h"

namespace keel {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 7> kCommandTypes = {
    "thread.create", "thread.delete", "thread.fork",  "thread.selectBranch",
    "turn.enqueue",  "queue.update",  "queue.remove",
};

// Payload readers: a missing or mistyped field is a deterministic rejection (invalid_argument).
Result<std::string> required_string(const json& payload, const char* key) {
  auto it = payload.find(key);
  if (it == payload.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return fail(codes::kInvalidArgument, std::string("'") + key + "' must be a non-empty string");
  }
  return it->get<std::string>();
}

Result<std::optional<std::string>> optional_string(const json& payload, const char* key) {
  auto it = payload.find(key);
  if (it == payload.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) return fail(codes::kInvalidArgument, std::string("'") + key + "' must be a string");
  return std::optional<std::string>(it->get<std::string>());
}

Result<std::optional<int64_t>> optional_integer(const json& payload, const char* key) {
  auto it = payload.find(key);
  if (it == payload.end() || it->is_null()) return std::optional<int64_t>();
  if (!it->is_number_integer()) return fail(codes::kInvalidArgument, std::string("'") + key + "' must be an integer");
  return std::optional<int64_t>(it->get<int64_t>());
}

Result<json> required_input(const json& payload) {
  auto it = payload.find("input");
  if (it == payload.end() || it->is_null()) return fail(codes::kInvalidArgument, "'input' is required");
  return *it;
}

Result<void> check_revision(const ThreadRecord& thread, std::optional<int64_t> expected) {
  if (expected && *expected != thread.revision) {
    return fail(codes::kRevisionConflict, "thread " + thread.id + " is at revision " +
                                              std::to_string(thread.revision) + ", not " + std::to_string(*expected));
  }
  return {};
}

constexpr size_t kMaxTitleBytes = 1024;

}  // namespace

bool StoreCommands::handles(std::string_view type) {
  for (std::string_view known : kCommandTypes) {
    if (known == type) return true;
  }
  return false;
}

Result<CommandResult> StoreCommands::execute(const CommandRequest& request) {
  if (!handles(request.type)) return fail(codes::kInvalidArgument, "unknown command '" + request.type + "'");
  auto context = KEEL_TRY(make_command_context(request.client_id, request.submission_id, request.type,
                                               request.payload));
  return run_command(store_, clock_, context,
                     [&](Transaction& tx) -> Result<json> { return apply(tx, request); });
}

Result<json> StoreCommands::apply(Transaction& tx, const CommandRequest& request) {
  const json& payload = request.payload;
  if (!payload.is_object()) return fail(codes::kInvalidArgument, "the payload must be a JSON object");
  ThreadRepository threads(clock_);
  QueueRepository queue(clock_);

  if (request.type == "thread.create") {
    auto title = KEEL_TRY(optional_string(payload, "title"));
    if (title && title->size() > kMaxTitleBytes) {
      return fail(codes::kInvalidArgument, "the title is longer than " + std::to_string(kMaxTitleBytes) + " bytes");
    }
    ThreadRecord thread = KEEL_TRY(threads.create(tx, ids_.next_id(), title.value_or("New thread"), title.has_value()));
    return json{{"threadId", thread.id}, {"revision", thread.revision}};
  }

  const std::string thread_id = KEEL_TRY(required_string(payload, "threadId"));

  if (request.type == "thread.delete") {
    ThreadRecord thread = KEEL_TRY(threads.mark_deleted(tx, thread_id));
    return json{{"threadId", thread.id}, {"revision", thread.revision}};
  }
  if (request.type == "thread.fork") {
    auto at = KEEL_TRY(optional_string(payload, "atNodeId"));
    auto title = KEEL_TRY(optional_string(payload, "title"));
    ThreadRecord fork = KEEL_TRY(threads.fork(tx, thread_id, ids_.next_id(), at, title));
    return json{{"threadId", fork.id},
                {"parentThreadId", thread_id},
                {"forkNodeId", fork.fork_node_id ? json(*fork.fork_node_id) : json(nullptr)},
                {"revision", fork.revision}};
  }
  if (request.type == "thread.selectBranch") {
    const std::string leaf = KEEL_TRY(required_string(payload, "leafNodeId"));
    auto expected = KEEL_TRY(optional_integer(payload, "expectedRevision"));
    KEEL_TRY(check_revision(KEEL_TRY(threads.get_live(tx, thread_id)), expected));
    ThreadRecord thread = KEEL_TRY(threads.select_branch(tx, thread_id, leaf));
    return json{{"threadId", thread.id}, {"leafNodeId", leaf}, {"revision", thread.revision}};
  }

  // The queue commands. Each bumps the thread's revision so clients can order queue.updated events.
  KEEL_TRY(threads.get_live(tx, thread_id));
  if (request.type == "turn.enqueue") {
    json input = KEEL_TRY(required_input(payload));
    QueuedInput request_item;
    request_item.id = ids_.next_id();
    request_item.thread_id = thread_id;
    request_item.input = std::move(input);
    QueuedInput item = KEEL_TRY(queue.enqueue(tx, std::move(request_item)));
    const int64_t length = KEEL_TRY(queue.count(tx, thread_id));
    ThreadRecord thread = KEEL_TRY(threads.touch(tx, thread_id));
    return json{{"threadId", thread_id},      {"itemId", item.id},           {"position", item.position},
                {"queueLength", length},      {"revision", thread.revision}};
  }
  const std::string item_id = KEEL_TRY(required_string(payload, "itemId"));
  if (request.type == "queue.update") {
    json input = KEEL_TRY(required_input(payload));
    auto expected = KEEL_TRY(optional_integer(payload, "expectedRevision"));
    QueuedInput item = KEEL_TRY(queue.update(tx, thread_id, item_id, std::move(input), expected));
    ThreadRecord thread = KEEL_TRY(threads.touch(tx, thread_id));
    return json{{"threadId", thread_id}, {"itemId", item.id}, {"itemRevision", item.revision},
                {"revision", thread.revision}};
  }
  // queue.remove
  KEEL_TRY(queue.remove(tx, thread_id, item_id));
  const int64_t length = KEEL_TRY(queue.count(tx, thread_id));
  ThreadRecord thread = KEEL_TRY(threads.touch(tx, thread_id));
  return json{{"threadId", thread_id}, {"itemId", item_id}, {"queueLength", length}, {"revision", thread.revision}};
}

}  // namespace keel
