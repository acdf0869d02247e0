#include "engine/wait_records.h"

#include <algorithm>
#include <exception>

#include "tools/call_preview.h"

namespace keel {

using nlohmann::json;

json target_json(const ToolTarget& target) {
  json out = json::object();
  if (target.origin) out["origin"] = *target.origin;
  if (target.tab_id) out["tabId"] = *target.tab_id;
  if (target.frame_id) out["frameId"] = *target.frame_id;
  if (target.server_id) out["serverId"] = *target.server_id;
  if (target.path) out["path"] = *target.path;
  return out;
}

ToolTarget target_from_json(const json& value) {
  ToolTarget target;
  if (!value.is_object()) return target;
  if (auto it = value.find("origin"); it != value.end() && it->is_string())
    target.origin = it->get<std::string>();
  if (auto it = value.find("tabId"); it != value.end() && it->is_number_integer())
    target.tab_id = it->get<int64_t>();
  if (auto it = value.find("frameId"); it != value.end() && it->is_number_integer())
    target.frame_id = it->get<int64_t>();
  if (auto it = value.find("serverId"); it != value.end() && it->is_string())
    target.server_id = it->get<std::string>();
  if (auto it = value.find("path"); it != value.end() && it->is_string())
    target.path = it->get<std::string>();
  return target;
}

std::vector<std::string> approval_offers(const GateVerdict& verdict) {
  std::vector<std::string> offers = {"accept"};
  if (verdict.offers_accept_for_site) offers.emplace_back("acceptForSite");
  offers.emplace_back("decline");
  return offers;
}

CallPreview preview_call(const AgentTool& tool, const json& arguments, const ToolTarget& target) {
  CallPreview preview;
  try {
    preview = tool.preview(arguments, target);
  } catch (const std::exception&) {
    preview = default_call_preview(arguments, target);
  }
  if (target.path) {
    for (std::string& reason : sensitive_path_reasons(*target.path)) {
      if (std::find(preview.sensitive.begin(), preview.sensitive.end(), reason) == preview.sensitive.end()) {
        preview.sensitive.push_back(std::move(reason));
      }
    }
  }
  return preview;
}

json preview_json(const CallPreview& preview) {
  json change = {{"format", preview.change_format}, {"text", preview.change}};
  if (preview.bytes_before) change["bytesBefore"] = *preview.bytes_before;
  if (preview.bytes_after) change["bytesAfter"] = *preview.bytes_after;
  return {{"action", preview.action},
          {"target", preview.target},
          {"sensitive", !preview.sensitive.empty()},
          {"sensitiveReasons", preview.sensitive},
          {"change", std::move(change)}};
}

json approval_request_json(const ApprovalSubject& subject) {
  const ToolDescriptor& d = *subject.descriptor;
  json request = {{"toolCallId", subject.tool_call_id},
                  {"callNodeId", subject.call_node_id},
                  {"tool",
                   {{"name", d.name},
                    {"label", d.label},
                    {"effects", to_string(d.effects)},
                    {"level", to_string(d.level)},
                    {"trust", to_string(d.trust)},
                    {"provenance", to_string(d.provenance)},
                    {"server", d.binding.server},
                    {"digest", d.digest}}},
                  {"arguments", *subject.arguments},
                  {"target", target_json(subject.target)},
                  {"reason", subject.verdict.reason},
                  {"ruleVersion", subject.verdict.rule_version},
                  {"offers", approval_offers(subject.verdict)}};
  if (subject.preview) request["preview"] = preview_json(*subject.preview);
  if (subject.verdict.offers_accept_for_site && subject.verdict.site_rule_offer.is_object()) {
    request["remember"] = subject.verdict.site_rule_offer;
  }
  return request;
}

ToolDescriptor approved_descriptor(const json& request) {
  ToolDescriptor d;
  const json tool = request.value("tool", json::object());
  d.name = tool.value("name", "");
  d.label = tool.value("label", "");
  d.digest = tool.value("digest", "");
  d.effects = tool.value("effects", "read") == "write" ? ToolEffects::kWrite : ToolEffects::kRead;
  const std::string level = tool.value("level", "builtin");
  for (ToolLevel l : {ToolLevel::kL0, ToolLevel::kL1, ToolLevel::kL2, ToolLevel::kMcp, ToolLevel::kBuiltin}) {
    if (to_string(l) == level) d.level = l;
  }
  d.trust = tool.value("trust", "trusted") == "trusted" ? ToolTrust::kTrusted : ToolTrust::kUntrusted;
  const std::string provenance = tool.value("provenance", "tool");
  for (ToolProvenance p :
       {ToolProvenance::kTool, ToolProvenance::kMcp, ToolProvenance::kPage, ToolProvenance::kWorkspace}) {
    if (to_string(p) == provenance) d.provenance = p;
  }
  d.binding.server = tool.value("server", "");
  if (d.level == ToolLevel::kMcp) d.binding.kind = ToolBinding::Kind::kMcp;
  return d;
}

}  // namespace keel
