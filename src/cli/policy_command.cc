// keel policy list | revoke — the rules the gatekeeper keeps (docs/policy.md): decisions a person remembered
// from an approval, bounded to a thread, a workspace and a lifetime, and site rules added by clients.
//
// list only reads, so it works beside a running engine (WAL readers never block it) and shows that engine's
// session-long decisions too. revoke takes the store lock, like every command that writes without an
// engine: while an engine runs, its client sends policy.removeRule, which takes effect at once.
#include <ostream>

#include "cli/commands.h"
#include "cli/engine_host.h"
#include "keel/clock.h"
#include "policy/policy_repository.h"

namespace keel::cli {

using nlohmann::json;

namespace {

int print_error(const CommandContext& context, const Error& error, int status = kExitFailed) {
  *context.err << "keel policy: " << error.to_string() << "\n";
  return status;
}

// "allow write_file (write) on this machine — in thread T, in workspace /w, until keel exits"
std::string describe_rule(const SiteRule& rule) {
  std::string text = std::string(to_string(rule.decision)) + " " + (rule.tool ? *rule.tool : "every tool");
  if (rule.effects) text += " (" + std::string(to_string(*rule.effects)) + ")";
  text += " on " + rule.scope.description();
  std::string bounds = rule.bounds.description();
  if (rule.bounds.lifetime == RuleLifetime::kSession && rule.bounds.session_id) {
    bounds += " (session " + *rule.bounds.session_id + ")";
  }
  text += " — " + (bounds.empty() ? std::string("everywhere, until revoked") : bounds);
  return text;
}

int list_rules(const CommandContext& context, Store& store, bool as_json) {
  SystemClock clock;
  PolicyRepository repository(clock);
  auto tx = store.begin(TxMode::kRead);
  if (!tx) return print_error(context, tx.error());
  auto stored = repository.load(**tx);
  if (!stored) return print_error(context, stored.error());
  if (as_json) {
    json rules = json::array();
    for (const SiteRule& rule : stored->rules) rules.push_back(to_json(rule));
    *context.out << json{{"rules", std::move(rules)}}.dump() << "\n";
    return kExitOk;
  }
  if (stored->rules.empty()) {
    *context.out << "no rules: every write asks as the policy mode says\n";
    return kExitOk;
  }
  for (const SiteRule& rule : stored->rules) *context.out << rule.id << "  " << describe_rule(rule) << "\n";
  return kExitOk;
}

int revoke_rule(const CommandContext& context, Store& store, const PolicyOptions& options) {
  SystemClock clock;
  PolicyRepository repository(clock);
  auto removed = [&]() -> Result<SiteRule> {
    auto tx = KEEL_TRY(store.begin(TxMode::kWrite));
    const std::optional<SiteRule> rule = KEEL_TRY(repository.find_rule(*tx, options.rule_id));
    if (!rule) return fail(codes::kPolicyRuleNotFound, "there is no rule " + options.rule_id);
    const int64_t version = KEEL_TRY(repository.next_version(*tx));
    KEEL_TRY(repository.remove_rule(*tx, *rule, version));
    KEEL_TRY(tx->commit());
    return *rule;
  }();
  if (!removed) return print_error(context, removed.error());
  if (options.json) {
    *context.out << json{{"revoked", to_json(*removed)}}.dump() << "\n";
  } else {
    *context.out << "revoked " << removed->id << ": " << describe_rule(*removed) << "\n";
  }
  return kExitOk;
}

}  // namespace

int policy_command(const CommandContext& context, const PolicyOptions& options) {
  const bool changes = options.action == "revoke";
  auto handle = open_store(context.config, /*exclusive=*/changes);
  if (!handle) return print_error(context, handle.error(), kExitSetup);
  if (!changes) return list_rules(context, *handle->store, options.json);
  return revoke_rule(context, *handle->store, options);
}

}  // namespace keel::cli
