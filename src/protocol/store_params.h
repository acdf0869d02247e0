// protocol/store_params.h — the typed params of the ops that are store commands (store/commands.h), and
// their decoders.
//
// A decoder reads an op's params (a JSON object whose null members were already dropped by the engine, so
// null is absent) into its struct: a required member that is missing or of the wrong type is a
// deterministic rejection with invalid_argument naming the member, the same answer whichever transport
// carried the op (the JSON-RPC layer checks the schema first; an in-process client reaches here directly).
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "keel/error.h"
#include "protocol/ops.h"

namespace keel::protocol {

struct ThreadCreateParams {
  std::optional<std::string> title;
  std::optional<std::string> model;  // a name of the engine's model catalogue (the engine checks it)
};
struct ThreadDeleteParams {
  std::string thread_id;
};
struct ThreadForkParams {
  std::string thread_id;
  std::optional<std::string> at_node_id;
  std::optional<std::string> title;
};
struct ThreadSelectBranchParams {
  std::string thread_id;
  std::string leaf_node_id;
  std::optional<int64_t> expected_revision;  // the thread's
};
// The model the thread's next turns use; a running or waiting run keeps its own.
struct ThreadSetModelParams {
  std::string thread_id;
  std::string model;                         // a name of the engine's model catalogue (the engine checks it)
  std::optional<int64_t> expected_revision;  // the thread's
};
// The MCP servers whose tools the thread's next turns may use; a running or waiting run keeps its own.
struct ThreadSetMcpServersParams {
  static constexpr size_t kMaxServers = 64;
  static constexpr size_t kMaxNameBytes = 128;
  std::string thread_id;
  // Names of configured servers, sorted, each once; nullopt (absent or null): every enabled server.
  std::optional<std::vector<std::string>> servers;
  std::optional<int64_t> expected_revision;  // the thread's
};
struct TurnEnqueueParams {
  std::string thread_id;
  nlohmann::json input;  // a turn's input, kept as the client gave it (the engine checks it is one)
};
struct QueueUpdateParams {
  std::string thread_id;
  std::string item_id;
  nlohmann::json input;
  std::optional<int64_t> expected_revision;  // the item's
};
struct QueueRemoveParams {
  std::string thread_id;
  std::string item_id;
};

using StoreCommand = std::variant<ThreadCreateParams, ThreadDeleteParams, ThreadForkParams,
                                  ThreadSelectBranchParams, ThreadSetModelParams, ThreadSetMcpServersParams,
                                  TurnEnqueueParams, QueueUpdateParams, QueueRemoveParams>;

// The op a decoded command answers as (its receipt's command type).
OpKind kind_of(const StoreCommand& command);

// Decodes `params` as the store command `kind`. invalid_argument for a kind that is not a store command
// (spec_of(kind).store_command is false), params that are not an object, or a member missing or mistyped.
Result<StoreCommand> decode_store_command(OpKind kind, const nlohmann::json& params);

}  // namespace keel::protocol
