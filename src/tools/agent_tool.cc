// tools/agent_tool.cc — AgentTool's default interaction behaviour (keel/tool.h).
#include "keel/error_codes.h"
#include "keel/tool.h"

namespace keel {

Result<void> AgentTool::check_response(const nlohmann::json& request, const nlohmann::json& response) const {
  (void)request;
  if (!response.is_object()) return fail(codes::kInvalidArgument, "the response must be a JSON object");
  return {};
}

CallPreview AgentTool::preview(const nlohmann::json& params, const ToolTarget& target) const {
  return default_call_preview(params, target);
}

ToolResult AgentTool::complete_interaction(const nlohmann::json& request,
                                           const nlohmann::json& response) const {
  return text_result(response.dump(), {{"request", request}, {"response", response}});
}

}  // namespace keel
