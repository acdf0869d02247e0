// engine/tool_workers.h — the threads tool calls run on, so that no tool ever runs on an engine I/O thread.
//
// The engine's io_context threads run every thread's strand; a tool that computes for long (or never
// returns: a pathological regex, a blocking call, a bug) would hold one of them, and with it every other
// thread's turn, the admissions and shutdown. So the turn runner posts AgentTool::execute here.
//
// Guarantees:
//   - At most `max_threads` jobs run at once; threads are started on demand and idle ones wait for work.
//     A job posted while all are busy waits in FIFO order for the first free thread.
//   - abandon(): a job that ran past its time budget (the engine has already answered its call with a
//     timeout and fired its cancellation) stops counting against max_threads, so stuck tools cannot starve
//     the calls that follow; its thread ends when the job returns. At most `max_threads` jobs are abandoned
//     at once; past that, an abandoned job keeps its slot (the pool degrades instead of growing without
//     bound).
//   - shutdown(grace): queued jobs that have not started are dropped (their turns have ended); running
//     jobs get `grace` to return; threads still running after it are left detached, holding only what
//     their job owns, and the call returns. A tool that ignores cancellation therefore cannot hang
//     shutdown; it keeps running until the process exits. A job must not use engine objects other than
//     through what it owns (shared_ptr) — the engine's call gate turns a late `done` into a no-op.
//   - Thread-safe; the destructor calls shutdown(0) if shutdown() was not called.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

namespace keel {

class ToolWorkers {
 public:
  // Names one posted job, for abandon().
  class Job;

  explicit ToolWorkers(size_t max_threads);
  ~ToolWorkers();
  ToolWorkers(const ToolWorkers&) = delete;
  ToolWorkers& operator=(const ToolWorkers&) = delete;

  // Runs `work` on a worker thread. After shutdown() the work is dropped (destroyed unrun).
  std::shared_ptr<Job> post(std::function<void()> work);
  // The job's call was given up: see above. No effect on a job that already returned.
  void abandon(const std::shared_ptr<Job>& job);
  void shutdown(std::chrono::milliseconds grace);

  // For tests and diagnostics.
  size_t threads() const;    // started and not yet ended
  size_t abandoned() const;  // abandoned jobs still running

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace keel
