// policy/policy_state.h — internal to PolicyGatekeeper: one snapshot of the policy in memory, the verdicts
// it gives, and the installs that derive the next snapshot from a copy of it.
//
// A snapshot is never changed once published; PolicyGatekeeper copies it, installs a change into the copy
// and publishes the copy. Rules are indexed by their scope's key, so a verdict costs one hash lookup and a
// walk over the rules of one scope, however many rules other scopes have.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "keel/error.h"
#include "policy/gatekeeper.h"
#include "policy/host_pattern.h"
#include "policy/policy_repository.h"
#include "policy/site_rule.h"

namespace keel {

struct ScopeRules {
  std::vector<SiteRule> rules;  // by version, then id
  int64_t removed_at = 0;       // the version of the latest removal installed in this scope
  int64_t version = 0;          // the highest version of `rules`; 0 when there are none
};

struct PolicyState {
  struct ThreadMode {
    PolicyMode mode;
    int64_t version;
  };

  PolicyMode default_mode = PolicyMode::kAskWrites;
  // open() read the store as of this version: every change up to it is already here.
  int64_t loaded_version = 0;
  std::unordered_map<std::string, ThreadMode> thread_modes;
  std::unordered_map<std::string, ScopeRules> scopes;  // by RuleScope::key()
  std::unordered_set<std::string> removed_rules;       // ids removed since open()
  std::vector<HostPattern> host_permissions;           // empty: every origin permitted
  int64_t host_permissions_version = 0;
  // The engine session deciding (PolicySession): which remembered decisions hold.
  std::string session_id;
  std::string workspace;

  static PolicyState from_store(const StoredPolicy& stored, PolicyMode default_mode);

  PolicyMode mode_of(const std::string& thread_id) const;
  bool host_permitted(const Origin& origin) const;
  // nullptr when the scope has no entry.
  const ScopeRules* rules_of(const std::string& scope_key) const;

  // Installs. Each ignores a change the snapshot already reflects or that a later one superseded.
  void add_rule(SiteRule rule);
  void remove_rule(const std::string& rule_id, const std::string& scope_key, int64_t version);
  void set_thread_mode(const std::string& thread_id, PolicyMode mode, int64_t version);
  void set_host_permissions(std::vector<HostPattern> patterns, int64_t version);
};

// The scope of a call: its target's origin, else its MCP server, else local. Errors: policy.bad_origin (a
// target origin that does not parse), policy.bad_rule (an MCP server name no rule can hold).
Result<RuleScope> scope_of_call(const GateRequest& request);

// The verdict `state` gives `request` (policy/policy_gatekeeper.h lists the steps).
GateVerdict decide(const PolicyState& state, const GateRequest& request);

}  // namespace keel
