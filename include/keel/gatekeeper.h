// keel/gatekeeper.h — the seam every tool call passes before it runs (spec §2, §5, §6.1).
//
// The engine asks check() for each call, after the arguments validated and the target was resolved, and
// acts on the verdict:
//   kAllow — the call runs;
//   kDeny  — the model gets a tool_result saying it was refused (a refusal is not a tool failure);
//   kAsk   — the engine writes a durable approval (tool_call + ApprovalRecord + Run.pendingTool in one
//            transaction), sends approval.request with the decisions the verdict offers, and runs the call
//            only after a person accepted it.
// Before an approved call is dispatched the engine resolves its target again and calls check() again: a
// target that moved (a page now on another origin) or a verdict that became kDeny (a rule, a host
// permission or the mode changed meanwhile) is not acted on, and the model is told.
//
// Policy state (site rules, host permissions, each thread's mode) changes in two halves, so that it
// commits atomically with the command that asks for it: write_*() validates and writes the change in the
// caller's transaction and returns an opaque description of it; install() makes it effective once that
// transaction committed. acceptForSite uses write_site_rule(): a rule that lets calls like this one run on
// the same site without asking, confined to what the verdict's offer named (the thread, for a local tool
// the workspace folder) for the lifetime the person chose. A verdict offers acceptForSite only when such a
// rule would have an effect, and describes the rule it would write (`site_rule_offer`) so that the prompt
// can name it and the approval can store it.
//
// check() runs on a thread's actor and must not block (no store access); implementations keep what they
// decide from in memory. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"
#include "keel/error_codes.h"
#include "keel/store.h"
#include "keel/tool.h"
#include "keel/tool_registry.h"

namespace keel {

// A thread's policy mode (settable per thread; the engine's configuration gives the default).
enum class PolicyMode {
  kAskEveryWrite,  // reads run; every write asks, whatever the site rules allow
  kAskWrites,      // reads run; writes ask unless a site rule allows them (the default)
  kReadOnly,       // reads run; every write is refused
  kAllowAll,       // everything runs, except what a rule or a missing host permission refuses
};
std::string_view to_string(PolicyMode mode);
// nullopt for an unknown name. Names: ask_every_write, ask_writes, read_only, allow_all.
std::optional<PolicyMode> parse_policy_mode(std::string_view name);

struct GateRequest {
  std::string thread_id;
  std::string tool_call_id;
  const ToolDescriptor* descriptor = nullptr;  // never null; valid during check()
  const nlohmann::json* arguments = nullptr;   // never null; valid during check()
  ToolTarget target;
  std::string turn_id = {};  // the run's turn ("" when unknown): rules remembered for a turn hold only in it
};

struct GateVerdict {
  enum class Kind { kAllow, kAsk, kDeny };
  Kind kind = Kind::kAllow;
  std::string reason;  // kDeny: told to the model and the user; kAsk: why it asks (shown to the person)
  // kAsk: whether acceptForSite is offered (accept and decline always are).
  bool offers_accept_for_site = false;
  // The version of the rules the verdict was taken under (0 when no rule exists).
  int64_t rule_version = 0;
  // With offers_accept_for_site: the rule acceptForSite would write, for the person and for
  // write_site_rule(): {scope, scopeText, tool, effects, threadId, workspace?, lifetimes: [...],
  // defaultLifetime, text}. Null otherwise.
  nlohmann::json site_rule_offer = nullptr;
};

class Gatekeeper {
 public:
  virtual ~Gatekeeper() = default;
  virtual GateVerdict check(const GateRequest& request) = 0;

  // Writes the rule an acceptForSite of `request` stands for, confined as `offer` (the verdict's
  // site_rule_offer, as stored with the approval; null for an approval stored before offers named their
  // bounds: the thread and the gatekeeper's workspace) says, for `lifetime` (untilRevoked, session, turn;
  // "" = the offer's default). Errors: store errors; policy.no_site when the request has no site a rule
  // could name; policy.bad_rule for a lifetime the offer does not list.
  virtual Result<nlohmann::json> write_site_rule(Transaction& tx, const GateRequest& request,
                                                 const nlohmann::json& offer, std::string_view lifetime) {
    (void)tx;
    (void)request;
    (void)offer;
    (void)lifetime;
    return fail(codes::kPolicyUnsupported, "this gatekeeper keeps no site rules");
  }
  // A client's policy change, `method` one of the policy.* ops of docs/protocol.md (policy.setMode,
  // policy.addRule, policy.removeRule, policy.setHostPermissions) with its params. Errors: policy.* and
  // invalid_argument for malformed input (a malformed origin: policy.bad_origin), store errors.
  virtual Result<nlohmann::json> write_change(Transaction& tx, std::string_view method,
                                              const nlohmann::json& params) {
    (void)tx;
    (void)params;
    return fail(codes::kPolicyUnsupported,
                "this gatekeeper cannot change its policy (" + std::string(method) + ")");
  }
  // Makes a change returned by write_site_rule() or write_change() effective, once its transaction
  // committed.
  virtual void install(const nlohmann::json& change) { (void)change; }
  // The policy in effect, for policy.read: {defaultMode, threadModes, rules, hostPermissions}.
  virtual nlohmann::json describe() const { return nlohmann::json::object(); }
};

// Allows everything (tests and benchmarks that are not about policy).
class AllowAllGatekeeper final : public Gatekeeper {
 public:
  GateVerdict check(const GateRequest&) override { return {}; }
};

// Allows reads and refuses every tool whose effects are `write`.
class ReadOnlyGatekeeper final : public Gatekeeper {
 public:
  GateVerdict check(const GateRequest& request) override {
    if (request.descriptor->effects == ToolEffects::kWrite) {
      return {GateVerdict::Kind::kDeny,
              "the thread's policy is read-only; " + request.descriptor->name + " writes and was not run"};
    }
    return {};
  }
};

}  // namespace keel
