#include "engine/run_environment.h"

#include <algorithm>

#include "engine/engine_errors.h"
#include "util/canonical_json.h"
#include "util/sha256.h"

namespace keel {

using nlohmann::json;

namespace {

json price_json(const std::optional<providers::ModelPrice>& price) {
  if (!price) return nullptr;
  json out = {{"inputPerMillion", price->input_per_million}, {"outputPerMillion", price->output_per_million}};
  if (price->cached_input_per_million) out["cachedInputPerMillion"] = *price->cached_input_per_million;
  if (price->reasoning_output_per_million)
    out["reasoningOutputPerMillion"] = *price->reasoning_output_per_million;
  return out;
}

std::optional<providers::ModelPrice> price_of(const json& value) {
  if (!value.is_object()) return std::nullopt;
  auto number = [&](const char* key) -> std::optional<double> {
    if (!value.contains(key) || !value[key].is_number()) return std::nullopt;
    return value[key].get<double>();
  };
  providers::ModelPrice price;
  price.input_per_million = number("inputPerMillion").value_or(0);
  price.output_per_million = number("outputPerMillion").value_or(0);
  price.cached_input_per_million = number("cachedInputPerMillion");
  price.reasoning_output_per_million = number("reasoningOutputPerMillion");
  return price;
}

size_t depth_of(const json& value) {
  if (!value.is_structured()) return 0;
  size_t deepest = 0;
  for (const json& child : value) deepest = std::max(deepest, depth_of(child));
  return deepest + 1;
}

json transport_json(const ProviderTransport& t) {
  return {{"kind", t.kind},
          {"baseUrl", t.base_url},
          {"wireFormat", t.wire_format},
          {"credential", {{"id", t.credential_id}, {"shape", t.credential_shape}}}};
}

// Trust and provenance as §4 derives them from the level (what a version-1 entry left implicit).
void complete_v1_entry(json& entry) {
  const std::string level = entry.value("level", "builtin");
  if (!entry.contains("trust")) entry["trust"] = level == "builtin" ? "trusted" : "untrusted";
  if (!entry.contains("provenance")) {
    entry["provenance"] = level == "builtin" ? "tool" : level == "mcp" ? "mcp" : "page";
  }
}

// The snapshot is the one that was written, in a version this keel reads.
Result<void> verify_integrity(const EnvironmentSnapshotRecord& snapshot) {
  if (KEEL_TRY(json_fingerprint(snapshot.body)) != snapshot.digest) {
    return fail(codes::kSnapshotDigestMismatch, "the environment snapshot " + snapshot.id +
                                                    " does not match its digest; the store is damaged");
  }
  if (snapshot.version > kEnvironmentVersion || snapshot.version < 1) {
    return fail(codes::kSnapshotVersionUnsupported, "the environment snapshot " + snapshot.id +
                                                        " has version " + std::to_string(snapshot.version) +
                                                        "; this keel reads versions 1 to " +
                                                        std::to_string(kEnvironmentVersion));
  }
  return {};
}

}  // namespace

Result<EnvironmentSnapshotRecord> capture_environment(std::string snapshot_id, const ModelSettings& model,
                                                      const ProviderTransport& transport,
                                                      const ToolRegistryGeneration& tools,
                                                      const EnvironmentLimits& limits,
                                                      std::string_view model_name,
                                                      const SkillCatalog* skills) {
  json catalog = json::array();
  json mcp = json::array();
  json skill_entries = json::array();
  if (model.tool_use) {
    if (tools.tools().size() > limits.max_catalog_entries) {
      return fail(codes::kSnapshotTooManyTools, std::to_string(tools.tools().size()) +
                                                    " tools are more than a run's snapshot holds (" +
                                                    std::to_string(limits.max_catalog_entries) + ")");
    }
    for (const auto& [name, tool] : tools.tools()) {
      if (!model.vision && tool.descriptor->hidden_without_vision()) continue;
      json entry = tool.descriptor->catalog_entry();
      const std::string encoded = KEEL_TRY(canonical_json(entry));
      if (encoded.size() > limits.max_entry_bytes) {
        return fail(codes::kSnapshotEntryTooLarge, "tool " + name + " is described in " +
                                                       std::to_string(encoded.size()) + " bytes, more than " +
                                                       std::to_string(limits.max_entry_bytes));
      }
      if (tool.descriptor->binding.kind == ToolBinding::Kind::kMcp) {
        mcp.push_back({{"server", tool.descriptor->binding.server},
                       {"endpoint", tool.descriptor->binding.endpoint},
                       {"authIdentity", tool.descriptor->binding.auth_identity}});
      }
      catalog.push_back(std::move(entry));
    }
    // Skills only with the tool that reads them: a model told of skills it cannot read would be misled.
    if (skills != nullptr && tools.find(kReadSkillToolName) != nullptr) {
      for (const Skill& skill : skills->skills()) {
        skill_entries.push_back({{"name", skill.name},
                                 {"description", skill.description},
                                 {"source", to_string(skill.source)},
                                 {"digest", skill.digest}});
      }
    }
  }
  json body = {{"version", kEnvironmentVersion},
               {"systemPrompt", model.system_prompt},
               {"skills", std::move(skill_entries)},
               {"model",
                {{"model", model.model},
                 {"toolUse", model.tool_use},
                 {"vision", model.vision},
                 {"maxOutputTokens", model.max_output_tokens ? json(*model.max_output_tokens) : json()},
                 {"contextWindowTokens", model.context_window_tokens},
                 {"price", price_json(model.price)},
                 {"parameters", model.parameters}}},
               {"provider", transport_json(transport)},
               {"mcp", std::move(mcp)},
               {"toolCatalog", std::move(catalog)}};
  if (!model_name.empty()) body["model"]["name"] = std::string(model_name);
  if (depth_of(body) > limits.max_depth) {
    return fail(codes::kSnapshotTooDeep,
                "the run's environment nests deeper than " + std::to_string(limits.max_depth) + " levels");
  }
  const std::string encoded = KEEL_TRY(canonical_json(body));
  if (encoded.size() > limits.max_total_bytes) {
    return fail(codes::kSnapshotTooLarge, "the run's environment takes " + std::to_string(encoded.size()) +
                                              " bytes, more than " + std::to_string(limits.max_total_bytes));
  }
  EnvironmentSnapshotRecord record;
  record.id = std::move(snapshot_id);
  record.version = kEnvironmentVersion;
  record.digest = sha256_hex(encoded);
  record.body = std::move(body);
  return record;
}

std::shared_ptr<const ToolRegistryGeneration> tools_of_thread(
    std::shared_ptr<const ToolRegistryGeneration> tools,
    const std::optional<std::vector<std::string>>& mcp_servers) {
  if (!mcp_servers) return tools;
  return tools->filtered([&](const ToolDescriptor& d) {
    return d.binding.kind != ToolBinding::Kind::kMcp ||
           std::find(mcp_servers->begin(), mcp_servers->end(), d.binding.server) != mcp_servers->end();
  });
}

Result<void> verify_environment(const EnvironmentSnapshotRecord& snapshot, const ProviderTransport& transport,
                                const ToolRegistryGeneration& tools, const SkillCatalog* skills) {
  KEEL_TRY(verify_integrity(snapshot));
  std::vector<std::string> drift;
  const json was = snapshot.body.value("provider", json::object());
  const json now = transport_json(transport);
  for (const char* key : {"kind", "baseUrl", "wireFormat"}) {
    if (was.value(key, "") != now.value(key, "")) {
      drift.push_back("the provider's " + std::string(key) + " changed from '" + was.value(key, "") +
                      "' to '" + now.value(key, "") + "'");
    }
  }
  const json was_credential = was.value("credential", json::object());
  if (was_credential != now["credential"]) {
    drift.push_back("the credential reference changed from " + was_credential.dump() + " to " +
                    now["credential"].dump());
  }
  for (json entry : snapshot.body.value("toolCatalog", json::array())) {
    if (snapshot.version == 1) complete_v1_entry(entry);
    const std::string name = entry.value("name", "");
    const RegisteredTool* tool = tools.find(name);
    if (tool == nullptr) {
      drift.push_back("tool " + name + " is no longer registered");
      continue;
    }
    json current = tool->descriptor->catalog_entry();
    // The digest is compared through what it covers: a v1 entry's digest predates the completed fields.
    entry.erase("digest");
    current.erase("digest");
    if (entry != current) {
      const bool binding = entry.value("binding", json()) != current.value("binding", json());
      drift.push_back("tool " + name + " changed (" +
                      (binding ? "its MCP binding" : "its schema or security metadata") + ")");
    }
  }
  for (const json& entry : snapshot.body.value("skills", json::array())) {
    const std::string name = entry.is_object() ? entry.value("name", "") : "";
    const Skill* skill = skills == nullptr ? nullptr : skills->find(name);
    if (skill == nullptr) {
      drift.push_back("skill " + name + " is no longer available");
    } else if (skill->digest != (entry.is_object() ? entry.value("digest", "") : "")) {
      drift.push_back("skill " + name + " changed (its SKILL.md or a file beside it, in " + skill->dir + ")");
    }
  }
  if (!drift.empty()) {
    std::string message = "the run cannot continue where it stopped: ";
    for (size_t i = 0; i < drift.size(); ++i) message += (i ? "; " : "") + drift[i];
    return fail(codes::kEnvironmentDrift, message + ". Nothing was deleted; start a new turn to continue.");
  }
  return {};
}

Result<const CatalogModel*> model_of_run(const EnvironmentSnapshotRecord& snapshot,
                                         const ModelCatalog& models) {
  KEEL_TRY(verify_integrity(snapshot));  // a damaged snapshot says so, not that its model drifted
  const json model = snapshot.body.value("model", json::object());
  const std::string name = model.value("name", "");
  const CatalogModel* found = name.empty() ? models.default_model() : models.find(name);
  const std::string stop = "the run cannot continue where it stopped: ";
  const std::string after = ". Nothing was deleted; start a new turn to continue.";
  if (found == nullptr) {
    return fail(codes::kEnvironmentDrift, stop + "the model '" + name + "' is no longer configured" + after);
  }
  const std::string was_id = model.value("model", "");
  if (was_id != found->settings.model) {
    return fail(codes::kEnvironmentDrift, stop + "the model '" + found->name + "' now names '" +
                                              found->settings.model + "' at its provider, not '" + was_id +
                                              "'" + after);
  }
  return found;
}

Result<RunEnvironment> environment_of(const EnvironmentSnapshotRecord& snapshot) {
  const json& body = snapshot.body;
  RunEnvironment env;
  env.model.system_prompt = body.value("systemPrompt", env.model.system_prompt);
  const json model = body.value("model", json::object());
  env.model.model = model.value("model", env.model.model);
  env.model.tool_use = model.value("toolUse", true);
  env.model.vision = model.value("vision", true);
  if (model.contains("maxOutputTokens") && model["maxOutputTokens"].is_number_integer()) {
    env.model.max_output_tokens = model["maxOutputTokens"].get<int64_t>();
  }
  env.model.parameters = model.value("parameters", json::object());
  env.model.price = price_of(model.value("price", json()));
  // Snapshots written before the window was recorded: unknown (no compaction), as those runs had it.
  if (model.contains("contextWindowTokens") && model["contextWindowTokens"].is_number_integer()) {
    env.model.context_window_tokens = model["contextWindowTokens"].get<int64_t>();
  }
  for (const json& entry : body.value("toolCatalog", json::array())) {
    env.tool_names.push_back(entry.value("name", ""));
  }
  if (const std::string listed = skills_prompt(body.value("skills", json::array())); !listed.empty()) {
    env.model.system_prompt += (env.model.system_prompt.empty() ? "" : "\n\n") + listed;
  }
  return env;
}

std::string skills_prompt(const json& skills) {
  if (!skills.is_array() || skills.empty()) return "";
  std::string out =
      "# Skills\n"
      "Skills are instructions for particular tasks, with files that may come with them. Before doing a task "
      "that a skill below covers, read the skill with the read_skill tool (give its name; then its files, "
      "with `path`, as its instructions say).\n";
  for (const json& skill : skills) {
    if (!skill.is_object()) continue;
    out += "- " + skill.value("name", "") + ": " + skill.value("description", "") + "\n";
  }
  return out;
}

}  // namespace keel
