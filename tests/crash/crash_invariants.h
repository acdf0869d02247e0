// tests/crash/crash_invariants.h — what must hold after the crash agent finished, however often it died.
//
// check_crash_invariants() reads the agent's directory (store, effects, answers; crash_scenario.h) once no
// agent runs on it, and returns one line per violation (empty: all hold):
//   - every scenario command was answered, and no answered ACK was lost: the thread exists, each ACKed
//     turn input is on its path exactly once, each ACKed steer exactly once, in admission order, inside
//     the turn it steered;
//   - no never-retry or inspect-first call executed more than once (effects.log), no never-retry call on
//     the path was decided more than once, and each one ran only after its approval (one approval_decision
//     node for it; none when an interrupt answered it before it ran);
//   - every tool call on the path has its result in the rebuilt context (buildSessionContext);
//   - the queue never held more than 8 inputs, and is empty at the end;
//   - no ACKed interrupt was undone by a restart (check_interrupt_held, run by the agent at every start and
//     reported in observed.log);
//   - every run ended in a state §5 allows for this scenario (completed: the interrupted turn is resumed
//     and the model never fails, so a failed, interrupted or still-open run is a violation), and there is
//     one run per turn.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace keel::crash {

struct CrashCheck {
  std::vector<std::string> violations;
  // What the scenario came to, for the harness's summary.
  int turns_completed = 0;
  int steers_acked = 0;
  int effects = 0;
  int interrupt_violations = 0;  // those of the violations that check_interrupt_held found
};

CrashCheck check_crash_invariants(const std::filesystem::path& dir);

// Spec §3 and §5: an ACKed command survives a crash, and an interrupted run continues only when the user
// resumes it. For every interrupt of the scenario that was ACKed as `interrupted: true` and whose run.resume
// was not yet sent (sent.log), the interrupted turn's run must be `interrupted` in the store. Run on the
// store as the last process left it, before an engine recovers it (recovery would continue a run that is
// not interrupted). Returns one line per violation, each starting with kInterruptTag.
std::vector<std::string> check_interrupt_held(const std::filesystem::path& dir);

}  // namespace keel::crash
