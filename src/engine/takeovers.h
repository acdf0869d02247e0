// engine/takeovers.h — the engine's takeover targets (keel/takeover.h) and which of them a person holds,
// per thread, for takeover.start / takeover.end and initialize (docs/protocol.md, Taking over).
//
// Who holds a target is kept in memory only: after a restart the agent holds every target again (a
// browser, for one, is relaunched then). Thread-safe: the ops of different threads run on different strands
// and initialize on the control strand.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "keel/error.h"
#include "keel/takeover.h"
#include "keel/thread_annotations.h"

namespace keel {

class Takeovers {
 public:
  // `targets` outlive the engine; null entries are ignored.
  explicit Takeovers(const std::vector<TakeoverTarget*>& targets);

  // The target named `name`; takeover.unknown_target naming those there are otherwise.
  Result<TakeoverTarget*> find(const std::string& name) const;
  // Records who holds `target` for `thread_id`; returns whether that changed.
  bool set_person_holds(const std::string& thread_id, const std::string& target, bool person_holds);
  bool person_holds(const std::string& thread_id, const std::string& target) const;
  // initialize's "takeover" member: {targets: [{name, state}], held: [{threadId, target}]}; null when the
  // engine has no target (so an engine without one answers initialize as before).
  nlohmann::json describe() const;

 private:
  std::vector<TakeoverTarget*> targets_;  // fixed at construction
  mutable Mutex mu_;
  std::set<std::pair<std::string, std::string>> held_ KEEL_GUARDED_BY(mu_);  // {thread id, target name}
};

}  // namespace keel
