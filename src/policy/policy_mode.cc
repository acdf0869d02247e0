#include "policy/gatekeeper.h"

namespace keel {

std::string_view to_string(PolicyMode mode) {
  switch (mode) {
    case PolicyMode::kAskEveryWrite:
      return "ask_every_write";
    case PolicyMode::kAskWrites:
      return "ask_writes";
    case PolicyMode::kReadOnly:
      return "read_only";
    case PolicyMode::kAllowAll:
      return "allow_all";
  }
  return "ask_writes";
}

std::optional<PolicyMode> parse_policy_mode(std::string_view name) {
  for (PolicyMode mode :
       {PolicyMode::kAskEveryWrite, PolicyMode::kAskWrites, PolicyMode::kReadOnly, PolicyMode::kAllowAll}) {
    if (to_string(mode) == name) return mode;
  }
  return std::nullopt;
}

}  // namespace keel
