// policy/policy_gatekeeper.h — keel's Gatekeeper: policy modes, site rules and host permissions, kept in
// the store and decided from memory (docs/policy.md has the full semantics).
//
// check() decides from an immutable snapshot of the policy and never touches the store:
//   1. The call's scope: the target's origin when it names one (a target origin that does not parse is
//      refused), else its MCP server (target.server_id, else the binding of an MCP tool), else local.
//   2. Host permissions: when a list is set, a call on an origin no pattern matches is refused. No list
//      (the default, or after setting an empty one) permits every origin.
//   3. The scope's rules that cover the call (tool name and effects): a deny rule refuses, in every mode.
//   4. The thread's mode (its own, else the default): read_only refuses every write, even one an ask or
//      allow rule covers.
//   5. An ask rule asks. An allow rule allows, except a write in ask_every_write, which always asks.
//   6. Without a rule: reads run (trusted or not); writes run in allow_all and ask in ask_writes and
//      ask_every_write.
// A verdict carries the scope's rule version (the highest version of its rules, 0 when it has none) and
// offers acceptForSite only for the ask of ask_writes that no ask rule caused: the one case an allow rule
// for the call would change.
//
// Changes are two-phase (policy/gatekeeper.h): write_site_rule() and write_change() validate, write in
// the caller's transaction and return a JSON change; install() applies it once that transaction
// committed. install() is idempotent and order-independent: each change carries its policy version, and a
// change older than what is installed for its subject (a thread's mode, the host permission list, a rule
// already removed, anything the store already held at open()) is ignored, so concurrent committers may
// install in any order. A change this gatekeeper did not write is ignored too: the store stays the truth
// and the next open() reads it.
//
// Thread-safe: check() and describe() may run on any thread while install() runs on another; they read a
// snapshot that install() replaces under a mutex held only to swap a pointer.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "keel/clock.h"
#include "keel/error.h"
#include "keel/ids.h"
#include "keel/store.h"
#include "policy/gatekeeper.h"
#include "policy/policy_repository.h"
#include "util/thread_annotations.h"

namespace keel {

struct PolicyState;

// The engine session a gatekeeper decides for: remembered decisions of lifetime "session" or "turn" hold
// only in the session that wrote them, and local ones only in the workspace they name.
struct PolicySession {
  std::string id;         // unique per engine start
  std::string workspace;  // the workspace folder's canonical path ("" when the engine has none)
};

class PolicyGatekeeper final : public Gatekeeper {
 public:
  // Loads rules, thread modes and host permissions from `store`; `default_mode` applies to every thread
  // without a mode of its own. Rules remembered for an earlier session (lifetime session or turn, another
  // session id) can never hold again: open() removes them (one write transaction, only when there are
  // some). `clock` and `ids` must outlive the gatekeeper; `store` is used only here.
  // Errors: store errors; store.decode_failed naming a damaged row.
  static Result<std::unique_ptr<PolicyGatekeeper>> open(Store& store, const Clock& clock, IdSource& ids,
                                                        PolicyMode default_mode, PolicySession session = {});
  ~PolicyGatekeeper() override;

  GateVerdict check(const GateRequest& request) override;

  // Writes an allow rule for the request's scope, tool name and effects ({"kind":"rule","rule":{...}}),
  // bounded to the request's thread, to the offer's workspace (local scope only) and to `lifetime`. The
  // same rule already stored is returned instead of a second one. Errors: policy.bad_origin (the target's
  // origin does not parse), policy.bad_rule (an MCP server name no rule can hold, a lifetime not offered),
  // store errors.
  Result<nlohmann::json> write_site_rule(Transaction& tx, const GateRequest& request,
                                         const nlohmann::json& offer, std::string_view lifetime) override;
  // Methods and params:
  //   policy.setMode {threadId, mode}               policy.bad_mode; invalid_argument without a threadId
  //                                                 (the default mode is the engine's configuration)
  //   policy.addRule {scope, tool?, effects?, decision}   policy.bad_origin, policy.bad_rule; adding a rule
  //                                                 equal to a stored one returns the stored one
  //   policy.removeRule {ruleId}                    policy.rule_not_found
  //   policy.setHostPermissions {patterns: [...]}   policy.bad_origin; [] removes the list
  // Any other method: policy.unsupported. Params that are not an object, or lack a required field of the
  // right type: invalid_argument. Nothing is written when an error is returned for input.
  Result<nlohmann::json> write_change(Transaction& tx, std::string_view method,
                                      const nlohmann::json& params) override;
  void install(const nlohmann::json& change) override;
  // {defaultMode, threadModes: {threadId: mode}, rules: [rule...] (by version), hostPermissions: [...]}.
  nlohmann::json describe() const override;

  // Bounds on client input.
  static constexpr size_t kMaxHostPermissions = 1000;
  static constexpr size_t kMaxThreadIdBytes = 256;

 private:
  // Lets open() alone construct one (through std::make_unique, which needs a public constructor).
  struct ConstructionKey {
    explicit ConstructionKey() = default;
  };

 public:
  PolicyGatekeeper(ConstructionKey, const Clock& clock, IdSource& ids,
                   std::shared_ptr<const PolicyState> state);

 private:
  std::shared_ptr<const PolicyState> snapshot() const EXCLUDES(snapshot_mu_);

  Result<nlohmann::json> set_mode(Transaction& tx, const nlohmann::json& params);
  Result<nlohmann::json> add_rule(Transaction& tx, const RuleSpec& spec);
  Result<nlohmann::json> remove_rule(Transaction& tx, const nlohmann::json& params);
  Result<nlohmann::json> set_host_permissions(Transaction& tx, const nlohmann::json& params);

  const Clock& clock_;
  IdSource& ids_;
  PolicyRepository repository_;
  Mutex install_mu_;           // serializes install(): each builds on the snapshot before it
  mutable Mutex snapshot_mu_;  // held only to copy or swap the pointer
  std::shared_ptr<const PolicyState> state_ GUARDED_BY(snapshot_mu_);
};

}  // namespace keel
