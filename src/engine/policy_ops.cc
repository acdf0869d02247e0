#include "engine/policy_ops.h"

#include "store/receipts.h"

namespace keel {

using nlohmann::json;

void PolicyOps::read(const std::string& thread_id, const Op& op) {
  c_.replies.ack(op, thread_id, c_.gatekeeper.describe());
}

void PolicyOps::change(const std::string& thread_id, const Op& op,
                       const protocol::PolicyChangeParams& params) {
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return c_.replies.reject(op, thread_id, context.error());
  std::optional<json> written;
  auto outcome = run_command(c_.store, c_.clock, *context, [&](Transaction& tx) -> Result<json> {
    written = KEEL_TRY(c_.gatekeeper.write_change(tx, op.method, params.change));
    return *written;
  });
  if (!outcome) return c_.replies.reject(op, thread_id, outcome.error());
  if (!outcome->outcome.accepted) return c_.replies.reject(op, thread_id, *outcome->outcome.rejection);
  if (!outcome->replayed && written) c_.gatekeeper.install(*written);
  c_.replies.ack(op, thread_id, outcome->outcome.result, outcome->replayed);
  if (!outcome->replayed)
    c_.replies.publish_event(thread_id, events::policy_updated(outcome->outcome.result));
}

}  // namespace keel
