// protocol/op_params.h — the typed params of the ops that are not store commands, and their decoders
// (the store commands' are protocol/store_params.h).
//
// ParamsOf<kind> names an op's params struct; decode<kind>(params) (its struct's decode) reads the op's
// params (a JSON object) into it. A member that is missing or mistyped is a deterministic rejection with
// invalid_argument naming the member (protocol/param_fields.h), and an absent member and a null one are the
// same, whichever transport carried the op: the JSON-RPC layer checks the schema first, an in-process client
// reaches the decoder directly. The engine reads an op's params only through these (and store_params.h).
//
// threadId is not a member of the structs of the ops that run on a thread's actor: it is the op's route
// (addressed_thread(), read before any decoding), and the actor is the thread. What a decoder keeps as JSON
// is checked by its user: a turn's input by the engine (it knows the model: images need vision), an
// interaction's response by the tool that asked, a policy change by the gatekeeper (keel/gatekeeper.h: an
// embedder's gatekeeper defines its own). Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "keel/error.h"
#include "protocol/ops.h"

namespace keel::protocol {

// The thread an op addresses: its params' threadId when that is a non-empty string, "" otherwise (the op
// then runs engine-wide, where an op that needs a thread is refused).
std::string addressed_thread(const nlohmann::json& params);

struct InitializeParams {
  bool subscribe = true;  // re-send the approvals and questions that wait for an answer
  static Result<InitializeParams> decode(const nlohmann::json& params);
};
struct ThreadListParams {
  static Result<ThreadListParams> decode(const nlohmann::json& params);
};
struct ThreadReadParams {
  std::string thread_id;
  static Result<ThreadReadParams> decode(const nlohmann::json& params);
};
struct ThreadBranchesParams {
  std::string thread_id;
  static Result<ThreadBranchesParams> decode(const nlohmann::json& params);
};
struct ModelListParams {
  static Result<ModelListParams> decode(const nlohmann::json& params);
};
struct QueueListParams {
  std::string thread_id;
  static Result<QueueListParams> decode(const nlohmann::json& params);
};
struct TurnSubmitParams {
  nlohmann::json input;  // null when absent
  std::optional<int64_t> budget_tokens;
  // The node the turn goes under instead of the thread's leaf (a new branch); "" is the root (an empty
  // history). Absent: the leaf.
  std::optional<std::string> parent_node_id;
  static Result<TurnSubmitParams> decode(const nlohmann::json& params);
};
struct TurnInterruptParams {
  std::optional<std::string> turn_id;  // absent: whichever turn runs
  static Result<TurnInterruptParams> decode(const nlohmann::json& params);
};
// takeover.start and takeover.end (keel/takeover.h).
struct TakeoverParams {
  std::string target;  // the TakeoverTarget's name: "browser"
  static Result<TakeoverParams> decode(const nlohmann::json& params);
};
struct TurnSteerParams {
  std::string expected_turn_id;
  nlohmann::json input;        // null when absent
  nlohmann::json attachments;  // [{nodeId} | {runId}], each naming one; [] when absent
  static Result<TurnSteerParams> decode(const nlohmann::json& params);
};
// turn.input steers the running turn, enqueues, or starts a turn: it carries what each of those takes.
struct TurnInputParams {
  nlohmann::json input;                  // null when absent
  nlohmann::json attachments;            // as turn.steer's
  std::optional<int64_t> budget_tokens;  // for a turn it starts (in-process clients; not in the schema)
  static Result<TurnInputParams> decode(const nlohmann::json& params);
};
struct QueueStartParams {
  static Result<QueueStartParams> decode(const nlohmann::json& params);
};
struct RunResumeParams {
  std::optional<std::string> run_id;  // absent or "": the thread's latest run
  std::optional<int64_t> additional_budget_tokens;
  static Result<RunResumeParams> decode(const nlohmann::json& params);
};
enum class UncertainResolution { kRetry, kMarkDone, kFail };
std::string_view to_string(UncertainResolution resolution);
struct RunResolveUncertainParams {
  UncertainResolution resolution = UncertainResolution::kFail;
  std::optional<std::string> run_id;  // absent: the thread's latest run
  static Result<RunResolveUncertainParams> decode(const nlohmann::json& params);
};
struct ApprovalResponseParams {
  std::string approval_id;
  std::string decision;                 // accept | acceptForSite | decline
  std::optional<std::string> remember;  // acceptForSite only: turn | session | untilRevoked
  std::optional<std::string> reason;    // at most kMaxReasonBytes of UTF-8; "" is absent
  static constexpr size_t kMaxReasonBytes = 4000;
  static Result<ApprovalResponseParams> decode(const nlohmann::json& params);
};
struct InteractionResponseParams {
  std::string interaction_id;
  nlohmann::json response;  // valid UTF-8 throughout; the asking tool judges it
  static Result<InteractionResponseParams> decode(const nlohmann::json& params);
};
struct PolicyReadParams {
  static Result<PolicyReadParams> decode(const nlohmann::json& params);
};
// policy.setMode, addRule, removeRule, setHostPermissions: the change as the client gave it (threadId
// included), which the gatekeeper validates and writes (Gatekeeper::write_change).
struct PolicyChangeParams {
  nlohmann::json change;
  static Result<PolicyChangeParams> decode(const nlohmann::json& params);
};

// The params struct of each op (not the store commands', not the transport's session ops).
template <OpKind K>
struct OpParams;
template <OpKind K>
using ParamsOf = typename OpParams<K>::type;

#define KEEL_OP_PARAMS_(kind, params) \
  template <>                         \
  struct OpParams<OpKind::kind> {     \
    using type = params;              \
  };
KEEL_OP_PARAMS_(kInitialize, InitializeParams)
KEEL_OP_PARAMS_(kThreadList, ThreadListParams)
KEEL_OP_PARAMS_(kThreadRead, ThreadReadParams)
KEEL_OP_PARAMS_(kThreadBranches, ThreadBranchesParams)
KEEL_OP_PARAMS_(kModelList, ModelListParams)
KEEL_OP_PARAMS_(kQueueList, QueueListParams)
KEEL_OP_PARAMS_(kTurnSubmit, TurnSubmitParams)
KEEL_OP_PARAMS_(kTurnInterrupt, TurnInterruptParams)
KEEL_OP_PARAMS_(kTurnSteer, TurnSteerParams)
KEEL_OP_PARAMS_(kTurnInput, TurnInputParams)
KEEL_OP_PARAMS_(kQueueStart, QueueStartParams)
KEEL_OP_PARAMS_(kRunResume, RunResumeParams)
KEEL_OP_PARAMS_(kRunResolveUncertain, RunResolveUncertainParams)
KEEL_OP_PARAMS_(kApprovalResponse, ApprovalResponseParams)
KEEL_OP_PARAMS_(kInteractionResponse, InteractionResponseParams)
KEEL_OP_PARAMS_(kPolicyRead, PolicyReadParams)
KEEL_OP_PARAMS_(kPolicySetMode, PolicyChangeParams)
KEEL_OP_PARAMS_(kPolicyAddRule, PolicyChangeParams)
KEEL_OP_PARAMS_(kPolicyRemoveRule, PolicyChangeParams)
KEEL_OP_PARAMS_(kPolicySetHostPermissions, PolicyChangeParams)
KEEL_OP_PARAMS_(kTakeoverStart, TakeoverParams)
KEEL_OP_PARAMS_(kTakeoverEnd, TakeoverParams)
#undef KEEL_OP_PARAMS_

// The op's decoder: ParamsOf<K>::decode.
template <OpKind K>
Result<ParamsOf<K>> decode(const nlohmann::json& params) {
  return ParamsOf<K>::decode(params);
}

}  // namespace keel::protocol
