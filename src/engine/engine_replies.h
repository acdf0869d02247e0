// engine/engine_replies.h — how an engine service answers an op and reports what it committed: the op's
// command.ack / command.rejected and the events of the engine's EventBus (docs/protocol.md). The services
// (turn and steer admission, waits, recovery, policy ops) get this instead of the whole engine.
//
// Implemented by EngineCore::Impl. Any thread; an answer goes out after the transaction it reports committed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "keel/error.h"
#include "keel/protocol.h"
#include "protocol/events.h"

namespace keel {

class EngineReplies {
 public:
  // `result` is the ACK's result; `replayed`: answered from the submission's receipt.
  virtual void ack(const Op& op, const std::string& thread_id, nlohmann::json result,
                   bool replayed = false) = 0;
  virtual void reject(const Op& op, const std::string& thread_id, const Error& error) = 0;
  // An event built by protocol/events.h, the one owner of its payload's shape.
  virtual void publish_event(const std::string& thread_id, events::Event event) = 0;

 protected:
  ~EngineReplies() = default;
};

}  // namespace keel
