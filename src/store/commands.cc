#include "store/commands.h"

#include <optional>

#include "keel/error_codes.h"
#include "store/queue_repository.h"
#include "store/thread_repository.h"
#include "util/overloaded.h"

namespace keel {
namespace {

using nlohmann::json;

Result<void> check_revision(const ThreadRecord& thread, std::optional<int64_t> expected) {
  if (expected && *expected != thread.revision) {
    return fail(codes::kRevisionConflict, "thread " + thread.id + " is at revision " +
                                              std::to_string(thread.revision) + ", not " +
                                              std::to_string(*expected));
  }
  return {};
}

constexpr size_t kMaxTitleBytes = 1024;

}  // namespace

Result<CommandResult> StoreCommands::execute(const CommandRequest& request) {
  const protocol::OpSpec& spec = protocol::spec_of(request.kind);
  if (!spec.store_command)
    return fail(codes::kInvalidArgument, "'" + std::string(spec.name) + "' is not a store command");
  auto context = KEEL_TRY(make_command_context(request.client_id, request.submission_id,
                                               std::string(spec.name), request.payload));
  return run_command(store_, clock_, context, [&](Transaction& tx) -> Result<json> {
    return apply(tx, KEEL_TRY(protocol::decode_store_command(request.kind, request.payload)));
  });
}

Result<json> StoreCommands::apply(Transaction& tx, const protocol::StoreCommand& command) {
  ThreadRepository threads(clock_);
  QueueRepository queue(clock_);
  return std::visit(
      Overloaded{
          [&](const protocol::ThreadCreateParams& create) -> Result<json> {
            if (create.title && create.title->size() > kMaxTitleBytes) {
              return fail(codes::kInvalidArgument,
                          "the title is longer than " + std::to_string(kMaxTitleBytes) + " bytes");
            }
            ThreadRecord thread =
                KEEL_TRY(threads.create(tx, ids_.next_id(), create.title.value_or("New thread"),
                                        create.title.has_value(), create.model));
            return json{{"threadId", thread.id}, {"revision", thread.revision}};
          },
          [&](const protocol::ThreadDeleteParams& remove) -> Result<json> {
            ThreadRecord thread = KEEL_TRY(threads.mark_deleted(tx, remove.thread_id));
            return json{{"threadId", thread.id}, {"revision", thread.revision}};
          },
          [&](const protocol::ThreadForkParams& fork) -> Result<json> {
            ThreadRecord forked =
                KEEL_TRY(threads.fork(tx, fork.thread_id, ids_.next_id(), fork.at_node_id, fork.title));
            return json{{"threadId", forked.id},
                        {"parentThreadId", fork.thread_id},
                        {"forkNodeId", forked.fork_node_id ? json(*forked.fork_node_id) : json(nullptr)},
                        {"revision", forked.revision}};
          },
          [&](const protocol::ThreadSelectBranchParams& select) -> Result<json> {
            KEEL_TRY(
                check_revision(KEEL_TRY(threads.get_live(tx, select.thread_id)), select.expected_revision));
            ThreadRecord thread = KEEL_TRY(threads.select_branch(tx, select.thread_id, select.leaf_node_id));
            return json{
                {"threadId", thread.id}, {"leafNodeId", select.leaf_node_id}, {"revision", thread.revision}};
          },
          [&](const protocol::ThreadSetModelParams& set) -> Result<json> {
            KEEL_TRY(check_revision(KEEL_TRY(threads.get_live(tx, set.thread_id)), set.expected_revision));
            ThreadRecord thread = KEEL_TRY(threads.set_model(tx, set.thread_id, set.model));
            return json{{"threadId", thread.id}, {"model", set.model}, {"revision", thread.revision}};
          },
          [&](const protocol::ThreadSetMcpServersParams& set) -> Result<json> {
            KEEL_TRY(check_revision(KEEL_TRY(threads.get_live(tx, set.thread_id)), set.expected_revision));
            ThreadRecord thread = KEEL_TRY(threads.set_mcp_servers(tx, set.thread_id, set.servers));
            return json{{"threadId", thread.id},
                        {"mcpServers", set.servers ? json(*set.servers) : json(nullptr)},
                        {"revision", thread.revision}};
          },
          // The queue commands. Each bumps the thread's revision so clients can order queue.updated events.
          [&](const protocol::TurnEnqueueParams& enqueue) -> Result<json> {
            KEEL_TRY(threads.get_live(tx, enqueue.thread_id));
            QueuedInput request_item;
            request_item.id = ids_.next_id();
            request_item.thread_id = enqueue.thread_id;
            request_item.input = enqueue.input;
            QueuedInput item = KEEL_TRY(queue.enqueue(tx, std::move(request_item)));
            const int64_t length = KEEL_TRY(queue.count(tx, enqueue.thread_id));
            ThreadRecord thread = KEEL_TRY(threads.touch(tx, enqueue.thread_id));
            return json{{"threadId", enqueue.thread_id},
                        {"itemId", item.id},
                        {"position", item.position},
                        {"queueLength", length},
                        {"revision", thread.revision}};
          },
          [&](const protocol::QueueUpdateParams& update) -> Result<json> {
            KEEL_TRY(threads.get_live(tx, update.thread_id));
            QueuedInput item = KEEL_TRY(
                queue.update(tx, update.thread_id, update.item_id, update.input, update.expected_revision));
            ThreadRecord thread = KEEL_TRY(threads.touch(tx, update.thread_id));
            return json{{"threadId", update.thread_id},
                        {"itemId", item.id},
                        {"itemRevision", item.revision},
                        {"revision", thread.revision}};
          },
          [&](const protocol::QueueRemoveParams& remove) -> Result<json> {
            KEEL_TRY(threads.get_live(tx, remove.thread_id));
            KEEL_TRY(queue.remove(tx, remove.thread_id, remove.item_id));
            const int64_t length = KEEL_TRY(queue.count(tx, remove.thread_id));
            ThreadRecord thread = KEEL_TRY(threads.touch(tx, remove.thread_id));
            return json{{"threadId", remove.thread_id},
                        {"itemId", remove.item_id},
                        {"queueLength", length},
                        {"revision", thread.revision}};
          },
      },
      command);
}

}  // namespace keel
