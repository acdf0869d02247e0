#include "policy/policy_state.h"

#include <algorithm>
#include <utility>

namespace keel {
namespace {

using Kind = GateVerdict::Kind;
using nlohmann::json;

void sort_and_count(ScopeRules& scope) {
  std::sort(scope.rules.begin(), scope.rules.end(), [](const SiteRule& a, const SiteRule& b) {
    return a.version != b.version ? a.version < b.version : a.id < b.id;
  });
  scope.version = scope.rules.empty() ? 0 : scope.rules.back().version;
}

std::string mode_name(PolicyMode mode) { return std::string(to_string(mode)); }

// What acceptForSite would remember for `request`: its scope and tool, this thread, and for a local tool
// this workspace folder; the person picks the lifetime (docs/policy.md, "Remembered decisions").
json site_rule_offer(const PolicyState& state, const GateRequest& request, const RuleScope& scope) {
  const ToolDescriptor& tool = *request.descriptor;
  const bool local = scope.key() == RuleScope::local().key();
  std::string where = "on " + scope.description() + ", in this thread (" + request.thread_id + ")";
  if (local) {
    where += state.workspace.empty() ? ", with no workspace" : ", in the workspace " + state.workspace;
  }
  json offer = {{"scope", scope.key()},
                {"scopeText", scope.description()},
                {"tool", tool.name},
                {"effects", to_string(tool.effects)},
                {"threadId", request.thread_id},
                {"lifetimes", {"turn", "session", "untilRevoked"}},
                {"defaultLifetime", "session"},
                {"where", where},
                {"text", tool.name + " (" + std::string(to_string(tool.effects)) + ") " + where}};
  if (local) offer["workspace"] = state.workspace;
  return offer;
}

}  // namespace

PolicyState PolicyState::from_store(const StoredPolicy& stored, PolicyMode default_mode) {
  PolicyState state;
  state.default_mode = default_mode;
  state.loaded_version = stored.version;
  for (const auto& [thread_id, mode] : stored.thread_modes) {
    state.thread_modes.emplace(thread_id, ThreadMode{mode, stored.version});
  }
  for (const SiteRule& rule : stored.rules) state.scopes[rule.scope.key()].rules.push_back(rule);
  for (auto& [key, scope] : state.scopes) sort_and_count(scope);
  state.host_permissions = stored.host_permissions;
  state.host_permissions_version = stored.version;
  return state;
}

PolicyMode PolicyState::mode_of(const std::string& thread_id) const {
  const auto it = thread_modes.find(thread_id);
  return it == thread_modes.end() ? default_mode : it->second.mode;
}

bool PolicyState::host_permitted(const Origin& origin) const {
  if (host_permissions.empty()) return true;
  return std::any_of(host_permissions.begin(), host_permissions.end(),
                     [&](const HostPattern& pattern) { return pattern.matches(origin); });
}

const ScopeRules* PolicyState::rules_of(const std::string& scope_key) const {
  const auto it = scopes.find(scope_key);
  return it == scopes.end() ? nullptr : &it->second;
}

void PolicyState::add_rule(SiteRule rule) {
  if (rule.version <= loaded_version || removed_rules.contains(rule.id)) return;
  ScopeRules& scope = scopes[rule.scope.key()];
  // A rule written before a removal in its scope was raised to the removal's version in the store.
  rule.version = std::max(rule.version, scope.removed_at);
  const auto same = std::find_if(scope.rules.begin(), scope.rules.end(),
                                 [&](const SiteRule& r) { return r.id == rule.id; });
  if (same != scope.rules.end()) {
    same->version = std::max(same->version, rule.version);
  } else {
    scope.rules.push_back(std::move(rule));
  }
  sort_and_count(scope);
}

void PolicyState::remove_rule(const std::string& rule_id, const std::string& scope_key, int64_t version) {
  if (version <= loaded_version) return;
  removed_rules.insert(rule_id);
  ScopeRules& scope = scopes[scope_key];
  std::erase_if(scope.rules, [&](const SiteRule& r) { return r.id == rule_id; });
  scope.removed_at = std::max(scope.removed_at, version);
  for (SiteRule& rule : scope.rules) rule.version = std::max(rule.version, version);
  sort_and_count(scope);
}

void PolicyState::set_thread_mode(const std::string& thread_id, PolicyMode mode, int64_t version) {
  if (version <= loaded_version) return;
  const auto it = thread_modes.find(thread_id);
  if (it != thread_modes.end() && it->second.version >= version) return;
  thread_modes.insert_or_assign(thread_id, ThreadMode{mode, version});
}

void PolicyState::set_host_permissions(std::vector<HostPattern> patterns, int64_t version) {
  if (version <= loaded_version || version <= host_permissions_version) return;
  host_permissions = std::move(patterns);
  host_permissions_version = version;
}

Result<RuleScope> scope_of_call(const GateRequest& request) {
  const ToolTarget& target = request.target;
  if (target.origin) return RuleScope::for_origin(KEEL_TRY(parse_origin(*target.origin)));
  if (target.server_id && !target.server_id->empty()) return RuleScope::for_mcp_server(*target.server_id);
  const ToolBinding& binding = request.descriptor->binding;
  if (binding.kind == ToolBinding::Kind::kMcp) return RuleScope::for_mcp_server(binding.server);
  return RuleScope::local();
}

GateVerdict decide(const PolicyState& state, const GateRequest& request) {
  const ToolDescriptor& tool = *request.descriptor;
  const bool writes = tool.effects == ToolEffects::kWrite;
  const PolicyMode mode = state.mode_of(request.thread_id);

  Result<RuleScope> scope = scope_of_call(request);
  if (!scope) {
    return {Kind::kDeny, tool.name + " was not run: " + scope.error().message(), false, 0};
  }
  const ScopeRules* rules = state.rules_of(scope->key());
  const int64_t version = rules ? rules->version : 0;
  const RuleContext context{request.thread_id, request.turn_id, state.workspace, state.session_id};
  const auto where = [&] { return scope->description(); };  // built only for the verdicts that say it

  if (const Origin* origin = scope->origin(); origin && !state.host_permitted(*origin)) {
    return {Kind::kDeny,
            "keel has no host permission for " + where() + "; " + tool.name +
                " was not run (a person can add the origin to the host permissions)",
            false, version};
  }

  // The most restrictive rule that covers the call decides; the first of each kind names it.
  const SiteRule* deny = nullptr;
  const SiteRule* ask = nullptr;
  const SiteRule* allow = nullptr;
  if (rules) {
    for (const SiteRule& rule : rules->rules) {
      if (!rule.applies_to(tool.name, tool.effects) || !rule.bounds.holds_in(context)) continue;
      const SiteRule*& slot = rule.decision == RuleDecision::kDeny  ? deny
                              : rule.decision == RuleDecision::kAsk ? ask
                                                                    : allow;
      if (!slot) slot = &rule;
    }
  }

  if (deny) {
    return {Kind::kDeny,
            "denied by site rule " + deny->id + " for " + where() + "; " + tool.name + " was not run", false,
            version};
  }
  if (writes && mode == PolicyMode::kReadOnly) {
    return {Kind::kDeny,
            "the thread's mode is read_only: " + tool.name + " writes on " + where() +
                " and was not run (a person can change the mode)",
            false, version};
  }
  if (ask) {
    return {Kind::kAsk, "site rule " + ask->id + " for " + where() + " asks before " + tool.name + " runs",
            false, version};
  }
  if (allow && !(writes && mode == PolicyMode::kAskEveryWrite)) {
    return {Kind::kAllow, "allowed by site rule " + allow->id + " for " + where(), false, version};
  }
  if (!writes || mode == PolicyMode::kAllowAll) return {Kind::kAllow, "", false, version};
  if (mode == PolicyMode::kAskWrites) {
    json offer = site_rule_offer(state, request, *scope);
    return {Kind::kAsk,
            "writes on " + where() + " need approval in mode ask_writes (" + tool.name +
                "); accepting for the site lets " + tool.name + " run " + offer.value("where", "") +
                " without asking",
            true, version, std::move(offer)};
  }
  return {Kind::kAsk,
          "every write needs approval in mode " + mode_name(mode) + " (" + tool.name + " on " + where() +
              (allow ? ", which site rule " + allow->id + " would otherwise allow)" : ")"),
          false, version};
}

}  // namespace keel
