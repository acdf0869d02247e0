#include "policy/site_rule.h"

#include <utility>

#include "keel/error_codes.h"

namespace keel {
namespace {

constexpr std::string_view kMcpPrefix = "mcp:";
constexpr std::string_view kLocalKey = "local:";

std::unexpected<Error> bad_rule(std::string message) {
  return fail(codes::kPolicyBadRule, std::move(message));
}

bool has_control_character(std::string_view text) {
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return true;
  }
  return false;
}

// The JSON of an optional string field: absent and null both mean "any".
Result<std::optional<std::string>> optional_string(const nlohmann::json& object, const char* field) {
  const auto it = object.find(field);
  if (it == object.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) return bad_rule(std::string("a rule's \"") + field + "\" must be a string or null");
  return std::optional<std::string>(it->get<std::string>());
}

nlohmann::json optional_json(const std::optional<std::string>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

Result<std::string> required_string(const nlohmann::json& object, const char* field) {
  const auto it = object.find(field);
  if (it == object.end() || !it->is_string()) {
    return bad_rule(std::string("a rule needs \"") + field + "\" (a string)");
  }
  return it->get<std::string>();
}

Result<std::optional<std::string>> tool_field(const nlohmann::json& object) {
  std::optional<std::string> tool = KEEL_TRY(optional_string(object, "tool"));
  if (tool && !is_valid_tool_name(*tool)) {
    return bad_rule("a rule's tool must be a tool name ([a-zA-Z0-9_-]{1,64}) or null for every tool");
  }
  return tool;
}

Result<std::optional<ToolEffects>> effects_field(const nlohmann::json& object) {
  const std::optional<std::string> name = KEEL_TRY(optional_string(object, "effects"));
  if (!name) return std::optional<ToolEffects>();
  const std::optional<ToolEffects> effects = parse_tool_effects(*name);
  if (!effects) return bad_rule("a rule's effects must be \"read\", \"write\" or null for both");
  return effects;
}

Result<RuleDecision> decision_field(const nlohmann::json& object) {
  const std::string name = KEEL_TRY(required_string(object, "decision"));
  const std::optional<RuleDecision> decision = parse_rule_decision(name);
  if (!decision) return bad_rule("a rule's decision must be \"allow\", \"ask\" or \"deny\"");
  return *decision;
}

}  // namespace

RuleScope::RuleScope() : RuleScope(Local{}) {}

RuleScope::RuleScope(std::variant<Origin, McpServer, Local> value) : value_(std::move(value)) {
  if (const Origin* o = std::get_if<Origin>(&value_)) {
    key_ = o->to_string();
  } else if (const McpServer* server = std::get_if<McpServer>(&value_)) {
    key_ = std::string(kMcpPrefix) + server->name;
  } else {
    key_ = std::string(kLocalKey);
  }
}

RuleScope RuleScope::for_origin(Origin origin) { return RuleScope(std::move(origin)); }

Result<RuleScope> RuleScope::for_mcp_server(std::string server) {
  if (server.empty() || server.size() > kMaxServerBytes || has_control_character(server)) {
    return bad_rule("an MCP server name must be 1-256 bytes without control characters");
  }
  return RuleScope(McpServer{std::move(server)});
}

std::string RuleScope::description() const {
  if (const Origin* o = origin()) return o->to_string();
  if (const McpServer* server = std::get_if<McpServer>(&value_)) return "MCP server " + server->name;
  return "this machine";
}

Result<RuleScope> parse_rule_scope(std::string_view text) {
  if (text == kLocalKey) return RuleScope::local();
  if (text.starts_with(kMcpPrefix))
    return RuleScope::for_mcp_server(std::string(text.substr(kMcpPrefix.size())));
  return RuleScope::for_origin(KEEL_TRY(parse_origin(text, OriginSyntax::kOriginOnly)));
}

std::string_view to_string(RuleDecision decision) {
  switch (decision) {
    case RuleDecision::kAllow:
      return "allow";
    case RuleDecision::kAsk:
      return "ask";
    case RuleDecision::kDeny:
      return "deny";
  }
  return "deny";
}

std::optional<RuleDecision> parse_rule_decision(std::string_view name) {
  for (RuleDecision decision : {RuleDecision::kAllow, RuleDecision::kAsk, RuleDecision::kDeny}) {
    if (to_string(decision) == name) return decision;
  }
  return std::nullopt;
}

std::optional<ToolEffects> parse_tool_effects(std::string_view name) {
  for (ToolEffects effects : {ToolEffects::kRead, ToolEffects::kWrite}) {
    if (to_string(effects) == name) return effects;
  }
  return std::nullopt;
}

std::string_view to_string(RuleLifetime lifetime) {
  switch (lifetime) {
    case RuleLifetime::kUntilRevoked:
      return "untilRevoked";
    case RuleLifetime::kSession:
      return "session";
    case RuleLifetime::kTurn:
      return "turn";
  }
  return "turn";
}

std::optional<RuleLifetime> parse_rule_lifetime(std::string_view name) {
  for (RuleLifetime l : {RuleLifetime::kUntilRevoked, RuleLifetime::kSession, RuleLifetime::kTurn}) {
    if (to_string(l) == name) return l;
  }
  return std::nullopt;
}

std::string RuleBounds::description() const {
  std::string text;
  const auto add = [&](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  if (thread_id) add("in thread " + *thread_id);
  if (workspace) add(workspace->empty() ? "with no workspace" : "in workspace " + *workspace);
  if (lifetime == RuleLifetime::kTurn) add("for the rest of this turn");
  if (lifetime == RuleLifetime::kSession) add("until keel exits");
  if (lifetime == RuleLifetime::kUntilRevoked && !text.empty()) add("until revoked (keel policy revoke)");
  return text;
}

Result<RuleSpec> parse_rule_spec(const nlohmann::json& params) {
  if (!params.is_object()) return bad_rule("a rule must be a JSON object");
  for (const auto& [field, value] : params.items()) {
    (void)value;
    if (field != "scope" && field != "tool" && field != "effects" && field != "decision") {
      return bad_rule("a rule has no field \"" + field + "\" (fields: scope, tool, effects, decision)");
    }
  }
  RuleSpec spec;
  spec.scope = KEEL_TRY(parse_rule_scope(KEEL_TRY(required_string(params, "scope"))));
  spec.tool = KEEL_TRY(tool_field(params));
  spec.effects = KEEL_TRY(effects_field(params));
  spec.decision = KEEL_TRY(decision_field(params));
  return spec;
}

nlohmann::json to_json(const SiteRule& rule) {
  return nlohmann::json{
      {"id", rule.id},
      {"scope", rule.scope.key()},
      {"tool", rule.tool ? nlohmann::json(*rule.tool) : nlohmann::json(nullptr)},
      {"effects", rule.effects ? nlohmann::json(to_string(*rule.effects)) : nlohmann::json(nullptr)},
      {"decision", to_string(rule.decision)},
      {"version", rule.version},
      {"createdAt", rule.created_at},
      {"threadId", optional_json(rule.bounds.thread_id)},
      {"workspace", optional_json(rule.bounds.workspace)},
      {"lifetime", to_string(rule.bounds.lifetime)},
      {"sessionId", optional_json(rule.bounds.session_id)},
      {"turnId", optional_json(rule.bounds.turn_id)},
  };
}

Result<SiteRule> site_rule_from_json(const nlohmann::json& value) {
  if (!value.is_object()) return bad_rule("a rule must be a JSON object");
  SiteRule rule;
  rule.id = KEEL_TRY(required_string(value, "id"));
  rule.scope = KEEL_TRY(parse_rule_scope(KEEL_TRY(required_string(value, "scope"))));
  rule.tool = KEEL_TRY(tool_field(value));
  rule.effects = KEEL_TRY(effects_field(value));
  rule.decision = KEEL_TRY(decision_field(value));
  const auto version = value.find("version");
  const auto created_at = value.find("createdAt");
  if (version == value.end() || !version->is_number_integer() || created_at == value.end() ||
      !created_at->is_number_integer()) {
    return bad_rule("a rule needs an integer \"version\" and \"createdAt\"");
  }
  rule.version = version->get<int64_t>();
  rule.created_at = created_at->get<int64_t>();
  rule.bounds.thread_id = KEEL_TRY(optional_string(value, "threadId"));
  rule.bounds.workspace = KEEL_TRY(optional_string(value, "workspace"));
  rule.bounds.session_id = KEEL_TRY(optional_string(value, "sessionId"));
  rule.bounds.turn_id = KEEL_TRY(optional_string(value, "turnId"));
  if (const auto lifetime = value.find("lifetime"); lifetime != value.end() && !lifetime->is_null()) {
    const std::optional<RuleLifetime> parsed =
        lifetime->is_string() ? parse_rule_lifetime(lifetime->get<std::string>()) : std::nullopt;
    if (!parsed) return bad_rule("\"lifetime\" must be untilRevoked, session or turn");
    rule.bounds.lifetime = *parsed;
  }
  return rule;
}

}  // namespace keel
