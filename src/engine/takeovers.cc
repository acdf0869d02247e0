#include "engine/takeovers.h"

#include "engine/engine_errors.h"

namespace keel {

using nlohmann::json;

Takeovers::Takeovers(const std::vector<TakeoverTarget*>& targets) {
  for (TakeoverTarget* target : targets) {
    if (target != nullptr) targets_.push_back(target);
  }
}

Result<TakeoverTarget*> Takeovers::find(const std::string& name) const {
  std::string names;
  for (TakeoverTarget* target : targets_) {
    if (target->name() == name) return target;
    names += (names.empty() ? "" : ", ") + std::string(target->name());
  }
  return fail(codes::kTakeoverUnknownTarget, "there is nothing named '" + name +
                                                 "' to take over; this keel has " +
                                                 (names.empty() ? "nothing to take over" : "only: " + names));
}

bool Takeovers::set_person_holds(const std::string& thread_id, const std::string& target, bool person_holds) {
  MutexLock guard(mu_);
  auto key = std::make_pair(thread_id, target);
  return person_holds ? held_.insert(std::move(key)).second : held_.erase(key) != 0;
}

bool Takeovers::person_holds(const std::string& thread_id, const std::string& target) const {
  MutexLock guard(mu_);
  return held_.contains({thread_id, target});
}

json Takeovers::describe() const {
  if (targets_.empty()) return nullptr;
  json targets = json::array();
  for (const TakeoverTarget* target : targets_) {
    targets.push_back({{"name", target->name()}, {"state", target->state()}});
  }
  json held = json::array();
  {
    MutexLock guard(mu_);
    for (const auto& [thread_id, target] : held_)
      held.push_back({{"threadId", thread_id}, {"target", target}});
  }
  return {{"targets", std::move(targets)}, {"held", std::move(held)}};
}

}  // namespace keel
