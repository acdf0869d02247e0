// policy/policy_repository.h — where the policy lives in the store, read and written in the caller's
// transaction.
//
// Site rules are rows of `site_rules`: the scope's key (policy/site_rule.h) in the `origin` column, the
// tool name or NULL (any tool), the effects ("read"/"write") or NULL (both), the decision, the version.
// Everything else is in `settings`:
//   policy.version                 the last policy version issued, a decimal integer (absent = 0)
//   policy.host_permissions        a JSON array of canonical host patterns (policy/host_pattern.h);
//                                  absent when no list is set
//   policy.thread_mode.<threadId>  the thread's mode name (ask_every_write, ask_writes, ...)
//
// Versions: every policy write takes the next policy version (next_version()), one counter for rules,
// modes and host permissions, so a change can be ordered against any other. Removing a rule raises the
// rules left in its scope to the removal's version: the highest version of a scope's rules then changes
// with every change to them, and a verdict taken under an older rule set can be recognized as such.
//
// Holds no state between calls apart from the injected clock. Errors: any store error; store.decode_failed
// for a damaged row, naming it (a rule's id, a settings key).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "keel/clock.h"
#include "keel/error.h"
#include "keel/store.h"
#include "policy/gatekeeper.h"
#include "policy/host_pattern.h"
#include "policy/site_rule.h"

namespace keel {

struct StoredPolicy {
  std::vector<SiteRule> rules;  // by version, then id
  std::map<std::string, PolicyMode> thread_modes;
  std::vector<HostPattern> host_permissions;  // empty: no list set
  int64_t version = 0;                        // every stored fact is as of this version
};

class PolicyRepository {
 public:
  static constexpr char kVersionKey[] = "policy.version";
  static constexpr char kHostPermissionsKey[] = "policy.host_permissions";
  static constexpr char kThreadModePrefix[] = "policy.thread_mode.";

  // `clock` must outlive the repository.
  explicit PolicyRepository(const Clock& clock) : clock_(clock) {}

  Result<StoredPolicy> load(Transaction& tx);
  // Issues the next policy version (and stores it as the last one issued).
  Result<int64_t> next_version(Transaction& tx);

  // The rules of one scope, by version.
  Result<std::vector<SiteRule>> rules_of_scope(Transaction& tx, const RuleScope& scope);
  Result<std::optional<SiteRule>> find_rule(Transaction& tx, const std::string& rule_id);
  // store.constraint when the id is taken.
  Result<void> insert_rule(Transaction& tx, const SiteRule& rule);
  // Deletes `rule` and raises the version of the rules left in its scope to `version`.
  Result<void> remove_rule(Transaction& tx, const SiteRule& rule, int64_t version);

  Result<void> put_thread_mode(Transaction& tx, const std::string& thread_id, PolicyMode mode);
  // An empty list deletes the setting: no list, every origin permitted.
  Result<void> put_host_permissions(Transaction& tx, const std::vector<HostPattern>& patterns);

 private:
  Result<void> put_setting(Transaction& tx, const std::string& key, const std::string& value);

  const Clock& clock_;
};

}  // namespace keel
