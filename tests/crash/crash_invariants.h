// tests/crash/crash_invariants.h — what must hold after the crash agent finished, however often it died.
//
// check_crash_invariants() reads the agent's directory (store, effects, answers; crash_scenario.h) once no
// agent runs on it, and returns one line per violation (empty: all hold):
//   - every scenario command was answered, and no answered ACK was lost: the thread exists, each ACKed
//     turn input is on its path exactly once, each ACKed steer exactly once, in admission order, inside
//     the turn it steered;
//   - no never-retry or inspect-first call executed more than once (effects.log), and each never-retry
//     call on the path was approved exactly once (one approval_decision node per record_once call);
//   - every tool call on the path has its result in the rebuilt context (buildSessionContext);
//   - the queue never held more than 8 inputs, and is empty at the end;
//   - every run ended in a state §5 allows for this scenario (completed; nothing was interrupted and the
//     model never fails, so a failed or still-open run is a violation), and there is one run per turn.
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
};

CrashCheck check_crash_invariants(const std::filesystem::path& dir);

}  // namespace keel::crash
