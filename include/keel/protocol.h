// keel/protocol.h — the messages between clients and the engine: Ops in, AgentEvents out.
//
// Ops are the specification's commands (docs/protocol.md lists each method and its params): initialize,
// thread.create|delete|fork|selectBranch|list|read, turn.submit|steer|enqueue|interrupt,
// queue.update|remove|list,
// approval.response, interaction.response, run.resume, run.resolveUncertain. Every op carries clientId and
// submissionId; its answer is an event: command.ack {submissionId, result} once the command's decision is
// persisted, or command.rejected {submissionId, error{code, message}}.
//
// AgentEvents: turn.start, item.start, item.delta, item.complete, token.usage, approval.request,
// interaction.request, queue.updated, thread.updated, run.updated, turn.complete, command.ack,
// command.rejected. An event that reports a persisted fact is emitted only after its transaction committed.
// Events of one thread carry a strictly increasing `seq`, also across engine restarts (docs/protocol.md,
// Events), and every subscriber sees them in that order.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace keel {

inline constexpr int kProtocolVersion = 1;

struct Op {
  std::string method;
  std::string client_id;
  std::string submission_id;
  nlohmann::json params = nlohmann::json::object();
};

struct AgentEvent {
  std::string type;
  std::string thread_id;  // "" for events not tied to a thread (command answers before a thread exists)
  uint64_t seq = 0;       // per thread (or per engine for thread_id ""), strictly increasing, above 0
  nlohmann::json payload = nlohmann::json::object();

  // item.delta events may be coalesced for a slow subscriber; every other event is always delivered.
  bool is_delta() const { return type == "item.delta"; }
  nlohmann::json to_json() const {
    return {{"type", type}, {"threadId", thread_id}, {"seq", seq}, {"payload", payload}};
  }
};

}  // namespace keel
