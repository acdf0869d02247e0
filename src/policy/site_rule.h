// policy/site_rule.h — typed site rules: the place a rule speaks for, the calls it covers, its decision.
//
// A rule's scope is one of three typed values:
//   - a web origin (util/origin.h): calls whose target is on exactly that origin;
//   - an MCP server, by its configured name: calls of that server's tools that name no web origin;
//   - local: calls with neither (workspace tools and other tools that act on this machine).
// Matching compares these values (Origin equality, server-name equality), the tool name and the effects
// enum; never string prefixes, so a rule for https://a.example covers neither https://a.example.evil.com
// nor http://a.example nor https://a.example:8443.
//
// Every scope has one canonical text, its key: "https://example.com", "mcp:<server>", "local:". The key is
// injective (origins always contain "://", the other two kinds start with a prefix no origin has), so two
// scopes are equal exactly when their keys are, and the key can index rules in a hash map and name the
// scope in the store (site_rules.origin) and on the wire.
//
// Errors of parsing client input: policy.bad_origin for a malformed origin, policy.bad_rule for any other
// malformed field. (Decoding a stored row is the repository's: it reports store.decode_failed.)
//
// Values only; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "keel/error.h"
#include "keel/tool.h"
#include "util/origin.h"

namespace keel {

class RuleScope {
 public:
  // Local.
  RuleScope();
  static RuleScope for_origin(Origin origin);
  // policy.bad_rule when `server` is not a name a rule can hold (empty, longer than kMaxServerBytes, or
  // containing control characters).
  static Result<RuleScope> for_mcp_server(std::string server);
  static RuleScope local() { return RuleScope(); }

  static constexpr size_t kMaxServerBytes = 256;

  // nullptr unless this is an origin scope.
  const Origin* origin() const { return std::get_if<Origin>(&value_); }
  // The canonical text (see the header comment).
  const std::string& key() const { return key_; }
  // For people: "https://example.com", "MCP server fs", "this machine".
  std::string description() const;

  friend bool operator==(const RuleScope& a, const RuleScope& b) { return a.value_ == b.value_; }

 private:
  struct McpServer {
    std::string name;
    friend bool operator==(const McpServer&, const McpServer&) = default;
  };
  struct Local {
    friend bool operator==(const Local&, const Local&) = default;
  };
  explicit RuleScope(std::variant<Origin, McpServer, Local> value);

  std::variant<Origin, McpServer, Local> value_;
  std::string key_;
};

// The scope whose key is `text`: "mcp:<server>", "local:", or an origin (no path; see util/origin.h).
Result<RuleScope> parse_rule_scope(std::string_view text);

enum class RuleDecision { kAllow, kAsk, kDeny };
std::string_view to_string(RuleDecision decision);
// nullopt for a name other than allow, ask, deny.
std::optional<RuleDecision> parse_rule_decision(std::string_view name);
// nullopt for a name other than read, write.
std::optional<ToolEffects> parse_tool_effects(std::string_view name);

// How long a rule holds. A rule added with policy.addRule holds until it is removed; a decision remembered
// from an approval (acceptForSite) holds for the lifetime the person chose: the rest of the turn, the rest
// of this engine session (until keel exits), or until they revoke it.
enum class RuleLifetime { kUntilRevoked, kSession, kTurn };
std::string_view to_string(RuleLifetime lifetime);  // untilRevoked | session | turn
std::optional<RuleLifetime> parse_rule_lifetime(std::string_view name);

// Where a rule holds beyond its scope and tool: the engine's circumstances a call is checked in.
struct RuleContext {
  std::string thread_id;
  std::string turn_id;
  std::string workspace;   // the engine's workspace folder ("" when it has none)
  std::string session_id;  // this engine session (one per start of the gatekeeper)
};

// What a rule is confined to. Every field unset (the default, and every rule policy.addRule writes): it
// holds on every thread, in every workspace, until removed. acceptForSite confines a rule to what the
// person was shown: this thread, and for a local tool this workspace folder, for the lifetime chosen.
struct RuleBounds {
  std::optional<std::string> thread_id = std::nullopt;  // nullopt: every thread
  std::optional<std::string> workspace = std::nullopt;  // nullopt: every workspace ("" = none)
  RuleLifetime lifetime = RuleLifetime::kUntilRevoked;
  std::optional<std::string> session_id = std::nullopt;  // kSession, kTurn: the session that wrote it
  std::optional<std::string> turn_id = std::nullopt;     // kTurn: the turn it holds for
  bool holds_in(const RuleContext& context) const {
    if (thread_id && *thread_id != context.thread_id) return false;
    if (workspace && *workspace != context.workspace) return false;
    if (lifetime != RuleLifetime::kUntilRevoked && session_id != context.session_id) return false;
    if (lifetime == RuleLifetime::kTurn && turn_id != context.turn_id) return false;
    return true;
  }
  // For people: "in thread T, in workspace /w, until keel exits"; "" when unbounded.
  std::string description() const;
  friend bool operator==(const RuleBounds&, const RuleBounds&) = default;
};

// What policy.addRule asks for: a rule before it has an identity, a version and a time.
struct RuleSpec {
  RuleScope scope;
  std::optional<std::string> tool = std::nullopt;     // nullopt: every tool
  std::optional<ToolEffects> effects = std::nullopt;  // nullopt: reads and writes
  RuleDecision decision = RuleDecision::kAllow;
  RuleBounds bounds = {};
  friend bool operator==(const RuleSpec&, const RuleSpec&) = default;
};

struct SiteRule {
  std::string id;
  RuleScope scope;
  std::optional<std::string> tool = std::nullopt;     // nullopt: every tool
  std::optional<ToolEffects> effects = std::nullopt;  // nullopt: reads and writes
  RuleDecision decision = RuleDecision::kAllow;
  // The policy version when the rule was written or, later, when another rule of its scope was removed,
  // so that the highest version of a scope's rules changes with every change to them (docs/policy.md).
  int64_t version = 0;
  int64_t created_at = 0;  // Unix ms
  RuleBounds bounds = {};

  // Whether the rule covers a call of `tool_name` with `call_effects`. The scope is matched by whoever
  // holds the rules: they are indexed by it.
  bool applies_to(std::string_view tool_name, ToolEffects call_effects) const {
    return (!tool || *tool == tool_name) && (!effects || *effects == call_effects);
  }
  // Whether the rule says what `spec` says (same scope, tool, effects, decision and bounds).
  bool says(const RuleSpec& spec) const {
    return scope == spec.scope && tool == spec.tool && effects == spec.effects && decision == spec.decision &&
           bounds == spec.bounds;
  }
  friend bool operator==(const SiteRule&, const SiteRule&) = default;
};

// policy.addRule's params: {scope, tool?, effects?: "read"|"write", decision: "allow"|"ask"|"deny"}; an
// absent or null tool / effects means any. Unknown fields are refused (a misspelt "effect" must not
// silently widen a rule). Errors: policy.bad_origin, policy.bad_rule.
Result<RuleSpec> parse_rule_spec(const nlohmann::json& params);

// {"id","scope","tool","effects","decision","version","createdAt","threadId","workspace","lifetime",
// "sessionId","turnId"}; tool, effects, threadId and workspace are null for any, sessionId and turnId null
// when the lifetime does not use them. from_json reads a rule without the bound fields as unbounded.
nlohmann::json to_json(const SiteRule& rule);
// The inverse of to_json(). Errors: policy.bad_rule, policy.bad_origin.
Result<SiteRule> site_rule_from_json(const nlohmann::json& value);

}  // namespace keel
