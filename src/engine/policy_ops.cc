#include "engine/policy_ops.h"

#include "store/receipts.h"

namespace keel {

using nlohmann::json;

void PolicyOps::handle(const std::string& thread_id, const Op& op) {
  if (op.method == "policy.read") return c_.replies.ack(op, thread_id, c_.gatekeeper.describe());
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return c_.replies.reject(op, thread_id, context.error());
  std::optional<json> change;
  auto outcome = run_command(c_.store, c_.clock, *context, [&](Transaction& tx) -> Result<json> {
    change = KEEL_TRY(c_.gatekeeper.write_change(tx, op.method, op.params));
    return *change;
  });
  if (!outcome) return c_.replies.reject(op, thread_id, outcome.error());
  if (!outcome->outcome.accepted) return c_.replies.reject(op, thread_id, *outcome->outcome.rejection);
  if (!outcome->replayed && change) c_.gatekeeper.install(*change);
  c_.replies.ack(op, thread_id, outcome->outcome.result, outcome->replayed);
  if (!outcome->replayed) c_.replies.publish("policy.updated", thread_id, outcome->outcome.result);
}

}  // namespace keel
