#include "policy/policy_gatekeeper.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "keel/error_codes.h"
#include "policy/policy_state.h"
#include "util/thread_annotations.h"

namespace keel {
namespace {

using nlohmann::json;

// Change kinds: the opaque JSON write_*() returns and install() reads.
constexpr char kRuleChange[] = "rule";
constexpr char kRemoveRuleChange[] = "remove_rule";
constexpr char kThreadModeChange[] = "thread_mode";
constexpr char kHostPermissionsChange[] = "host_permissions";

std::unexpected<Error> invalid(std::string message) {
  return fail(codes::kInvalidArgument, std::move(message));
}

Result<void> require_object(std::string_view method, const json& params) {
  if (!params.is_object()) return invalid(std::string(method) + " takes an object of params");
  return {};
}

Result<void> refuse_unknown_fields(std::string_view method, const json& params,
                                   std::initializer_list<std::string_view> known) {
  for (const auto& [field, value] : params.items()) {
    (void)value;
    if (std::find(known.begin(), known.end(), field) == known.end()) {
      return invalid(std::string(method) + " has no param \"" + field + "\"");
    }
  }
  return {};
}

// A non-empty string field of at most `max_bytes`, or nullopt.
const std::string* string_field(const json& object, const char* field, size_t max_bytes) {
  const auto it = object.find(field);
  if (it == object.end() || !it->is_string()) return nullptr;
  const std::string& text = it->get_ref<const std::string&>();
  return text.empty() || text.size() > max_bytes ? nullptr : &text;
}

Result<int64_t> version_of(const json& change) {
  const auto it = change.find("version");
  if (it == change.end() || !it->is_number_integer()) return invalid("a policy change lacks its version");
  return it->get<int64_t>();
}

json rule_change(const SiteRule& rule) { return json{{"kind", kRuleChange}, {"rule", to_json(rule)}}; }

// Applies one change to `state`. Errors only for a change none of write_*() returns.
Result<void> apply(PolicyState& state, const json& change) {
  if (!change.is_object()) return invalid("a policy change is an object");
  const std::string* kind = string_field(change, "kind", 64);
  if (!kind) return invalid("a policy change lacks its kind");
  if (*kind == kRuleChange) {
    const auto rule = change.find("rule");
    if (rule == change.end()) return invalid("a rule change lacks its rule");
    state.add_rule(KEEL_TRY(site_rule_from_json(*rule)));
    return {};
  }
  const int64_t version = KEEL_TRY(version_of(change));
  if (*kind == kRemoveRuleChange) {
    const std::string* rule_id = string_field(change, "ruleId", SIZE_MAX);
    const std::string* scope = string_field(change, "scope", SIZE_MAX);
    if (!rule_id || !scope) return invalid("a rule removal lacks its rule id or scope");
    state.remove_rule(*rule_id, *scope, version);
    return {};
  }
  if (*kind == kThreadModeChange) {
    const std::string* thread_id = string_field(change, "threadId", SIZE_MAX);
    const std::string* mode_name = string_field(change, "mode", 64);
    const std::optional<PolicyMode> mode = mode_name ? parse_policy_mode(*mode_name) : std::nullopt;
    if (!thread_id || !mode) return invalid("a mode change lacks its thread id or mode");
    state.set_thread_mode(*thread_id, *mode, version);
    return {};
  }
  if (*kind == kHostPermissionsChange) {
    const auto texts = change.find("patterns");
    if (texts == change.end() || !texts->is_array())
      return invalid("a host permission change lacks its patterns");
    std::vector<HostPattern> patterns;
    for (const json& text : *texts) {
      if (!text.is_string()) return invalid("a host pattern is a string");
      patterns.push_back(KEEL_TRY(HostPattern::parse(text.get<std::string>())));
    }
    state.set_host_permissions(std::move(patterns), version);
    return {};
  }
  return invalid("unknown policy change kind '" + *kind + "'");
}

}  // namespace

Result<std::unique_ptr<PolicyGatekeeper>> PolicyGatekeeper::open(Store& store, const Clock& clock,
                                                                 IdSource& ids, PolicyMode default_mode,
                                                                 PolicySession session) {
  PolicyRepository repository(clock);
  auto tx = KEEL_TRY(store.begin(TxMode::kRead));
  StoredPolicy stored = KEEL_TRY(repository.load(*tx));
  KEEL_TRY(tx->commit());
  const auto stale = [&](const SiteRule& rule) {
    return rule.bounds.lifetime != RuleLifetime::kUntilRevoked && rule.bounds.session_id != session.id;
  };
  if (std::any_of(stored.rules.begin(), stored.rules.end(), stale)) {
    // Removed like policy.removeRule removes a rule, so the versions of the scopes they leave still change.
    auto write = KEEL_TRY(store.begin(TxMode::kWrite));
    for (const SiteRule& rule : stored.rules) {
      if (!stale(rule)) continue;
      const int64_t version = KEEL_TRY(repository.next_version(*write));
      KEEL_TRY(repository.remove_rule(*write, rule, version));
    }
    stored = KEEL_TRY(repository.load(*write));
    KEEL_TRY(write->commit());
  }
  PolicyState loaded = PolicyState::from_store(stored, default_mode);
  loaded.session_id = std::move(session.id);
  loaded.workspace = std::move(session.workspace);
  auto state = std::make_shared<const PolicyState>(std::move(loaded));
  return std::make_unique<PolicyGatekeeper>(ConstructionKey{}, clock, ids, std::move(state));
}

PolicyGatekeeper::PolicyGatekeeper(ConstructionKey, const Clock& clock, IdSource& ids,
                                   std::shared_ptr<const PolicyState> state)
    : clock_(clock), ids_(ids), repository_(clock), state_(std::move(state)) {}

PolicyGatekeeper::~PolicyGatekeeper() = default;

std::shared_ptr<const PolicyState> PolicyGatekeeper::snapshot() const {
  MutexLock lock(snapshot_mu_);
  return state_;
}

GateVerdict PolicyGatekeeper::check(const GateRequest& request) { return decide(*snapshot(), request); }

Result<json> PolicyGatekeeper::write_site_rule(Transaction& tx, const GateRequest& request, const json& offer,
                                               std::string_view lifetime) {
  const std::string& tool = request.descriptor->name;
  if (!is_valid_tool_name(tool))
    return fail(codes::kPolicyBadRule, "no rule can name the tool '" + tool + "'");
  const std::shared_ptr<const PolicyState> state = snapshot();
  RuleSpec spec{KEEL_TRY(scope_of_call(request)), tool, request.descriptor->effects, RuleDecision::kAllow};
  // Confined to what the person was shown: the offer stored with the approval names the workspace (an
  // approval stored before offers did is confined to this engine's); the thread is always the call's.
  spec.bounds.thread_id = request.thread_id;
  if (offer.is_object() && offer.contains("workspace")) {
    if (offer["workspace"].is_string()) spec.bounds.workspace = offer["workspace"].get<std::string>();
  } else if (!spec.scope.origin() && spec.scope.key() == RuleScope::local().key()) {
    spec.bounds.workspace = state->workspace;
  }
  const std::string chosen = lifetime.empty() ? (offer.is_object() ? offer.value("defaultLifetime", "session")
                                                                   : std::string("session"))
                                              : std::string(lifetime);
  const std::optional<RuleLifetime> parsed = parse_rule_lifetime(chosen);
  if (!parsed) {
    return fail(
        codes::kPolicyBadRule,
        "a remembered decision lasts for the turn, the session or until revoked, not '" + chosen + "'");
  }
  spec.bounds.lifetime = *parsed;
  if (*parsed != RuleLifetime::kUntilRevoked) spec.bounds.session_id = state->session_id;
  if (*parsed == RuleLifetime::kTurn) spec.bounds.turn_id = request.turn_id;
  return add_rule(tx, spec);
}

Result<json> PolicyGatekeeper::write_change(Transaction& tx, std::string_view method, const json& params) {
  if (method == "policy.setMode") return set_mode(tx, params);
  if (method == "policy.addRule") {
    KEEL_TRY(require_object(method, params));
    return add_rule(tx, KEEL_TRY(parse_rule_spec(params)));
  }
  if (method == "policy.removeRule") return remove_rule(tx, params);
  if (method == "policy.setHostPermissions") return set_host_permissions(tx, params);
  return fail(codes::kPolicyUnsupported, "no policy method '" + std::string(method) + "'");
}

Result<json> PolicyGatekeeper::set_mode(Transaction& tx, const json& params) {
  KEEL_TRY(require_object("policy.setMode", params));
  KEEL_TRY(refuse_unknown_fields("policy.setMode", params, {"threadId", "mode"}));
  const std::string* thread_id = string_field(params, "threadId", kMaxThreadIdBytes);
  if (!thread_id) {
    return invalid(
        "policy.setMode needs a threadId (1-256 bytes); the default mode for every thread comes from "
        "the engine's configuration");
  }
  const auto mode_field = params.find("mode");
  const std::optional<PolicyMode> mode = mode_field != params.end() && mode_field->is_string()
                                             ? parse_policy_mode(mode_field->get<std::string>())
                                             : std::nullopt;
  if (!mode) {
    return fail(codes::kPolicyBadMode,
                "policy.setMode needs a mode: ask_every_write, ask_writes, read_only or "
                "allow_all");
  }
  const int64_t version = KEEL_TRY(repository_.next_version(tx));
  KEEL_TRY(repository_.put_thread_mode(tx, *thread_id, *mode));
  return json{{"kind", kThreadModeChange},
              {"threadId", *thread_id},
              {"mode", to_string(*mode)},
              {"version", version}};
}

Result<json> PolicyGatekeeper::add_rule(Transaction& tx, const RuleSpec& spec) {
  for (const SiteRule& existing : KEEL_TRY(repository_.rules_of_scope(tx, spec.scope))) {
    if (existing.says(spec)) return rule_change(existing);
  }
  SiteRule rule;
  rule.id = ids_.next_id();
  rule.scope = spec.scope;
  rule.tool = spec.tool;
  rule.effects = spec.effects;
  rule.decision = spec.decision;
  rule.bounds = spec.bounds;
  rule.version = KEEL_TRY(repository_.next_version(tx));
  rule.created_at = clock_.now_unix_ms();
  KEEL_TRY(repository_.insert_rule(tx, rule));
  return rule_change(rule);
}

Result<json> PolicyGatekeeper::remove_rule(Transaction& tx, const json& params) {
  KEEL_TRY(require_object("policy.removeRule", params));
  KEEL_TRY(refuse_unknown_fields("policy.removeRule", params, {"ruleId"}));
  const std::string* rule_id = string_field(params, "ruleId", SIZE_MAX);
  if (!rule_id) return invalid("policy.removeRule needs a ruleId");
  const std::optional<SiteRule> rule = KEEL_TRY(repository_.find_rule(tx, *rule_id));
  if (!rule) return fail(codes::kPolicyRuleNotFound, "there is no site rule " + *rule_id);
  const int64_t version = KEEL_TRY(repository_.next_version(tx));
  KEEL_TRY(repository_.remove_rule(tx, *rule, version));
  return json{
      {"kind", kRemoveRuleChange}, {"ruleId", rule->id}, {"scope", rule->scope.key()}, {"version", version}};
}

Result<json> PolicyGatekeeper::set_host_permissions(Transaction& tx, const json& params) {
  KEEL_TRY(require_object("policy.setHostPermissions", params));
  KEEL_TRY(refuse_unknown_fields("policy.setHostPermissions", params, {"patterns"}));
  const auto texts = params.find("patterns");
  if (texts == params.end() || !texts->is_array()) {
    return invalid(
        "policy.setHostPermissions needs patterns: an array of host patterns ([] removes the list)");
  }
  if (texts->size() > kMaxHostPermissions) {
    return invalid("at most " + std::to_string(kMaxHostPermissions) + " host permission patterns");
  }
  std::vector<HostPattern> patterns;
  json canonical = json::array();
  for (const json& text : *texts) {
    if (!text.is_string()) return invalid("a host permission pattern is a string");
    HostPattern pattern = KEEL_TRY(HostPattern::parse(text.get<std::string>()));
    if (std::find(patterns.begin(), patterns.end(), pattern) != patterns.end()) continue;
    canonical.push_back(pattern.to_string());
    patterns.push_back(std::move(pattern));
  }
  const int64_t version = KEEL_TRY(repository_.next_version(tx));
  KEEL_TRY(repository_.put_host_permissions(tx, patterns));
  return json{{"kind", kHostPermissionsChange}, {"patterns", std::move(canonical)}, {"version", version}};
}

void PolicyGatekeeper::install(const json& change) {
  MutexLock install_lock(install_mu_);
  auto next = std::make_shared<PolicyState>(*snapshot());
  if (!apply(*next, change)) return;  // not a change of ours: the store stays the truth (header comment)
  MutexLock lock(snapshot_mu_);
  state_ = std::move(next);
}

json PolicyGatekeeper::describe() const {
  const std::shared_ptr<const PolicyState> state = snapshot();
  json thread_modes = json::object();
  for (const auto& [thread_id, mode] : state->thread_modes) thread_modes[thread_id] = to_string(mode.mode);
  std::vector<const SiteRule*> rules;
  for (const auto& [key, scope] : state->scopes) {
    for (const SiteRule& rule : scope.rules) rules.push_back(&rule);
  }
  std::sort(rules.begin(), rules.end(), [](const SiteRule* a, const SiteRule* b) {
    return a->version != b->version ? a->version < b->version : a->id < b->id;
  });
  json rule_list = json::array();
  for (const SiteRule* rule : rules) rule_list.push_back(to_json(*rule));
  json host_permissions = json::array();
  for (const HostPattern& pattern : state->host_permissions) host_permissions.push_back(pattern.to_string());
  return json{{"defaultMode", to_string(state->default_mode)},
              {"threadModes", std::move(thread_modes)},
              {"rules", std::move(rule_list)},
              {"hostPermissions", std::move(host_permissions)}};
}

}  // namespace keel
