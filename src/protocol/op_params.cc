#include "protocol/op_params.h"

#include "keel/error_codes.h"
#include "protocol/param_fields.h"
#include "util/canonical_json.h"

namespace keel::protocol {

using nlohmann::json;

namespace {

Result<void> require_object(const json& params) {
  if (!params.is_object()) return fail(codes::kInvalidArgument, "the params must be a JSON object");
  return {};
}

// attachments: [{nodeId} | {runId}], each ref naming exactly one; [] when absent.
Result<json> decode_attachments(const json& params) {
  json refs = member_or_null(params, "attachments");
  if (refs.is_null()) return json::array();
  if (!refs.is_array())
    return fail(codes::kInvalidArgument, "'attachments' must be an array of {nodeId} or {runId}");
  for (const json& ref : refs) {
    const bool node = ref.is_object() && ref.contains("nodeId") && ref["nodeId"].is_string();
    const bool run = ref.is_object() && ref.contains("runId") && ref["runId"].is_string();
    if (node == run || ref.size() != 1) {
      return fail(codes::kInvalidArgument,
                  "each attachment is {\"nodeId\": ...} or {\"runId\": ...}, got " + ref.dump());
    }
  }
  return refs;
}

}  // namespace

std::string addressed_thread(const json& params) {
  if (!params.is_object()) return "";
  auto it = params.find("threadId");
  return it != params.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string_view to_string(UncertainResolution resolution) {
  switch (resolution) {
    case UncertainResolution::kRetry:
      return "retry";
    case UncertainResolution::kMarkDone:
      return "mark_done";
    case UncertainResolution::kFail:
      return "fail";
  }
  return "fail";
}

Result<InitializeParams> InitializeParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  return InitializeParams{KEEL_TRY(optional_bool(params, "subscribe")).value_or(true)};
}

Result<ThreadListParams> ThreadListParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  return ThreadListParams{};
}

Result<ModelListParams> ModelListParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  return ModelListParams{};
}

Result<ThreadReadParams> ThreadReadParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  return ThreadReadParams{KEEL_TRY(required_string(params, "threadId"))};
}

Result<ThreadBranchesParams> ThreadBranchesParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  return ThreadBranchesParams{KEEL_TRY(required_string(params, "threadId"))};
}

Result<QueueListParams> QueueListParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  return QueueListParams{KEEL_TRY(required_string(params, "threadId"))};
}

Result<TurnSubmitParams> TurnSubmitParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  TurnSubmitParams submit{
      member_or_null(params, "input"), KEEL_TRY(optional_budget(params, "budgetTokens")), {}};
  submit.parent_node_id = KEEL_TRY(optional_string(params, "parentNodeId"));
  return submit;
}

Result<TurnInterruptParams> TurnInterruptParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  return TurnInterruptParams{KEEL_TRY(optional_string(params, "turnId"))};
}

Result<TakeoverParams> TakeoverParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  return TakeoverParams{KEEL_TRY(required_string(params, "target"))};
}

Result<TurnSteerParams> TurnSteerParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  const json expected = member_or_null(params, "expectedTurnId");
  if (!expected.is_string() || expected.get_ref<const std::string&>().empty()) {
    return fail(codes::kInvalidArgument, "'expectedTurnId' must name the turn to steer");
  }
  return TurnSteerParams{expected.get<std::string>(), member_or_null(params, "input"),
                         KEEL_TRY(decode_attachments(params))};
}

Result<TurnInputParams> TurnInputParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  TurnInputParams input{member_or_null(params, "input"), KEEL_TRY(decode_attachments(params)), {}};
  input.budget_tokens = KEEL_TRY(optional_budget(params, "budgetTokens"));
  return input;
}

Result<QueueStartParams> QueueStartParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  return QueueStartParams{};
}

Result<RunResumeParams> RunResumeParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  RunResumeParams resume{KEEL_TRY(optional_string(params, "runId")), {}};
  resume.additional_budget_tokens = KEEL_TRY(optional_budget(params, "additionalBudgetTokens"));
  return resume;
}

Result<RunResolveUncertainParams> RunResolveUncertainParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  const json resolution = member_or_null(params, "resolution");
  RunResolveUncertainParams resolve;
  if (resolution == "retry") {
    resolve.resolution = UncertainResolution::kRetry;
  } else if (resolution == "mark_done") {
    resolve.resolution = UncertainResolution::kMarkDone;
  } else if (resolution == "fail") {
    resolve.resolution = UncertainResolution::kFail;
  } else {
    return fail(codes::kInvalidArgument, "'resolution' must be retry, mark_done or fail");
  }
  resolve.run_id = KEEL_TRY(optional_string(params, "runId"));
  return resolve;
}

Result<ApprovalResponseParams> ApprovalResponseParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  ApprovalResponseParams response;
  response.approval_id = KEEL_TRY(required_string(params, "approvalId"));
  response.decision = KEEL_TRY(required_string(params, "decision"));
  if (response.decision != "accept" && response.decision != "acceptForSite" &&
      response.decision != "decline") {
    return fail(codes::kInvalidArgument,
                "'decision' must be accept, acceptForSite or decline, not '" + response.decision + "'");
  }
  // acceptForSite's lifetime: how long the remembered decision holds (docs/policy.md).
  if (const json remember = member_or_null(params, "remember"); !remember.is_null()) {
    const bool known =
        remember.is_string() && (remember == "turn" || remember == "session" || remember == "untilRevoked");
    if (!known || response.decision != "acceptForSite") {
      return fail(codes::kInvalidArgument,
                  "'remember' goes with acceptForSite and is turn, session or untilRevoked");
    }
    response.remember = remember.get<std::string>();
  }
  if (const json reason = member_or_null(params, "reason"); !reason.is_null()) {
    if (!reason.is_string()) return fail(codes::kInvalidArgument, "'reason' must be a string");
    const std::string& text = reason.get_ref<const std::string&>();
    if (text.size() > kMaxReasonBytes) {
      return fail(codes::kInvalidArgument,
                  "'reason' is longer than " + std::to_string(kMaxReasonBytes) + " bytes");
    }
    KEEL_TRY(canonical_json(reason));  // valid UTF-8
    if (!text.empty()) response.reason = text;
  }
  return response;
}

Result<InteractionResponseParams> InteractionResponseParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  InteractionResponseParams answer;
  answer.interaction_id = KEEL_TRY(required_string(params, "interactionId"));
  answer.response = member_or_null(params, "response");
  if (answer.response.is_null()) return fail(codes::kInvalidArgument, "'response' is missing");
  KEEL_TRY(canonical_json(answer.response));  // valid UTF-8 throughout
  return answer;
}

Result<PolicyReadParams> PolicyReadParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  return PolicyReadParams{};
}

Result<PolicyChangeParams> PolicyChangeParams::decode(const json& params) {
  KEEL_TRY(require_object(params));
  return PolicyChangeParams{params};
}

}  // namespace keel::protocol
