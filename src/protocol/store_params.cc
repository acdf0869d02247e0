#include "protocol/store_params.h"

#include <algorithm>

#include "keel/error_codes.h"
#include "protocol/param_fields.h"
#include "util/overloaded.h"

namespace keel::protocol {
namespace {

using nlohmann::json;

// thread.setMcpServers' `servers`: absent (null is absent, protocol.md: every enabled server) or a list of
// names, returned sorted and each once, so equal choices are stored alike.
Result<std::optional<std::vector<std::string>>> optional_server_names(const json& params) {
  const auto it = params.find("servers");
  if (it == params.end() || it->is_null()) return std::optional<std::vector<std::string>>();
  if (!it->is_array())
    return fail(codes::kInvalidArgument, "'servers' must be a list of server names or null");
  if (it->size() > ThreadSetMcpServersParams::kMaxServers) {
    return fail(
        codes::kInvalidArgument,
        "'servers' names more than " + std::to_string(ThreadSetMcpServersParams::kMaxServers) + " servers");
  }
  std::vector<std::string> names;
  for (const json& name : *it) {
    if (!name.is_string() || name.get_ref<const std::string&>().empty() ||
        name.get_ref<const std::string&>().size() > ThreadSetMcpServersParams::kMaxNameBytes) {
      return fail(codes::kInvalidArgument, "every entry of 'servers' must be a server name of 1 to " +
                                               std::to_string(ThreadSetMcpServersParams::kMaxNameBytes) +
                                               " bytes");
    }
    names.push_back(name.get<std::string>());
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return std::optional<std::vector<std::string>>(std::move(names));
}

Result<json> required_input(const json& params) {
  auto it = params.find("input");
  if (it == params.end() || it->is_null()) return fail(codes::kInvalidArgument, "'input' is required");
  return *it;
}

}  // namespace

OpKind kind_of(const StoreCommand& command) {
  return std::visit(Overloaded{
                        [](const ThreadCreateParams&) { return OpKind::kThreadCreate; },
                        [](const ThreadDeleteParams&) { return OpKind::kThreadDelete; },
                        [](const ThreadForkParams&) { return OpKind::kThreadFork; },
                        [](const ThreadSelectBranchParams&) { return OpKind::kThreadSelectBranch; },
                        [](const ThreadSetModelParams&) { return OpKind::kThreadSetModel; },
                        [](const ThreadSetMcpServersParams&) { return OpKind::kThreadSetMcpServers; },
                        [](const TurnEnqueueParams&) { return OpKind::kTurnEnqueue; },
                        [](const QueueUpdateParams&) { return OpKind::kQueueUpdate; },
                        [](const QueueRemoveParams&) { return OpKind::kQueueRemove; },
                    },
                    command);
}

Result<StoreCommand> decode_store_command(OpKind kind, const json& params) {
  if (!spec_of(kind).store_command) {
    return fail(codes::kInvalidArgument, "'" + std::string(to_string(kind)) + "' is not a store command");
  }
  if (!params.is_object()) return fail(codes::kInvalidArgument, "the payload must be a JSON object");
  switch (kind) {
    case OpKind::kThreadCreate:
      return ThreadCreateParams{KEEL_TRY(optional_string(params, "title")),
                                KEEL_TRY(optional_string(params, "model"))};
    case OpKind::kThreadDelete:
      return ThreadDeleteParams{KEEL_TRY(required_string(params, "threadId"))};
    case OpKind::kThreadFork: {
      ThreadForkParams fork{KEEL_TRY(required_string(params, "threadId")), {}, {}};
      fork.at_node_id = KEEL_TRY(optional_string(params, "atNodeId"));
      fork.title = KEEL_TRY(optional_string(params, "title"));
      return fork;
    }
    case OpKind::kThreadSelectBranch: {
      ThreadSelectBranchParams select{KEEL_TRY(required_string(params, "threadId")), {}, {}};
      select.leaf_node_id = KEEL_TRY(required_string(params, "leafNodeId"));
      select.expected_revision = KEEL_TRY(optional_integer(params, "expectedRevision"));
      return select;
    }
    case OpKind::kThreadSetModel: {
      ThreadSetModelParams set{KEEL_TRY(required_string(params, "threadId")), {}, {}};
      set.model = KEEL_TRY(required_string(params, "model"));
      set.expected_revision = KEEL_TRY(optional_integer(params, "expectedRevision"));
      return set;
    }
    case OpKind::kThreadSetMcpServers: {
      ThreadSetMcpServersParams set{KEEL_TRY(required_string(params, "threadId")), {}, {}};
      set.servers = KEEL_TRY(optional_server_names(params));
      set.expected_revision = KEEL_TRY(optional_integer(params, "expectedRevision"));
      return set;
    }
    case OpKind::kTurnEnqueue: {
      TurnEnqueueParams enqueue{KEEL_TRY(required_string(params, "threadId")), {}};
      enqueue.input = KEEL_TRY(required_input(params));
      return enqueue;
    }
    case OpKind::kQueueUpdate: {
      QueueUpdateParams update{KEEL_TRY(required_string(params, "threadId")), {}, {}, {}};
      update.item_id = KEEL_TRY(required_string(params, "itemId"));
      update.input = KEEL_TRY(required_input(params));
      update.expected_revision = KEEL_TRY(optional_integer(params, "expectedRevision"));
      return update;
    }
    case OpKind::kQueueRemove: {
      QueueRemoveParams remove{KEEL_TRY(required_string(params, "threadId")), {}};
      remove.item_id = KEEL_TRY(required_string(params, "itemId"));
      return remove;
    }
    default:
      break;
  }
  return fail(codes::kInvalidArgument, "'" + std::string(to_string(kind)) + "' is not a store command");
}

}  // namespace keel::protocol
