// engine/thread_admission.h — which ops a thread accepts, given what it does: the one rule an engine's
// thread actor applies before any op's handler runs, and that `keel threads` applies to a store no engine
// runs on (cli/threads_command.cc), so the two cannot drift.
//
// What the thread does comes from its actor (ThreadActor::activity()) in a running engine, or, on a store
// no engine runs on, from its latest run as the next engine's recovery will take it up
// (activity_after_recovery(): the same function recovery branches on).
//
// Pure functions; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "keel/error.h"
#include "store/records.h"

namespace keel {

struct ThreadActivity {
  enum class State {
    kIdle,     // no turn
    kRunning,  // a turn runs (or its runner is about to continue it)
    kWaiting,  // a turn waits durably for a person (spec §5); no runner is alive
  };
  State state = State::kIdle;
  WaitKind wait_kind = WaitKind::kApproval;  // when kWaiting
  std::string wait_id;                       // the approval's or the interaction's id, when kWaiting
  // The thread refuses new work with this error (turn.unpersisted; ThreadActor::mark_stranded).
  std::optional<Error> stranded;
};

// Methods a thread accepts while a wait holds it: what settles or withdraws the wait, and what changes
// only the queue or the policy.
bool allowed_while_waiting(std::string_view method);

// Whether the thread takes `method` now. Errors: the stranded error (for anything but turn.interrupt),
// thread.waiting (a method not allowed while waiting), thread.busy (thread.delete and thread.selectBranch
// under a turn: they would pull its history away). An op's own handler may refuse it later for its own
// reasons (turn.busy for a second turn, say).
Result<void> thread_accepts(const ThreadActivity& activity, std::string_view method);

// What a thread does once an engine's recovery took up `latest`, its latest run (spec §5): a run left
// waiting for a person holds the thread again; a run left queued, streaming or executing runs again
// (recovery may still pause it as uncertain, or fail it); any other run leaves the thread idle.
ThreadActivity activity_after_recovery(const RunRecord& latest);

}  // namespace keel
