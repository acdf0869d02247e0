#include "store/receipts.h"

#include "keel/error_codes.h"
#include "store/json_column.h"
#include "util/sha256.h"

namespace keel {
namespace {

Result<void> check_id(const std::string& value, std::string_view what) {
  if (value.empty()) return fail(codes::kInvalidArgument, std::string(what) + " is empty");
  if (value.size() > kMaxCommandIdBytes) {
    return fail(codes::kInvalidArgument,
                std::string(what) + " is longer than " + std::to_string(kMaxCommandIdBytes) + " bytes");
  }
  return {};
}

}  // namespace

Result<CommandTransactionContext> make_command_context(std::string client_id, std::string submission_id,
                                                       std::string command_type, nlohmann::json payload) {
  KEEL_TRY(check_id(client_id, "clientId"));
  KEEL_TRY(check_id(submission_id, "submissionId"));
  KEEL_TRY(check_id(command_type, "command type"));
  if (payload.is_object()) {
    payload.erase("clientId");
    payload.erase("submissionId");
  }
  std::string fingerprint = KEEL_TRY(json_fingerprint(payload));
  return CommandTransactionContext{std::move(client_id), std::move(submission_id), std::move(command_type),
                                   std::move(fingerprint)};
}

nlohmann::json CommandOutcome::to_json() const {
  if (accepted) return {{"accepted", true}, {"result", result}};
  nlohmann::json error = {{"code", rejection ? rejection->code() : codes::kInternal},
                          {"message", rejection ? rejection->message() : ""}};
  return {{"accepted", false}, {"error", error}};
}

Result<CommandOutcome> CommandOutcome::from_json(const nlohmann::json& value) {
  if (!value.is_object() || !value.contains("accepted") || !value["accepted"].is_boolean()) {
    return fail(codes::kStoreDecode, "a receipt outcome lacks 'accepted'");
  }
  if (value["accepted"].get<bool>()) {
    return CommandOutcome::accept(value.value("result", nlohmann::json::object()));
  }
  const nlohmann::json& error = value.value("error", nlohmann::json::object());
  if (!error.is_object() || !error.contains("code") || !error["code"].is_string()) {
    return fail(codes::kStoreDecode, "a receipt's rejection lacks its code");
  }
  return CommandOutcome::reject(Error(error["code"].get<std::string>(), error.value("message", "")));
}

Result<std::optional<CommandOutcome>> ReceiptRepository::check(Transaction& tx,
                                                               const CommandTransactionContext& context) {
  auto row = KEEL_TRY(tx.query_one(
      "SELECT command_type, fingerprint, outcome FROM receipts WHERE client_id = ? AND submission_id = ?",
      {context.client_id, context.submission_id}));
  if (!row) return std::optional<CommandOutcome>();
  if (row->text(0) != context.command_type || row->text(1) != context.fingerprint) {
    return fail(
        codes::kSubmissionConflict,
        "submission " + context.submission_id + " of client " + context.client_id + " was already used for " +
            (row->text(0) != context.command_type ? "a " + row->text(0) + " command"
                                                  : "a different " + context.command_type + " payload") +
            "; use a new submission id for a new command");
  }
  nlohmann::json outcome = KEEL_TRY(decode_json_column(row->text(2), "receipt outcome"));
  return std::optional<CommandOutcome>(KEEL_TRY(CommandOutcome::from_json(outcome)));
}

Result<void> ReceiptRepository::record(Transaction& tx, const CommandTransactionContext& context,
                                       const CommandOutcome& outcome) {
  KEEL_TRY(tx.fail_point("receipts.insert"));
  std::string text = KEEL_TRY(encode_json_column(outcome.to_json(), 1024 * 1024));
  KEEL_TRY(tx.execute(
      "INSERT INTO receipts (client_id, submission_id, command_type, fingerprint, outcome, created_at) "
      "VALUES (?, ?, ?, ?, ?, ?)",
      {context.client_id, context.submission_id, context.command_type, context.fingerprint, text,
       clock_.now_unix_ms()}));
  return {};
}

bool is_transient(const Error& error) {
  if (error.retryable()) return true;
  const std::string& code = error.code();
  return code.starts_with("store.") || code == codes::kFailPoint || code == codes::kInternal ||
         code == codes::kCancelled;
}

Result<CommandResult> run_command(Store& store, const Clock& clock, const CommandTransactionContext& context,
                                  const CommandApply& apply) {
  ReceiptRepository receipts(clock);
  {
    auto tx = KEEL_TRY(store.begin(TxMode::kWrite));
    if (auto existing = KEEL_TRY(receipts.check(*tx, context))) {
      tx->rollback();
      return CommandResult{std::move(*existing), true};
    }
    Result<nlohmann::json> applied = apply(*tx);
    if (applied) {
      CommandOutcome outcome = CommandOutcome::accept(std::move(applied).value());
      KEEL_TRY(receipts.record(*tx, context, outcome));
      KEEL_TRY(tx->commit());
      return CommandResult{std::move(outcome), false};
    }
    tx->rollback();
    if (is_transient(applied.error())) return fail(applied.error());
    // A deterministic rejection: undo whatever `apply` wrote, then record the rejection on its own below.
    Error rejection = applied.error();
    tx.reset();
    auto reject_tx = KEEL_TRY(store.begin(TxMode::kWrite));
    if (auto existing = KEEL_TRY(receipts.check(*reject_tx, context))) {
      reject_tx->rollback();
      return CommandResult{std::move(*existing), true};
    }
    CommandOutcome outcome = CommandOutcome::reject(std::move(rejection));
    KEEL_TRY(receipts.record(*reject_tx, context, outcome));
    KEEL_TRY(reject_tx->commit());
    return CommandResult{std::move(outcome), false};
  }
}

}  // namespace keel
