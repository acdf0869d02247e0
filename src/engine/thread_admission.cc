#include "engine/thread_admission.h"

#include "engine/engine_errors.h"
#include "protocol/ops.h"

namespace keel {

bool allowed_while_waiting(std::string_view method) {
  const protocol::OpSpec* spec = protocol::find_op(method);
  return spec != nullptr && spec->allowed_while_waiting;  // the op table's column (protocol/ops.h)
}

Result<void> thread_accepts(const ThreadActivity& activity, std::string_view method) {
  if (activity.stranded && method != "turn.interrupt") return fail(*activity.stranded);
  if (activity.state == ThreadActivity::State::kWaiting && !allowed_while_waiting(method)) {
    return fail(codes::kThreadWaiting,
                "the thread waits for " +
                    std::string(activity.wait_kind == WaitKind::kApproval ? "an approval" : "an answer") +
                    " (" + activity.wait_id +
                    "); until it continues only enqueue, interrupt and the response are accepted");
  }
  if (activity.state != ThreadActivity::State::kIdle &&
      (method == "thread.delete" || method == "thread.selectBranch")) {
    return fail(codes::kThreadBusy, "a turn is running on this thread; interrupt it first");
  }
  return {};
}

ThreadActivity activity_after_recovery(const RunRecord& latest) {
  ThreadActivity activity;
  switch (latest.state) {
    case RunState::kWaitingApproval:
    case RunState::kWaitingInteraction: {
      // A waiting run without a wait in its pending tool (a damaged one) waits on nothing: restoring it
      // continues it at once.
      const std::optional<PendingTool>& pending = latest.pending_tool;
      activity.state = ThreadActivity::State::kWaiting;
      activity.wait_kind =
          pending && pending->waits_for(WaitKind::kApproval) ? WaitKind::kApproval : WaitKind::kInteraction;
      activity.wait_id = pending && pending->wait ? pending->wait->id : std::string();
      break;
    }
    case RunState::kQueued:
    case RunState::kStreamingModel:
    case RunState::kExecutingTool:
      activity.state = ThreadActivity::State::kRunning;
      break;
    default:
      break;
  }
  return activity;
}

}  // namespace keel
