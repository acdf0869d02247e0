// store/interaction_repository.h — approvals and interactions: the durable waits of a run.
//
// An approval (spec §2, §6.1) is written together with its tool_call node and Run.pending_tool, holds the
// full request shown to the user, and is decided exactly once: pending -> decided.
//
// An interaction (spec §5) is a question for the user (ask_user), an MCP elicitation, or a durable timer
// (chrome.alarms in the original). Its claim state moves waiting -> answered -> claimed: answer() stores
// the response, claim() hands the continuation to exactly one caller (recovery or the live waiter), so the
// trusted tool_result is appended once.
//
// Idempotency (spec §5.1): settling an already settled approval or interaction does not overwrite the
// first result. decide() and answer() then succeed with the stored record and `already_settled = true`;
// the caller compares the stored decision/response with its payload to ACK a duplicate or reject a
// different payload (invalid_command). claim() of a claimed interaction is an error
// (interaction.already_claimed): exactly one caller may continue.
//
// Every mutation runs inside the caller's write transaction; the run's revision is the caller's to bump
// (RunRepository::transition) in the same transaction. Errors: approval.not_found, interaction.not_found,
// interaction.not_answered, interaction.already_claimed, run.not_found, invalid_argument,
// store.payload_too_large, store.decode_failed (a damaged row: a state, kind or decision no keel writes),
// store.constraint (a duplicate id), and any
// store error.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "keel/clock.h"
#include "keel/error.h"
#include "keel/store.h"
#include "store/records.h"

namespace keel {

// Error codes of this repository that keel/error_codes.h does not list yet.
struct ApprovalDecision {
  ApprovalRecord approval;       // as stored after the call
  bool already_settled = false;  // true: it was decided before; `approval.decision` is the first decision
};

struct InteractionAnswer {
  InteractionRecord interaction;  // as stored after the call
  bool already_settled = false;   // true: it was answered before; `interaction.response` is the first one
};

class InteractionRepository {
 public:
  // Largest request, decision or response, in bytes of canonical JSON.
  static constexpr size_t kMaxJsonBytes = 4 * 1024 * 1024;

  // `clock` must outlive the repository.
  explicit InteractionRepository(const Clock& clock) : clock_(clock) {}

  // ---- approvals ----

  // Inserts a pending approval with its full request for an existing run; the repository sets
  // created_at. A record that is not pending or already carries a decision is invalid_argument.
  Result<ApprovalRecord> create_approval(Transaction& tx, ApprovalRecord approval);
  // approval.not_found when there is none.
  Result<ApprovalRecord> get_approval(Transaction& tx, const std::string& approval_id);
  // The run's pending approvals, oldest first.
  Result<std::vector<ApprovalRecord>> pending_approvals_for_run(Transaction& tx, const std::string& run_id);
  // pending -> decided with `decision`. Already decided: the stored record with already_settled = true,
  // unchanged.
  Result<ApprovalDecision> decide(Transaction& tx, const std::string& approval_id, ApprovalAnswer decision);

  // ---- interactions ----

  // Inserts a waiting interaction for an existing run; the repository sets both timestamps. A timer needs
  // due_at. A record that is not waiting or already carries
  // a response is invalid_argument.
  Result<InteractionRecord> create_interaction(Transaction& tx, InteractionRecord interaction);
  // interaction.not_found when there is none.
  Result<InteractionRecord> get_interaction(Transaction& tx, const std::string& interaction_id);
  // waiting -> answered with `response`. Already answered or claimed: the stored record with
  // already_settled = true, unchanged.
  Result<InteractionAnswer> answer(Transaction& tx, const std::string& interaction_id,
                                   nlohmann::json response);
  // answered -> claimed, exactly once. Waiting: interaction.not_answered; claimed:
  // interaction.already_claimed.
  Result<InteractionRecord> claim(Transaction& tx, const std::string& interaction_id);
  // The run's waiting interactions, oldest first.
  Result<std::vector<InteractionRecord>> waiting_for_run(Transaction& tx, const std::string& run_id);
  // The run's answered interactions that nobody has claimed yet, oldest first (recovery).
  Result<std::vector<InteractionRecord>> answered_for_run(Transaction& tx, const std::string& run_id);
  // Waiting timers with due_at <= now_unix_ms, earliest due first.
  Result<std::vector<InteractionRecord>> due_timers(Transaction& tx, int64_t now_unix_ms);
  // Every waiting timer, earliest due first (to re-arm them after a restart).
  Result<std::vector<InteractionRecord>> waiting_timers(Transaction& tx);

 private:
  const Clock& clock_;
};

}  // namespace keel
