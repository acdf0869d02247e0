// store/commands.h — the command units of spec §5.1 that live at the store layer.
//
// Each command is one run_command() unit (store/receipts.h): its domain records, the thread's revision
// and the receipt commit in one transaction, and a duplicate submission replays the first outcome.
// The commands are the ops whose protocol::OpSpec says store_command; their params are the typed structs of
// protocol/store_params.h (protocol names; the transport strips clientId/submissionId), and their results:
//   thread.create        -> {threadId, revision}
//   thread.delete        -> {threadId, revision}
//   thread.fork          -> {threadId, parentThreadId, forkNodeId, revision}
//   thread.selectBranch  -> {threadId, leafNodeId, revision}
//   thread.setModel      -> {threadId, model, revision}
//   thread.setMcpServers -> {threadId, mcpServers, revision}
//   turn.enqueue         -> {threadId, itemId, position, queueLength, revision}
//   queue.update         -> {threadId, itemId, itemRevision, revision} (expectedRevision is the item's)
//   queue.remove         -> {threadId, itemId, queueLength, revision}
// A malformed payload is rejected with invalid_argument (and, being deterministic, recorded).
// Thread-safe as far as the Store is: each call runs its own transaction.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "keel/clock.h"
#include "keel/error.h"
#include "keel/ids.h"
#include "keel/store.h"
#include "protocol/store_params.h"
#include "store/receipts.h"

namespace keel {

struct CommandRequest {
  std::string client_id;
  std::string submission_id;
  protocol::OpKind kind = protocol::OpKind::kThreadCreate;
  // The op's params as the client sent them: the receipt's fingerprint is taken of them, and they are
  // decoded (protocol::decode_store_command) inside the command, so a malformed one is a recorded rejection.
  nlohmann::json payload = nlohmann::json::object();
};

class StoreCommands {
 public:
  // All three must outlive this object.
  StoreCommands(Store& store, const Clock& clock, IdSource& ids) : store_(store), clock_(clock), ids_(ids) {}

  // Runs the command. Returns its (possibly replayed) outcome; fails only with
  // command.submission_conflict, invalid_argument for a bad client/submission id or a kind that is not a
  // store command, and transient store errors (nothing recorded; the same submission may be retried).
  Result<CommandResult> execute(const CommandRequest& request);
  // Applies the command's domain change inside the caller's transaction, without a receipt: for a caller
  // that records the receipt itself under another command type (the engine's turn.input enqueues this
  // way). Returns the ACK's result; errors as execute()'s domain rejections.
  Result<nlohmann::json> apply(Transaction& tx, const protocol::StoreCommand& command);

 private:
  Store& store_;
  const Clock& clock_;
  IdSource& ids_;
};

}  // namespace keel
