#include "policy/policy_repository.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "keel/error_codes.h"
#include "store/json_column.h"

namespace keel {
namespace {

constexpr char kRuleColumns[] =
    "id, origin, tool, effects, decision, version, created_at, thread_id, workspace, lifetime, session_id, "
    "turn_id";

std::unexpected<Error> damaged_rule(const std::string& id, const std::string& problem) {
  return fail(codes::kStoreDecode, "site_rules row " + id + " is damaged: " + problem);
}

std::unexpected<Error> damaged_setting(const std::string& key, const std::string& problem) {
  return fail(codes::kStoreDecode, "settings row " + key + " is damaged: " + problem);
}

Result<SiteRule> rule_from_row(const SqlRow& row) {
  SiteRule rule;
  rule.id = row.text(0);
  Result<RuleScope> scope = parse_rule_scope(row.text(1));
  if (!scope) return damaged_rule(rule.id, "its scope cannot be read (" + scope.error().message() + ")");
  rule.scope = std::move(*scope);
  rule.tool = row.optional_text(2);
  if (rule.tool && !is_valid_tool_name(*rule.tool))
    return damaged_rule(rule.id, "its tool is not a tool name");
  if (const std::optional<std::string> effects = row.optional_text(3)) {
    rule.effects = parse_tool_effects(*effects);
    if (!rule.effects) return damaged_rule(rule.id, "unknown effects '" + *effects + "'");
  }
  const std::string decision = row.text(4);
  const std::optional<RuleDecision> parsed = parse_rule_decision(decision);
  if (!parsed) return damaged_rule(rule.id, "unknown decision '" + decision + "'");
  rule.decision = *parsed;
  rule.version = row.integer(5);
  rule.created_at = row.integer(6);
  rule.bounds.thread_id = row.optional_text(7);
  rule.bounds.workspace = row.optional_text(8);
  const std::string lifetime = row.text(9);
  const std::optional<RuleLifetime> parsed_lifetime = parse_rule_lifetime(lifetime);
  if (!parsed_lifetime) return damaged_rule(rule.id, "unknown lifetime '" + lifetime + "'");
  rule.bounds.lifetime = *parsed_lifetime;
  rule.bounds.session_id = row.optional_text(10);
  rule.bounds.turn_id = row.optional_text(11);
  if (rule.bounds.lifetime != RuleLifetime::kUntilRevoked && !rule.bounds.session_id)
    return damaged_rule(rule.id, "a rule of lifetime " + lifetime + " names no session");
  return rule;
}

Result<std::vector<SiteRule>> rules_from_rows(const std::vector<SqlRow>& rows) {
  std::vector<SiteRule> rules;
  rules.reserve(rows.size());
  for (const SqlRow& row : rows) rules.push_back(KEEL_TRY(rule_from_row(row)));
  return rules;
}

std::optional<int64_t> parse_decimal(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

Result<std::vector<HostPattern>> host_permissions_from_setting(const std::string& text) {
  const nlohmann::json value = KEEL_TRY(decode_json_column(text, PolicyRepository::kHostPermissionsKey));
  if (!value.is_array()) {
    return damaged_setting(PolicyRepository::kHostPermissionsKey, "not a JSON array of host patterns");
  }
  std::vector<HostPattern> patterns;
  for (const nlohmann::json& item : value) {
    if (!item.is_string()) {
      return damaged_setting(PolicyRepository::kHostPermissionsKey, "a host pattern is not a string");
    }
    Result<HostPattern> pattern = HostPattern::parse(item.get<std::string>());
    if (!pattern) return damaged_setting(PolicyRepository::kHostPermissionsKey, pattern.error().message());
    patterns.push_back(std::move(*pattern));
  }
  return patterns;
}

// The highest version any rule row carries: the policy version can never be below it.
Result<int64_t> highest_rule_version(Transaction& tx) {
  const std::optional<SqlRow> row = KEEL_TRY(tx.query_one("SELECT MAX(version) FROM site_rules"));
  return row ? row->integer(0) : 0;
}

}  // namespace

Result<StoredPolicy> PolicyRepository::load(Transaction& tx) {
  StoredPolicy policy;
  policy.rules = KEEL_TRY(rules_from_rows(
      KEEL_TRY(tx.query(std::string("SELECT ") + kRuleColumns + " FROM site_rules ORDER BY version, id"))));
  for (const SiteRule& rule : policy.rules) policy.version = std::max(policy.version, rule.version);

  // Every policy key, and no other: '/' is the character after '.'.
  const std::vector<SqlRow> settings = KEEL_TRY(
      tx.query("SELECT key, value FROM settings WHERE key >= ? AND key < ?", {"policy.", "policy/"}));
  const std::string_view thread_mode_prefix = kThreadModePrefix;
  for (const SqlRow& row : settings) {
    const std::string key = row.text(0);
    const std::string value = row.text(1);
    if (key == kVersionKey) {
      const std::optional<int64_t> version = parse_decimal(value);
      if (!version) return damaged_setting(key, "'" + value + "' is not a version number");
      policy.version = std::max(policy.version, *version);
    } else if (key == kHostPermissionsKey) {
      policy.host_permissions = KEEL_TRY(host_permissions_from_setting(value));
    } else if (key.starts_with(thread_mode_prefix)) {
      const std::optional<PolicyMode> mode = parse_policy_mode(value);
      if (!mode || key.size() == thread_mode_prefix.size()) {
        return damaged_setting(key, "'" + value + "' is not a policy mode of a thread");
      }
      policy.thread_modes.emplace(key.substr(thread_mode_prefix.size()), *mode);
    }
    // Any other policy.* key was written by a newer keel; this one has no use for it.
  }
  return policy;
}

Result<int64_t> PolicyRepository::next_version(Transaction& tx) {
  int64_t last = KEEL_TRY(highest_rule_version(tx));
  const std::optional<SqlRow> row =
      KEEL_TRY(tx.query_one("SELECT value FROM settings WHERE key = ?", {kVersionKey}));
  if (row) {
    const std::optional<int64_t> stored = parse_decimal(row->text(0));
    if (!stored) return damaged_setting(kVersionKey, "'" + row->text(0) + "' is not a version number");
    last = std::max(last, *stored);
  }
  KEEL_TRY(put_setting(tx, kVersionKey, std::to_string(last + 1)));
  return last + 1;
}

Result<std::vector<SiteRule>> PolicyRepository::rules_of_scope(Transaction& tx, const RuleScope& scope) {
  return rules_from_rows(KEEL_TRY(tx.query(
      std::string("SELECT ") + kRuleColumns + " FROM site_rules WHERE origin = ? ORDER BY version, id",
      {scope.key()})));
}

Result<std::optional<SiteRule>> PolicyRepository::find_rule(Transaction& tx, const std::string& rule_id) {
  const std::optional<SqlRow> row = KEEL_TRY(
      tx.query_one(std::string("SELECT ") + kRuleColumns + " FROM site_rules WHERE id = ?", {rule_id}));
  if (!row) return std::optional<SiteRule>();
  return std::optional<SiteRule>(KEEL_TRY(rule_from_row(*row)));
}

Result<void> PolicyRepository::insert_rule(Transaction& tx, const SiteRule& rule) {
  const std::optional<std::string_view> effects =
      rule.effects ? std::optional<std::string_view>(to_string(*rule.effects)) : std::nullopt;
  KEEL_TRY(tx.execute(
      "INSERT INTO site_rules (id, origin, tool, effects, decision, version, created_at, updated_at, "
      "thread_id, workspace, lifetime, session_id, turn_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      {rule.id, rule.scope.key(), rule.tool, effects, to_string(rule.decision), rule.version, rule.created_at,
       clock_.now_unix_ms(), rule.bounds.thread_id, rule.bounds.workspace, to_string(rule.bounds.lifetime),
       rule.bounds.session_id, rule.bounds.turn_id}));
  return {};
}

Result<void> PolicyRepository::remove_rule(Transaction& tx, const SiteRule& rule, int64_t version) {
  KEEL_TRY(tx.execute("DELETE FROM site_rules WHERE id = ?", {rule.id}));
  KEEL_TRY(tx.execute("UPDATE site_rules SET version = ?, updated_at = ? WHERE origin = ? AND version < ?",
                      {version, clock_.now_unix_ms(), rule.scope.key(), version}));
  return {};
}

Result<void> PolicyRepository::put_thread_mode(Transaction& tx, const std::string& thread_id,
                                               PolicyMode mode) {
  return put_setting(tx, kThreadModePrefix + thread_id, std::string(to_string(mode)));
}

Result<void> PolicyRepository::put_host_permissions(Transaction& tx,
                                                    const std::vector<HostPattern>& patterns) {
  if (patterns.empty()) {
    KEEL_TRY(tx.execute("DELETE FROM settings WHERE key = ?", {kHostPermissionsKey}));
    return {};
  }
  nlohmann::json texts = nlohmann::json::array();
  for (const HostPattern& pattern : patterns) texts.push_back(pattern.to_string());
  return put_setting(tx, kHostPermissionsKey, KEEL_TRY(encode_json_column(texts)));
}

Result<void> PolicyRepository::put_setting(Transaction& tx, const std::string& key,
                                           const std::string& value) {
  // UPDATE, then INSERT when there was no row: portable SQL (store.h), and the caller's write transaction
  // keeps anyone else from inserting the key in between.
  const int64_t now = clock_.now_unix_ms();
  const int64_t changed =
      KEEL_TRY(tx.execute("UPDATE settings SET value = ?, updated_at = ? WHERE key = ?", {value, now, key}));
  if (changed == 0) {
    KEEL_TRY(tx.execute("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)", {key, value, now}));
  }
  return {};
}

}  // namespace keel
