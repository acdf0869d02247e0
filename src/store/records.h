// store/records.h — the domain records keel persists (docs/store.md describes each table).
//
// Records are plain values. Every column with a fixed set of values is an enum here, with to_string (the
// stored text) and parse_* (store.decode_failed for text no value names: a damaged or foreign row). Ids are
// assigned by the caller (from an IdSource) before a record is written, so an id is stable across retries and
// restarts. JSON columns hold canonical JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "keel/error.h"
#include "keel/interaction_kind.h"
#include "store/approval_answer.h"
#include "store/pending_tool.h"

namespace keel {

enum class NodeKind {
  kTurnContext,
  kUserMessage,
  kAssistantMessage,
  kToolCall,
  kToolResult,
  kApprovalDecision,
  kNotice,
  kCompaction,
};
std::string_view to_string(NodeKind kind);
Result<NodeKind> parse_node_kind(std::string_view text);

struct ThreadRecord {
  std::string id;
  std::string title;
  // The title was given by a person (thread.create / thread.fork with a title): automatic titles (the first
  // turn's fallback and the task model's) never replace it.
  bool title_given = false;
  // The model a person chose for the thread's turns (a name of the engine's model catalogue; nullopt: the
  // engine's default).
  std::optional<std::string> model;
  // The MCP servers whose tools the thread's turns may use (names of configured servers,
  // thread.setMcpServers; nullopt: every enabled server).
  std::optional<std::vector<std::string>> mcp_servers;
  std::optional<std::string> leaf_node_id;      // nullopt: no node yet
  std::optional<std::string> parent_thread_id;  // set on forks
  std::optional<std::string> fork_node_id;      // the node of the parent thread the fork starts from
  int64_t revision = 0;
  int64_t next_node_seq = 1;
  int64_t created_at = 0;
  int64_t updated_at = 0;
  bool deleted = false;
};

struct NodeRecord {
  std::string id;
  std::string thread_id;
  std::optional<std::string> parent_id;
  NodeKind kind = NodeKind::kNotice;
  std::optional<std::string> run_id;
  int64_t seq = 0;
  nlohmann::json body;
  int64_t created_at = 0;
};

enum class RunState {
  kQueued,
  kStreamingModel,
  kExecutingTool,
  kWaitingApproval,
  kWaitingInteraction,
  kCompleted,
  kInterrupted,
  kBudgetPaused,
  kPausedUncertain,
  kFailed,
};
std::string_view to_string(RunState state);
Result<RunState> parse_run_state(std::string_view text);
// completed, interrupted, budget_paused, paused_uncertain, failed: the run is not executing.
bool is_terminal(RunState state);

// What a run's turn is for: "user" turns are steerable; "title" turns (the task model's) are not.
enum class TurnKind { kUser, kTitle };
std::string_view to_string(TurnKind kind);
Result<TurnKind> parse_turn_kind(std::string_view text);

struct RunRecord {
  std::string id;
  std::string thread_id;
  std::string turn_id;
  TurnKind turn_kind = TurnKind::kUser;
  RunState state = RunState::kQueued;
  std::optional<std::string> snapshot_id;
  int64_t step_cursor = 0;
  std::optional<PendingTool> pending_tool;  // the call started or waited on (store/pending_tool.h)
  int64_t revision = 0;
  std::optional<std::string> stop_reason;
  std::optional<std::string> provider_stop_reason;
  nlohmann::json usage = nlohmann::json::object();
  std::optional<int64_t> budget_tokens;
  int failure_streak = 0;
  int64_t next_admission_seq = 1;
  std::optional<std::string> error;
  int64_t created_at = 0;
  int64_t updated_at = 0;
};

struct QueuedInput {
  std::string id;
  std::string thread_id;
  int64_t position = 0;
  nlohmann::json input;
  int64_t revision = 0;
  int64_t created_at = 0;
  int64_t updated_at = 0;
};

enum class SteerState { kPending, kMaterialized };
std::string_view to_string(SteerState state);
Result<SteerState> parse_steer_state(std::string_view text);
struct SteerRecord {
  std::string id;
  std::string run_id;
  int64_t admission_seq = 0;
  nlohmann::json input;
  nlohmann::json attachments = nlohmann::json::array();
  SteerState state = SteerState::kPending;
  std::optional<std::string> node_id;
  int64_t created_at = 0;
};

enum class DispatchState { kPrepared, kDispatched, kSettled };
std::string_view to_string(DispatchState state);
Result<DispatchState> parse_dispatch_state(std::string_view text);
struct PreparedToolCallRecord {
  std::string tool_call_id;
  std::string run_id;
  std::optional<std::string> node_id;
  std::string tool_name;
  std::string descriptor_digest;
  nlohmann::json params;
  std::optional<nlohmann::json> target;
  DispatchState dispatch_state = DispatchState::kPrepared;
  int64_t created_at = 0;
  int64_t updated_at = 0;
};

enum class ApprovalState { kPending, kDecided };
std::string_view to_string(ApprovalState state);
Result<ApprovalState> parse_approval_state(std::string_view text);

struct ApprovalRecord {
  std::string id;
  std::string run_id;
  std::string tool_call_id;
  nlohmann::json request;
  std::optional<ApprovalAnswer> decision;  // set once decided (store/approval_answer.h)
  ApprovalState state = ApprovalState::kPending;
  int64_t created_at = 0;
  std::optional<int64_t> decided_at;
};

// A question for the user, an MCP elicitation, or a durable timer (keel/interaction_kind.h; stored as
// ask_user, elicitation, timer).
std::string_view to_string(InteractionKind kind);
Result<InteractionKind> parse_interaction_kind(std::string_view text);

// waiting -> answered (a response is stored) -> claimed (exactly one continuation took it).
enum class ClaimState { kWaiting, kAnswered, kClaimed };
std::string_view to_string(ClaimState state);
Result<ClaimState> parse_claim_state(std::string_view text);

struct InteractionRecord {
  std::string id;
  std::string run_id;
  InteractionKind kind = InteractionKind::kAskUser;
  nlohmann::json request;
  std::optional<nlohmann::json> response;
  ClaimState claim_state = ClaimState::kWaiting;
  std::optional<int64_t> due_at;
  int64_t created_at = 0;
  int64_t updated_at = 0;
};

struct EnvironmentSnapshotRecord {
  std::string id;
  int version = 1;
  std::string digest;
  nlohmann::json body;
  int64_t created_at = 0;
};

}  // namespace keel
