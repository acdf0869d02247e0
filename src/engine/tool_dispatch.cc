// engine/tool_dispatch.cc — see tool_dispatch.h.
#include "engine/tool_dispatch.h"

#include <exception>
#include <string>
#include <utility>

#include "engine/engine_errors.h"
#include "util/thread_annotations.h"

namespace keel {

namespace {

// Seconds as a person reads them ("600", "1.5").
std::string seconds_text(std::chrono::milliseconds budget) {
  const auto ms = budget.count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000);
  return std::to_string(ms / 1000) + "." + std::to_string(1000 + ms % 1000).substr(1);
}

// Where a call's reports go until its handle closes it. Shared by the job, the tool's callbacks, the
// budget timer and the handle.
class CallPort {
 public:
  explicit CallPort(ToolCallSinks sinks) : sinks_(std::move(sinks)) {}

  void progress(ToolProgress report) {
    MutexLock lock(mu_);
    if (!closed_ && !finished_) sinks_.progress(std::move(report));
  }
  // The first outcome wins; true when this one did. `from_tool`: the tool's (not the budget's).
  bool finish(Result<ToolResult> outcome, bool from_tool = true) {
    MutexLock lock(mu_);
    if (closed_ || finished_) return false;
    finished_ = true;
    answered_by_tool_ = from_tool;
    sinks_.done(std::move(outcome));
    return true;
  }
  // Closes the port; whether the tool itself delivered the call's outcome.
  bool close() {
    MutexLock lock(mu_);
    closed_ = true;
    sinks_ = {};  // what the sinks hold (the runner's inbox) is released now, not when the tool returns
    return answered_by_tool_;
  }

 private:
  Mutex mu_;
  ToolCallSinks sinks_ GUARDED_BY(mu_);
  bool finished_ GUARDED_BY(mu_) = false;
  bool answered_by_tool_ GUARDED_BY(mu_) = false;
  bool closed_ GUARDED_BY(mu_) = false;
};

class RunningCall final : public ToolCallHandle {
 public:
  RunningCall(ToolWorkers& workers, std::shared_ptr<CallPort> port)
      : workers_(workers), port_(std::move(port)) {}
  ~RunningCall() override {
    const bool answered = port_->close();
    timer_.reset();  // waits for a budget callback that is running
    turn_cancel_ = CancellationRegistration();
    // No outcome of its own: the turn has moved on (interrupt, timeout, shutdown) while the tool may still
    // run, so its worker no longer counts against the pool (ToolWorkers::abandon; no effect once it
    // returned).
    if (!answered) workers_.abandon(job_);
  }

  ToolWorkers& workers_;
  std::shared_ptr<CallPort> port_;
  std::shared_ptr<ToolWorkers::Job> job_;
  std::unique_ptr<ScheduledTask> timer_;
  CancellationRegistration turn_cancel_;
};

}  // namespace

std::unique_ptr<ToolCallHandle> dispatch_tool_call(ToolWorkers& workers, Scheduler& timers,
                                                   std::shared_ptr<AgentTool> tool, ToolCallContext context,
                                                   nlohmann::json arguments, std::chrono::milliseconds budget,
                                                   ToolCallSinks sinks) {
  auto port = std::make_shared<CallPort>(std::move(sinks));
  auto handle = std::make_unique<RunningCall>(workers, port);
  // The call's own cancellation: the turn's, or its budget running out.
  CancellationSource call_cancel;
  handle->turn_cancel_ = context.cancel.on_cancel(
      [call_cancel, turn = context.cancel]() mutable { call_cancel.cancel(turn.reason()); });
  context.cancel = call_cancel.token();
  context.progress = [port](ToolProgress report) { port->progress(std::move(report)); };
  handle->job_ = workers.post([tool = std::move(tool), context = std::move(context),
                               arguments = std::move(arguments), port]() mutable {
    try {
      tool->execute(std::move(context), std::move(arguments),
                    [port](Result<ToolResult> outcome) { port->finish(std::move(outcome)); });
    } catch (const std::exception& e) {
      port->finish(fail(codes::kToolFailed, std::string("the tool threw: ") + e.what()));
    } catch (...) {
      port->finish(fail(codes::kToolFailed, "the tool threw"));
    }
  });
  handle->timer_ = timers.schedule_after(budget, [port, call_cancel, budget]() mutable {
    const bool first = port->finish(
        fail(codes::kToolTimedOut, "the call did not finish within its time budget of " +
                                       seconds_text(budget) + " s; it was cancelled and may have partly run"),
        /*from_tool=*/false);
    if (first) call_cancel.cancel("the call ran past its time budget");
  });
  return handle;
}

}  // namespace keel
