#include "store/records.h"

#include <array>
#include <utility>

#include "keel/error_codes.h"

namespace keel {
namespace {

constexpr std::array<std::pair<NodeKind, std::string_view>, 8> kNodeKinds = {{
    {NodeKind::kTurnContext, "turn_context"},
    {NodeKind::kUserMessage, "user_message"},
    {NodeKind::kAssistantMessage, "assistant_message"},
    {NodeKind::kToolCall, "tool_call"},
    {NodeKind::kToolResult, "tool_result"},
    {NodeKind::kApprovalDecision, "approval_decision"},
    {NodeKind::kNotice, "notice"},
    {NodeKind::kCompaction, "compaction"},
}};

constexpr std::array<std::pair<RunState, std::string_view>, 10> kRunStates = {{
    {RunState::kQueued, "queued"},
    {RunState::kStreamingModel, "streaming_model"},
    {RunState::kExecutingTool, "executing_tool"},
    {RunState::kWaitingApproval, "waiting_approval"},
    {RunState::kWaitingInteraction, "waiting_interaction"},
    {RunState::kCompleted, "completed"},
    {RunState::kInterrupted, "interrupted"},
    {RunState::kBudgetPaused, "budget_paused"},
    {RunState::kPausedUncertain, "paused_uncertain"},
    {RunState::kFailed, "failed"},
}};

constexpr std::array<std::pair<DispatchState, std::string_view>, 3> kDispatchStates = {{
    {DispatchState::kPrepared, "prepared"},
    {DispatchState::kDispatched, "dispatched"},
    {DispatchState::kSettled, "settled"},
}};

constexpr std::array<std::pair<TurnKind, std::string_view>, 2> kTurnKinds = {{
    {TurnKind::kUser, "user"},
    {TurnKind::kTitle, "title"},
}};

constexpr std::array<std::pair<SteerState, std::string_view>, 2> kSteerStates = {{
    {SteerState::kPending, "pending"},
    {SteerState::kMaterialized, "materialized"},
}};

constexpr std::array<std::pair<ApprovalState, std::string_view>, 2> kApprovalStates = {{
    {ApprovalState::kPending, "pending"},
    {ApprovalState::kDecided, "decided"},
}};

constexpr std::array<std::pair<InteractionKind, std::string_view>, 3> kInteractionKinds = {{
    {InteractionKind::kAskUser, "ask_user"},
    {InteractionKind::kElicitation, "elicitation"},
    {InteractionKind::kTimer, "timer"},
}};

constexpr std::array<std::pair<ClaimState, std::string_view>, 3> kClaimStates = {{
    {ClaimState::kWaiting, "waiting"},
    {ClaimState::kAnswered, "answered"},
    {ClaimState::kClaimed, "claimed"},
}};

template <typename Enum, size_t N>
std::string_view name_of(const std::array<std::pair<Enum, std::string_view>, N>& table, Enum value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "unknown";
}

template <typename Enum, size_t N>
Result<Enum> parse(const std::array<std::pair<Enum, std::string_view>, N>& table, std::string_view text,
                   std::string_view what) {
  for (const auto& [e, name] : table) {
    if (name == text) return e;
  }
  return fail(codes::kStoreDecode,
              "unknown " + std::string(what) + " '" + std::string(text) + "' in the store");
}

}  // namespace

std::string_view to_string(NodeKind kind) { return name_of(kNodeKinds, kind); }
Result<NodeKind> parse_node_kind(std::string_view text) { return parse(kNodeKinds, text, "node kind"); }
std::string_view to_string(RunState state) { return name_of(kRunStates, state); }
Result<RunState> parse_run_state(std::string_view text) { return parse(kRunStates, text, "run state"); }
std::string_view to_string(DispatchState state) { return name_of(kDispatchStates, state); }
Result<DispatchState> parse_dispatch_state(std::string_view text) {
  return parse(kDispatchStates, text, "dispatch state");
}

std::string_view to_string(TurnKind kind) { return name_of(kTurnKinds, kind); }
Result<TurnKind> parse_turn_kind(std::string_view text) { return parse(kTurnKinds, text, "turn kind"); }
std::string_view to_string(SteerState state) { return name_of(kSteerStates, state); }
Result<SteerState> parse_steer_state(std::string_view text) {
  return parse(kSteerStates, text, "steer state");
}
std::string_view to_string(ApprovalState state) { return name_of(kApprovalStates, state); }
Result<ApprovalState> parse_approval_state(std::string_view text) {
  return parse(kApprovalStates, text, "approval state");
}
std::string_view to_string(InteractionKind kind) { return name_of(kInteractionKinds, kind); }
Result<InteractionKind> parse_interaction_kind(std::string_view text) {
  return parse(kInteractionKinds, text, "interaction kind");
}
std::string_view to_string(ClaimState state) { return name_of(kClaimStates, state); }
Result<ClaimState> parse_claim_state(std::string_view text) {
  return parse(kClaimStates, text, "claim state");
}

bool is_terminal(RunState state) {
  switch (state) {
    case RunState::kCompleted:
    case RunState::kInterrupted:
    case RunState::kBudgetPaused:
    case RunState::kPausedUncertain:
    case RunState::kFailed:
      return true;
    default:
      return false;
  }
}

}  // namespace keel
