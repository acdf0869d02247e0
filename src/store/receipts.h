// store/receipts.h — command receipts: exactly-once effects for client commands (spec §5.1).
//
// A client names every command with clientId + submissionId. The receipt of a submission keeps the command
// type, the request fingerprint (SHA-256 of the canonical payload, transport identity excluded) and the
// outcome — the ACK or the coded rejection — but never the payload itself.
//
// run_command() is the atomic unit: in ONE write transaction it checks the receipt, applies the command's
// domain changes (records, revisions, audit nodes) and writes the receipt. If anything fails — including
// writing the receipt — all of it rolls back, so a receipt exists exactly when its effects do. Then:
//   - the same submission again (same type and fingerprint) replays the stored outcome without applying
//     anything (an RPC that timed out is reconciled, never blindly re-applied);
//   - the same submission id with a different payload or type is refused: command.submission_conflict;
//   - a deterministic domain rejection (not retryable, e.g. queue.full) is itself recorded as the outcome,
//     so a retry can never turn into a conflicting answer; retryable and store failures record nothing,
//     and the client may retry the same submission.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "keel/clock.h"
#include "keel/error.h"
#include "keel/store.h"

namespace keel {

// Longest clientId / submissionId / command type accepted, in bytes.
inline constexpr size_t kMaxCommandIdBytes = 256;

// The internal identity of one command transaction. Not part of the protocol; holds no runtime objects.
struct CommandTransactionContext {
  std::string client_id;
  std::string submission_id;
  std::string command_type;
  std::string fingerprint;  // lowercase hex SHA-256 of the canonical payload
};

// Builds the context, fingerprinting `payload` with its "clientId" and "submissionId" members removed.
// Errors: invalid_argument (empty or over-long ids), json.* (payload not encodable).
Result<CommandTransactionContext> make_command_context(std::string client_id, std::string submission_id,
                                                       std::string command_type, nlohmann::json payload);

// What a command came to: its ACK result, or the coded rejection it was refused with.
struct CommandOutcome {
  bool accepted = true;
  nlohmann::json result = nlohmann::json::object();  // when accepted
  std::optional<Error> rejection;                    // when not accepted

  static CommandOutcome accept(nlohmann::json result) { return CommandOutcome{true, std::move(result), {}}; }
  static CommandOutcome reject(Error error) {
    return CommandOutcome{false, nlohmann::json::object(), std::move(error)};
  }
  nlohmann::json to_json() const;
  static Result<CommandOutcome> from_json(const nlohmann::json& value);
};

struct CommandResult {
  CommandOutcome outcome;
  bool replayed = false;  // true when the outcome came from an existing receipt
};

class ReceiptRepository {
 public:
  explicit ReceiptRepository(const Clock& clock) : clock_(clock) {}
  // nullopt for a new submission; the stored outcome for a duplicate; command.submission_conflict when the
  // submission id was used with another type or payload.
  Result<std::optional<CommandOutcome>> check(Transaction& tx, const CommandTransactionContext& context);
  // Writes the receipt. Hits the fail point "receipts.insert" first.
  Result<void> record(Transaction& tx, const CommandTransactionContext& context,
                      const CommandOutcome& outcome);

 private:
  const Clock& clock_;
};

// True for errors that say nothing about the command itself (store trouble, fail points, retryable
// conditions): run_command records no receipt for them.
bool is_transient(const Error& error);

// Runs `apply` as one command unit (see the file comment). `apply` returns the ACK's result, or an Error:
// a transient one aborts with nothing recorded; any other is recorded as the command's rejection.
// Errors returned by run_command itself: command.submission_conflict and transient errors.
using CommandApply = std::function<Result<nlohmann::json>(Transaction&)>;
Result<CommandResult> run_command(Store& store, const Clock& clock, const CommandTransactionContext& context,
                                  const CommandApply& apply);

}  // namespace keel
