// engine/run_environment.h — RunEnvironmentSnapshot (spec §4, §5): what a run was started with, frozen.
//
// When a run starts, its environment is captured once: the system prompt, skills (each one's name,
// description, source and content digest, recorded only when the run's tools include read_skill), model
// parameters, the
// provider transport (kind, base URL, wire format) and the credential reference's shape (never a secret),
// the MCP bindings, and the tool catalog with each entry's digest. The body is bounded (total bytes,
// catalog entries, bytes per entry, nesting depth) before it is digested (SHA-256 of canonical JSON) and
// persisted with the run. A run always executes with its snapshot's prompt, model settings and tools, so
// a run continued after a restart uses what it started with, never the configuration of the day.
//
// verify_environment() is the check before a started run continues: the stored digest must match the
// body, the version must be one this keel reads, and the provider transport, the credential shape, every
// MCP binding, every tool's schema and normalized security metadata, and every skill's digest must equal the
// current ones. A
// version-1 snapshot (written before entries carried trust and provenance) is, once its own digest
// verifies, completed with the defaults its tools' levels imply and then compared.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_core.h"
#include "keel/error.h"
#include "keel/model_catalog.h"
#include "keel/skills.h"
#include "keel/tool_registry.h"
#include "store/records.h"

namespace keel {

inline constexpr int kEnvironmentVersion = 2;

struct EnvironmentLimits {
  size_t max_total_bytes = 2 * 1024 * 1024;
  size_t max_catalog_entries = 512;
  size_t max_entry_bytes = 128 * 1024;
  size_t max_depth = 32;
};

// The snapshot body for a run starting now, with the model's catalogue name `model_name` (recovery finds the
// model by it; "" records none, as snapshots written before the catalogue). Errors: snapshot.too_large,
// snapshot.too_many_tools, snapshot.entry_too_large, snapshot.too_deep (each naming the bound), json.* (not
// encodable). `skills` (optional) are recorded when the model uses tools and `tools` holds read_skill;
// otherwise the body's "skills" stays [] as in a keel without skills.
Result<EnvironmentSnapshotRecord> capture_environment(std::string snapshot_id, const ModelSettings& model,
                                                      const ProviderTransport& transport,
                                                      const ToolRegistryGeneration& tools,
                                                      const EnvironmentLimits& limits = {},
                                                      std::string_view model_name = {},
                                                      const SkillCatalog* skills = nullptr);

// The catalogue's model a started run continues with: the one its snapshot names (a snapshot without a name
// predates the catalogue and ran with the default model). Errors: snapshot.digest_mismatch and
// snapshot.version_unsupported first (as verify_environment()), environment.drift when that model is no
// longer configured or now names another model at its provider; verify_environment() then checks its
// transport.
Result<const CatalogModel*> model_of_run(const EnvironmentSnapshotRecord& snapshot,
                                         const ModelCatalog& models);

// The tools a thread's new run may use: every tool that is not an MCP server's, and the MCP tools of the
// servers the thread enables (`mcp_servers`, thread.setMcpServers; nullopt: every server's). The run's
// snapshot records exactly these, so recovery checks them and nothing else, and a change of the thread's
// choice reaches only the runs that start after it.
std::shared_ptr<const ToolRegistryGeneration> tools_of_thread(
    std::shared_ptr<const ToolRegistryGeneration> tools,
    const std::optional<std::vector<std::string>>& mcp_servers);

// Checks a stored snapshot against the current transport, tools and skills (null: none are loaded). Errors:
// snapshot.digest_mismatch, snapshot.version_unsupported, environment.drift (the message lists what changed,
// for a person, naming each skill that changed or disappeared).
Result<void> verify_environment(const EnvironmentSnapshotRecord& snapshot, const ProviderTransport& transport,
                                const ToolRegistryGeneration& tools, const SkillCatalog* skills = nullptr);

// The model settings and tool names a run executes with, read from its snapshot. A snapshot with skills
// gives a system prompt that ends with the list of its skills (skills_prompt()).
struct RunEnvironment {
  ModelSettings model;
  std::vector<std::string> tool_names;
};
Result<RunEnvironment> environment_of(const EnvironmentSnapshotRecord& snapshot);

// The part of the system prompt that tells the model of a snapshot's skills ("skills" entries); "" when
// there are none.
std::string skills_prompt(const nlohmann::json& skills);

}  // namespace keel
