// tests/crash/crash_scenario.h — the scenario the crash harness plays, shared by the agent process that plays
// it (crash_agent_main.cc) and the checker that verifies what survived (crash_invariants.h).
//
// The scenario: one thread; turn "task 1" is submitted, steered twice while it runs, interrupted (usually
// while it waits for an approval), resumed once the interrupt took effect, and two more turns are enqueued
// behind it. Every turn calls three recording tools, one of each recovery class, whose side
// effects land in a file outside the store (one fsynced line per execution), so the harness can count them
// however often the process died; the never-retry one asks for approval first, which the agent gives.
// The model is state-free: its answer depends only on the request, so a
// restarted process gets the same answers.
//
// Files in the agent's directory:
//   keel.db        the store
//   effects.log    "<tool> <toolCallId>" per execution, appended and fsynced before the tool returns
//   acks.log       one JSON line per answered command: {"id", "answer": "ack"|"rejected", "payload"}
//                  (written after the answer arrived, so a command the process died before logging is sent
//                  again under the same submission id and its receipt replays the answer)
//   sent.log       one line "<id>" per command, fsynced before the command is sent: a command sent but not
//                  answered may have taken effect (its ACK died with the process)
//   observed.log   invariants the agent checks while it runs, one line per violation: the queue's length,
//                  and at every start, before recovery, that an ACKed interrupt held (lines "interrupt: ...")
//   hits.json      after a clean finish: how often each fail point was reached
#pragma once

#include <string>
#include <vector>

namespace keel::crash {

inline constexpr char kRecordSafe[] = "record_safe";        // retry-safe: may run again after a crash
inline constexpr char kRecordInspect[] = "record_inspect";  // inspect-first: never re-run by recovery
inline constexpr char kRecordOnce[] = "record_once";        // never-retry: at most once, ever

inline constexpr char kEffectsFile[] = "effects.log";
inline constexpr char kAcksFile[] = "acks.log";
inline constexpr char kSentFile[] = "sent.log";
inline constexpr char kObservedFile[] = "observed.log";
inline constexpr char kHitsFile[] = "hits.json";
inline constexpr char kStoreFile[] = "keel.db";

// Exit codes of the agent besides 0 (finished) and death by SIGKILL.
inline constexpr int kExitNoAnswer = 3;     // a command got no answer in time
inline constexpr int kExitNotSettled = 4;   // the thread did not come to rest in time
inline constexpr int kExitSetupFailed = 5;  // the store or engine could not be set up

struct ScenarioCommand {
  std::string id;      // also its submission id: a resend after a crash replays the receipt
  std::string method;  // thread.create, turn.submit, turn.steer, turn.interrupt, run.resume, turn.enqueue
  std::string text;    // the input text, "" for the commands that take none
};

// Violations of the interrupt check start with this tag, so the harness can count them apart.
inline constexpr char kInterruptTag[] = "interrupt: ";

// The agent's own kill point (`keel_crash_agent DIR --kill-on-ack ID`): once the answer to command ID is
// logged, the agent SIGKILLs itself. While that command is answered it holds the store's write lock (for up
// to kHoldStoreMs), so an ACK that comes before the command's write is durable is caught every time.
inline constexpr char kKillOnAckFlag[] = "--kill-on-ack";
inline constexpr int kHoldStoreMs = 1000;

inline std::vector<ScenarioCommand> scenario_commands() {
  return {
      {"create", "thread.create", ""},         {"submit-1", "turn.submit", "task 1"},
      {"steer-1", "turn.steer", "steer 1"},    {"steer-2", "turn.steer", "steer 2"},
      {"interrupt-1", "turn.interrupt", ""},  // turn 1
      {"resume-1", "run.resume", ""},         // turn 1's run
      {"enqueue-2", "turn.enqueue", "task 2"}, {"enqueue-3", "turn.enqueue", "task 3"},
  };
}

}  // namespace keel::crash
