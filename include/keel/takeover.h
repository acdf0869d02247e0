// keel/takeover.h — TakeoverTarget: something a person can take over from the agent, and hand back.
//
// A person may want to use what the agent is using (the browser: to log in, solve a check, fix a form).
// The engine knows such a thing only through this interface (EngineDeps::takeover_targets); its ops are
// takeover.start and takeover.end (docs/protocol.md, Taking over). On takeover.start the engine calls
// take_over() and then interrupts the thread's turn as turn.interrupt does, so the run waits, `interrupted`,
// until the person hands back and continues it or sends a new message. While a person holds a target, its
// tools refuse to act for that thread (the target's own business, e.g. browser.taken_over).
//
// Contract for implementations:
//   - name() is constant and unique among an engine's targets ("browser"); clients name the target by it.
//   - take_over() and hand_back() are called on an engine I/O thread: they must be quick (no waiting on a
//     page) and thread-safe. Both are idempotent: taking over what a person holds, or handing back what
//     the agent holds, succeeds and changes nothing.
//   - Their JSON result is for the person's client (which tab to look at, whether a window is visible);
//     the engine passes it on in the op's ACK without reading it.
//   - state() reports what the target holds now, for initialize; it must be thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "keel/error.h"

namespace keel {

class TakeoverTarget {
 public:
  virtual ~TakeoverTarget() = default;
  // "browser".
  virtual std::string_view name() const = 0;
  // From now on the person, not the agent, uses the target for `thread_id`: stop what the agent does there.
  virtual Result<nlohmann::json> take_over(const std::string& thread_id) = 0;
  // The agent may use the target for `thread_id` again.
  virtual Result<nlohmann::json> hand_back(const std::string& thread_id) = 0;
  // What the target holds now (shown by initialize under takeover.targets[].state).
  virtual nlohmann::json state() const = 0;
};

}  // namespace keel
