// cli/gatekeeper_origin_policy.h — the navigation guard's OriginPolicy (browser/origin_guard.h) answered by
// the gatekeeper, so that the pages of a thread go only where its policy lets the model go.
//
// allows_navigation(T, O) asks the gatekeeper about browser_navigate on thread T with the target {origin O}
// (the same request the engine makes when the model calls browser_navigate to a URL of O) and refuses only
// a kDeny verdict: a missing host permission, a deny rule for O, or a mode that refuses browser_navigate
// itself (read_only). A kAsk verdict allows: asking is for tool calls, and a navigation the page starts
// (a link followed, a redirect hop, an iframe, a script's location change) follows a call that was already
// decided — the click, or the navigation that loaded the page. So a person is never asked twice for one
// action, and a page can never take a thread to an origin the policy denies.
//
// Why it lives in cli/: it joins two layers that know nothing of each other (the browser runtime only sees
// OriginPolicy, the policy layer only sees tool calls); the CLI, which builds both, is where they meet.
//
// Thread-safe (Gatekeeper::check is, and never blocks): the runtime calls it on its own thread while a
// document request waits. The gatekeeper must outlive the policy.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "browser/origin_guard.h"
#include "keel/error.h"
#include "keel/gatekeeper.h"
#include "keel/tool_registry.h"

namespace keel::cli {

class GatekeeperOriginPolicy final : public browser::OriginPolicy {
 public:
  // The policy for `gatekeeper`, asking about the browser_navigate of the browser tool table.
  // Errors: tool.* when browser_navigate's descriptor cannot be built (a broken tool table).
  static Result<std::shared_ptr<const GatekeeperOriginPolicy>> create(Gatekeeper& gatekeeper);

  GatekeeperOriginPolicy(Gatekeeper& gatekeeper, ToolDescriptor navigate);

  bool allows_navigation(const std::string& thread_id, const std::string& origin) const override;

 private:
  Gatekeeper* gatekeeper_;  // not owned; outlives this
  ToolDescriptor navigate_;
};

}  // namespace keel::cli
