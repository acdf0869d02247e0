// tools/builtin/wait_tool.cc — the wait tool: one timer per second on the injected Scheduler.
#include "tools/builtin/wait_tool.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "keel/error_codes.h"
#include "tools/builtin/tool_support.h"
#include "util/thread_annotations.h"

namespace keel::builtin {

namespace {

constexpr int64_t kTickMs = 1000;

// "10", "2.5", "0.125": seconds as a person writes them.
std::string seconds_text(int64_t ms) {
  if (ms % 1000 == 0) return std::to_string(ms / 1000);
  std::string text = std::to_string(ms / 1000) + "." + std::to_string(1000 + ms % 1000).substr(1);
  while (text.back() == '0') text.pop_back();
  return text;
}

ToolSpec wait_spec() {
  ToolSpec spec;
  spec.name = "wait";
  spec.label = "Wait";
  spec.description =
      "Pause for a number of seconds (0 to 3600) before continuing, for example to give a build, a server "
      "or a page time to finish. Say why in reason.";
  spec.parameters = {
      {"type", "object"},
      {"properties",
       {{"seconds",
         {{"type", "number"},
          {"minimum", 0},
          {"maximum", WaitTool::kMaxSeconds},
          {"description", "How long to wait."}}},
        {"reason", {{"type", "string"}, {"description", "What the wait is for, shown to the user."}}}}},
      {"required", {"seconds"}},
      {"additionalProperties", false},
  };
  spec.effects = ToolEffects::kRead;
  return spec;
}

ToolResult waited(int64_t total_ms, const std::string& reason) {
  return text_result("Waited " + seconds_text(total_ms) + " s.",
                     {{"seconds", static_cast<double>(total_ms) / 1000.0}, {"reason", reason}});
}

// One call in flight. Shared by its timer callbacks and its cancellation callback; whichever finishes the
// call first takes `done` under the mutex (see the header for the races this settles).
class WaitCall : public std::enable_shared_from_this<WaitCall> {
 public:
  WaitCall(Scheduler& scheduler, int64_t total_ms, std::string reason, ToolCallContext context,
           std::function<void(Result<ToolResult>)> done)
      : scheduler_(scheduler),
        total_ms_(total_ms),
        reason_(std::move(reason)),
        cancel_token_(context.cancel),
        progress_(std::move(context.progress)),
        done_(std::move(done)) {}

  void start() {
    {
      MutexLock lock(mu_);
      schedule_next_tick();
    }
    // May run on_cancel() right here when the token is already cancelled.
    CancellationRegistration registration =
        cancel_token_.on_cancel([self = shared_from_this()] { self->on_cancel(); });
    MutexLock lock(mu_);
    // When the call already finished, `registration` is dropped on return, unregistering the callback.
    if (!finished_) registration_ = std::move(registration);
  }

 private:
  // The new timer cannot fire before `pending_` holds its handle: its tick needs the lock.
  void schedule_next_tick() REQUIRES(mu_) {
    next_step_ms_ = std::min(kTickMs, total_ms_ - elapsed_ms_);
    pending_ = scheduler_.schedule_after(std::chrono::milliseconds(next_step_ms_),
                                         [self = shared_from_this()] { self->tick(); });
  }

  void tick() EXCLUDES(mu_) {
    std::unique_ptr<ScheduledTask> fired;  // this tick's own handle, released when the callback ends
    CancellationRegistration registration;
    std::function<void(Result<ToolResult>)> finish;
    std::optional<ToolProgress> report;
    {
      MutexLock lock(mu_);
      if (finished_) return;  // cancelled while this timer was firing
      fired = std::move(pending_);
      elapsed_ms_ += next_step_ms_;
      if (elapsed_ms_ >= total_ms_) {
        finished_ = true;
        registration = std::move(registration_);
        if (reporting_) {
          deferred_ = completed();
        } else {
          finish = std::move(done_);
        }
      } else {
        schedule_next_tick();
        // A report still running from the previous tick (a slow progress callback) makes this one redundant.
        if (!reporting_) {
          reporting_ = true;
          // Every tick but the last ends on a whole second.
          report =
              ToolProgress{"waited " + seconds_text(elapsed_ms_) + " of " + seconds_text(total_ms_) + " s",
                           {{"waitedSeconds", elapsed_ms_ / 1000},
                            {"totalSeconds", static_cast<double>(total_ms_) / 1000.0},
                            {"reason", reason_}}};
        }
      }
    }
    // Unregister before done, so the cancel callback (and the state it holds) does not outlive the call.
    registration = CancellationRegistration();
    if (finish) {
      finish(completed());
      return;
    }
    if (!report) return;
    progress_(std::move(*report));
    Result<ToolResult> result = fail(codes::kInternal, "unset");
    {
      MutexLock lock(mu_);
      reporting_ = false;
      if (deferred_) {
        result = std::move(*deferred_);
        deferred_.reset();
        finish = std::move(done_);
      }
    }
    if (finish) finish(std::move(result));
  }

  void on_cancel() EXCLUDES(mu_) {
    std::unique_ptr<ScheduledTask> timer;
    std::function<void(Result<ToolResult>)> finish;
    {
      MutexLock lock(mu_);
      if (finished_) return;
      finished_ = true;
      timer = std::move(pending_);
      if (reporting_) {
        deferred_ = fail(cancelled_error(cancel_token_));  // the reporting tick delivers it right after
      } else {
        finish = std::move(done_);
      }
    }
    // Outside the lock: if that timer is firing on another thread, its tick needs the lock to see
    // `finished_` and return, and this destructor waits for it.
    timer.reset();
    if (finish) finish(fail(cancelled_error(cancel_token_)));
  }

  Result<ToolResult> completed() const { return waited(total_ms_, reason_); }

  Scheduler& scheduler_;
  const int64_t total_ms_;
  const std::string reason_;
  const CancellationToken cancel_token_;
  const std::function<void(ToolProgress)> progress_;

  Mutex mu_;
  bool finished_ GUARDED_BY(mu_) = false;   // `done_` has been claimed (or parked in deferred_)
  bool reporting_ GUARDED_BY(mu_) = false;  // a progress report runs outside the lock; done must wait for it
  std::optional<Result<ToolResult>> deferred_ GUARDED_BY(mu_);  // the outcome reached while reporting_
  int64_t elapsed_ms_ GUARDED_BY(mu_) = 0;
  int64_t next_step_ms_ GUARDED_BY(mu_) = 0;
  std::function<void(Result<ToolResult>)> done_ GUARDED_BY(mu_);
  std::unique_ptr<ScheduledTask> pending_ GUARDED_BY(mu_);  // the next timer
  CancellationRegistration registration_ GUARDED_BY(mu_);
};

}  // namespace

WaitTool::WaitTool(Scheduler& scheduler) : scheduler_(scheduler), spec_(wait_spec()) {}

std::optional<std::chrono::milliseconds> WaitTool::time_budget(const nlohmann::json& params) const {
  const auto seconds = params.find("seconds");
  double wait = kMaxSeconds;  // arguments the call will refuse still get a budget that fits any wait
  if (seconds != params.end() && seconds->is_number() && seconds->get<double>() >= 0 &&
      seconds->get<double>() <= kMaxSeconds) {
    wait = seconds->get<double>();
  }
  return std::chrono::milliseconds(std::llround(wait * 1000)) + kBudgetMargin;
}

void WaitTool::execute(ToolCallContext context, nlohmann::json params,
                       std::function<void(Result<ToolResult>)> done) {
  if (context.cancel.is_cancelled()) {
    done(fail(cancelled_error(context.cancel)));
    return;
  }
  const auto seconds = params.find("seconds");
  if (seconds == params.end() || !seconds->is_number() || !(seconds->get<double>() >= 0) ||
      seconds->get<double>() > kMaxSeconds) {
    done(fail(codes::kInvalidArgument, "/seconds: must be a number from 0 to 3600"));
    return;
  }
  const auto total_ms = static_cast<int64_t>(std::llround(seconds->get<double>() * 1000));
  std::string reason;
  if (const auto it = params.find("reason"); it != params.end() && it->is_string()) {
    reason = it->get<std::string>();
  }
  if (total_ms == 0) {
    done(waited(0, reason));  // nothing to wait for: no timer
    return;
  }
  std::make_shared<WaitCall>(scheduler_, total_ms, std::move(reason), std::move(context), std::move(done))
      ->start();
}

}  // namespace keel::builtin
