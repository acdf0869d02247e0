#include "cli/gatekeeper_origin_policy.h"

#include <memory>
#include <utility>

#include "browser/tools/register.h"
#include "keel/error_codes.h"

namespace keel::cli {

Result<std::shared_ptr<const GatekeeperOriginPolicy>> GatekeeperOriginPolicy::create(Gatekeeper& gatekeeper) {
  for (const browser::BrowserToolEntry& entry : browser::browser_tool_table()) {
    if (entry.spec.name != "browser_navigate") continue;
    ToolDescriptor navigate = KEEL_TRY(make_tool_descriptor(entry.spec));
    return std::make_shared<const GatekeeperOriginPolicy>(gatekeeper, std::move(navigate));
  }
  return fail(codes::kInternal, "the browser tool table has no browser_navigate");
}

GatekeeperOriginPolicy::GatekeeperOriginPolicy(Gatekeeper& gatekeeper, ToolDescriptor navigate)
    : gatekeeper_(&gatekeeper), navigate_(std::move(navigate)) {}

bool GatekeeperOriginPolicy::allows_navigation(const std::string& thread_id,
                                               const std::string& origin) const {
  // What browser_navigate to a URL of `origin` would send: the guard sees the URL, the gatekeeper decides
  // on the origin alone, so the origin stands for it.
  const nlohmann::json arguments = {{"url", origin}};
  const GateRequest request{.thread_id = thread_id,
                            .tool_call_id = "",
                            .descriptor = &navigate_,
                            .arguments = &arguments,
                            .target = ToolTarget{.origin = origin}};
  return gatekeeper_->check(request).kind != GateVerdict::Kind::kDeny;
}

}  // namespace keel::cli
