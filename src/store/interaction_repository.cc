#include "store/interaction_repository.h"

#include <utility>

#include "keel/error_codes.h"
#include "store/json_column.h"

namespace keel {
namespace {

constexpr char kApprovalColumns[] =
    "id, run_id, tool_call_id, request, decision, state, created_at, decided_at";
constexpr char kInteractionColumns[] =
    "id, run_id, kind, request, response, claim_state, due_at, created_at, updated_at";

Result<ApprovalRecord> approval_from_row(const SqlRow& row) {
  ApprovalRecord a;
  a.id = row.text(0);
  a.run_id = row.text(1);
  a.tool_call_id = row.text(2);
  a.request = KEEL_TRY(decode_json_column(row.text(3), "request of approval " + a.id));
  const std::string what = "decision of approval " + a.id;
  if (auto decision = KEEL_TRY(decode_optional_json_column(row.optional_text(4), what))) {
    a.decision = KEEL_TRY(decode_approval_answer(*decision, what));
  }
  a.state = KEEL_TRY(parse_approval_state(row.text(5)));
  a.created_at = row.integer(6);
  a.decided_at = row.optional_integer(7);
  return a;
}

Result<InteractionRecord> interaction_from_row(const SqlRow& row) {
  InteractionRecord i;
  i.id = row.text(0);
  i.run_id = row.text(1);
  i.kind = KEEL_TRY(parse_interaction_kind(row.text(2)));
  i.request = KEEL_TRY(decode_json_column(row.text(3), "request of interaction " + i.id));
  i.response = KEEL_TRY(decode_optional_json_column(row.optional_text(4), "response of interaction " + i.id));
  i.claim_state = KEEL_TRY(parse_claim_state(row.text(5)));
  i.due_at = row.optional_integer(6);
  i.created_at = row.integer(7);
  i.updated_at = row.integer(8);
  return i;
}

template <typename Record, typename FromRow>
Result<std::vector<Record>> from_rows(const std::vector<SqlRow>& rows, FromRow from_row) {
  std::vector<Record> records;
  records.reserve(rows.size());
  for (const SqlRow& row : rows) records.push_back(KEEL_TRY(from_row(row)));
  return records;
}

Result<void> require_run(Transaction& tx, const std::string& run_id) {
  auto row = KEEL_TRY(tx.query_one("SELECT 1 FROM runs WHERE id = ?", {run_id}));
  if (!row) return fail(codes::kRunNotFound, "no run " + run_id);
  return {};
}

}  // namespace

// ---- approvals ----

Result<ApprovalRecord> InteractionRepository::create_approval(Transaction& tx, ApprovalRecord approval) {
  if (approval.id.empty() || approval.tool_call_id.empty()) {
    return fail(codes::kInvalidArgument, "an approval needs an id and a tool call id");
  }
  if (approval.state != ApprovalState::kPending || approval.decision || approval.decided_at) {
    return fail(codes::kInvalidArgument,
                "approval " + approval.id + " must be created pending, without a decision");
  }
  KEEL_TRY(require_run(tx, approval.run_id));
  std::string request = KEEL_TRY(encode_json_column(approval.request, kMaxJsonBytes));
  approval.created_at = clock_.now_unix_ms();
  KEEL_TRY(tx.execute(
      "INSERT INTO approvals (" + std::string(kApprovalColumns) + ") VALUES (?, ?, ?, ?, NULL, ?, ?, NULL)",
      {approval.id, approval.run_id, approval.tool_call_id, request, to_string(ApprovalState::kPending),
       approval.created_at}));
  return approval;
}

Result<ApprovalRecord> InteractionRepository::get_approval(Transaction& tx, const std::string& approval_id) {
  auto row = KEEL_TRY(tx.query_one("SELECT " + std::string(kApprovalColumns) + " FROM approvals WHERE id = ?",
                                   {approval_id}));
  if (!row) return fail(codes::kApprovalNotFound, "no approval " + approval_id);
  return approval_from_row(*row);
}

Result<std::vector<ApprovalRecord>> InteractionRepository::pending_approvals_for_run(
    Transaction& tx, const std::string& run_id) {
  auto rows = KEEL_TRY(tx.query("SELECT " + std::string(kApprovalColumns) +
                                    " FROM approvals WHERE run_id = ? AND state = ? ORDER BY created_at, id",
                                {run_id, to_string(ApprovalState::kPending)}));
  return from_rows<ApprovalRecord>(rows, approval_from_row);
}

Result<ApprovalDecision> InteractionRepository::decide(Transaction& tx, const std::string& approval_id,
                                                       ApprovalAnswer decision) {
  ApprovalRecord approval = KEEL_TRY(get_approval(tx, approval_id));
  if (approval.state != ApprovalState::kPending) return ApprovalDecision{std::move(approval), true};
  std::string text = KEEL_TRY(encode_json_column(encode_approval_answer(decision), kMaxJsonBytes));
  const int64_t now = clock_.now_unix_ms();
  const int64_t changed = KEEL_TRY(tx.execute(
      "UPDATE approvals SET decision = ?, state = ?, decided_at = ? WHERE id = ? AND state = ?",
      {text, to_string(ApprovalState::kDecided), now, approval_id, to_string(ApprovalState::kPending)}));
  if (changed != 1)
    return fail(codes::kRevisionConflict, "approval " + approval_id + " changed while deciding it");
  approval.decision = std::move(decision);
  approval.state = ApprovalState::kDecided;
  approval.decided_at = now;
  return ApprovalDecision{std::move(approval), false};
}

// ---- interactions ----

Result<InteractionRecord> InteractionRepository::create_interaction(Transaction& tx,
                                                                    InteractionRecord interaction) {
  if (interaction.id.empty()) return fail(codes::kInvalidArgument, "an interaction needs an id");
  if (interaction.kind == InteractionKind::kTimer && !interaction.due_at) {
    return fail(codes::kInvalidArgument, "timer " + interaction.id + " needs due_at");
  }
  if (interaction.claim_state != ClaimState::kWaiting || interaction.response) {
    return fail(codes::kInvalidArgument,
                "interaction " + interaction.id + " must be created waiting, without a response");
  }
  KEEL_TRY(require_run(tx, interaction.run_id));
  std::string request = KEEL_TRY(encode_json_column(interaction.request, kMaxJsonBytes));
  const int64_t now = clock_.now_unix_ms();
  interaction.created_at = now;
  interaction.updated_at = now;
  KEEL_TRY(tx.execute("INSERT INTO interactions (" + std::string(kInteractionColumns) +
                          ") VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?)",
                      {interaction.id, interaction.run_id, to_string(interaction.kind), request,
                       to_string(ClaimState::kWaiting), interaction.due_at, now, now}));
  return interaction;
}

Result<InteractionRecord> InteractionRepository::get_interaction(Transaction& tx,
                                                                 const std::string& interaction_id) {
  auto row = KEEL_TRY(tx.query_one(
      "SELECT " + std::string(kInteractionColumns) + " FROM interactions WHERE id = ?", {interaction_id}));
  if (!row) return fail(codes::kInteractionNotFound, "no interaction " + interaction_id);
  return interaction_from_row(*row);
}

Result<InteractionAnswer> InteractionRepository::answer(Transaction& tx, const std::string& interaction_id,
                                                        nlohmann::json response) {
  InteractionRecord interaction = KEEL_TRY(get_interaction(tx, interaction_id));
  if (interaction.claim_state != ClaimState::kWaiting) return InteractionAnswer{std::move(interaction), true};
  std::string text = KEEL_TRY(encode_json_column(response, kMaxJsonBytes));
  const int64_t now = clock_.now_unix_ms();
  const int64_t changed = KEEL_TRY(tx.execute(
      "UPDATE interactions SET response = ?, claim_state = ?, updated_at = ? WHERE id = ? AND "
      "claim_state = ?",
      {text, to_string(ClaimState::kAnswered), now, interaction_id, to_string(ClaimState::kWaiting)}));
  if (changed != 1) {
    return fail(codes::kRevisionConflict, "interaction " + interaction_id + " changed while answering it");
  }
  interaction.response = std::move(response);
  interaction.claim_state = ClaimState::kAnswered;
  interaction.updated_at = now;
  return InteractionAnswer{std::move(interaction), false};
}

Result<InteractionRecord> InteractionRepository::claim(Transaction& tx, const std::string& interaction_id) {
  InteractionRecord interaction = KEEL_TRY(get_interaction(tx, interaction_id));
  if (interaction.claim_state == ClaimState::kWaiting) {
    return fail(codes::kInteractionNotAnswered,
                "interaction " + interaction_id + " has no response to claim yet");
  }
  if (interaction.claim_state == ClaimState::kClaimed) {
    return fail(codes::kInteractionAlreadyClaimed, "interaction " + interaction_id + " was already claimed");
  }
  const int64_t now = clock_.now_unix_ms();
  const int64_t changed = KEEL_TRY(
      tx.execute("UPDATE interactions SET claim_state = ?, updated_at = ? WHERE id = ? AND claim_state = ?",
                 {to_string(ClaimState::kClaimed), now, interaction_id, to_string(ClaimState::kAnswered)}));
  if (changed != 1) {
    return fail(codes::kInteractionAlreadyClaimed, "interaction " + interaction_id + " was already claimed");
  }
  interaction.claim_state = ClaimState::kClaimed;
  interaction.updated_at = now;
  return interaction;
}

Result<std::vector<InteractionRecord>> InteractionRepository::waiting_for_run(Transaction& tx,
                                                                              const std::string& run_id) {
  auto rows =
      KEEL_TRY(tx.query("SELECT " + std::string(kInteractionColumns) +
                            " FROM interactions WHERE run_id = ? AND claim_state = ? ORDER BY created_at, id",
                        {run_id, to_string(ClaimState::kWaiting)}));
  return from_rows<InteractionRecord>(rows, interaction_from_row);
}

Result<std::vector<InteractionRecord>> InteractionRepository::answered_for_run(Transaction& tx,
                                                                               const std::string& run_id) {
  auto rows =
      KEEL_TRY(tx.query("SELECT " + std::string(kInteractionColumns) +
                            " FROM interactions WHERE run_id = ? AND claim_state = ? ORDER BY created_at, id",
                        {run_id, to_string(ClaimState::kAnswered)}));
  return from_rows<InteractionRecord>(rows, interaction_from_row);
}

Result<std::vector<InteractionRecord>> InteractionRepository::due_timers(Transaction& tx,
                                                                         int64_t now_unix_ms) {
  auto rows = KEEL_TRY(tx.query(
      "SELECT " + std::string(kInteractionColumns) +
          " FROM interactions WHERE kind = ? AND claim_state = ? AND due_at <= ? ORDER BY due_at, id",
      {to_string(InteractionKind::kTimer), to_string(ClaimState::kWaiting), now_unix_ms}));
  return from_rows<InteractionRecord>(rows, interaction_from_row);
}

Result<std::vector<InteractionRecord>> InteractionRepository::waiting_timers(Transaction& tx) {
  auto rows =
      KEEL_TRY(tx.query("SELECT " + std::string(kInteractionColumns) +
                            " FROM interactions WHERE kind = ? AND claim_state = ? ORDER BY due_at, id",
                        {to_string(InteractionKind::kTimer), to_string(ClaimState::kWaiting)}));
  return from_rows<InteractionRecord>(rows, interaction_from_row);
}

}  // namespace keel
