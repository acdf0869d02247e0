// keel/tool_registry.h — ToolRegistry (spec §4): the single boundary for a tool's capability metadata.
//
// register_tool() validates a tool's spec (name, label, description, parameter schema, binding) and
// freezes it into a ToolDescriptor with §4's defaults applied once, here, so no caller keeps a second set:
//   effects read  -> recovery retry-safe;         effects write -> recovery never-retry;
//   level builtin -> trusted,   provenance tool;  level mcp     -> untrusted, provenance mcp;
//   level L0/L1/L2 -> untrusted, provenance page.
// The mcp level must use an MCP binding naming server, endpoint and auth identity; every other level must
// use a local binding, so a remote implementation never inherits builtin's trusted defaults.
//
// Each descriptor has a SHA-256 digest over its canonical catalog entry (name, schema, security metadata,
// binding): the run's tool catalog and the provider schema are both generated from the descriptor, and a
// recovered run compares digests to detect drift.
//
// Generations: every change creates a new immutable ToolRegistryGeneration; snapshot() hands out the
// current one atomically (implementation + descriptor + validator together). A run binds its tools from
// one generation and never looks an implementation up by name in the live registry again, so a tool
// replaced meanwhile (an MCP reconnect) cannot change a running turn. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "keel/error.h"
#include "keel/provider.h"
#include "keel/thread_annotations.h"
#include "keel/tool.h"

namespace keel {

struct ToolDescriptor {
  std::string name;
  std::string label;
  std::string description;
  nlohmann::json parameters;  // the JSON Schema, normalized (type object)
  ToolLevel level = ToolLevel::kBuiltin;
  ToolEffects effects = ToolEffects::kRead;
  ToolRecovery recovery = ToolRecovery::kRetrySafe;
  ToolTrust trust = ToolTrust::kTrusted;
  ToolProvenance provenance = ToolProvenance::kTool;
  ToolBinding binding;
  bool needs_vision = false;  // ToolSpec::needs_vision
  std::string digest;         // lowercase hex SHA-256 of canonical(catalog_entry() without "digest")

  // The RunEnvironmentSnapshot.toolCatalog entry: everything above, as JSON ("needsVision" only when true,
  // so the entries and digests of tools from before the field are unchanged).
  nlohmann::json catalog_entry() const;
  // Whether a model without vision is not offered the tool: needs_vision, or the name "screenshot" (how
  // runs recorded before needs_vision existed tell it).
  bool hidden_without_vision() const { return needs_vision || name == "screenshot"; }
  // The schema offered to the model.
  ProviderTool provider_tool() const;
  // "level=builtin effects=write recovery=never-retry binding=local", for messages.
  std::string summary() const;
};

// Validates arguments against a descriptor's schema (valijson). Immutable; thread-safe.
class ParameterValidator {
 public:
  virtual ~ParameterValidator() = default;
  // invalid_argument naming every violation ("/path: message; ...").
  virtual Result<void> validate(const nlohmann::json& arguments) const = 0;
};

// Compiles a JSON Schema. invalid_argument when it is not a usable schema.
Result<std::shared_ptr<const ParameterValidator>> compile_parameter_schema(const nlohmann::json& schema);

struct RegisteredTool {
  std::shared_ptr<AgentTool> implementation;
  std::shared_ptr<const ToolDescriptor> descriptor;
  std::shared_ptr<const ParameterValidator> validator;
};

class ToolRegistryGeneration {
 public:
  ToolRegistryGeneration(uint64_t number, std::map<std::string, RegisteredTool> tools)
      : number_(number), tools_(std::move(tools)) {}
  uint64_t number() const { return number_; }
  // nullptr when no tool has that name.
  const RegisteredTool* find(const std::string& name) const;
  const std::map<std::string, RegisteredTool>& tools() const { return tools_; }
  // The same tools minus those `keep` rejects (for capability filtering, e.g. vision:false).
  std::shared_ptr<const ToolRegistryGeneration> filtered(
      const std::function<bool(const ToolDescriptor&)>& keep) const;

 private:
  uint64_t number_;
  std::map<std::string, RegisteredTool> tools_;
};

class ToolRegistry {
 public:
  ToolRegistry();
  // Errors: invalid_argument (bad name, empty label/description, unusable schema, a binding that does not
  // fit the level), tool.duplicate (the message shows both descriptors' summaries).
  Result<std::shared_ptr<const ToolDescriptor>> register_tool(std::shared_ptr<AgentTool> tool);
  // Removes a tool (e.g. before an MCP reconnect registers it again). tool.not_found when absent.
  Result<void> unregister_tool(const std::string& name);
  // Removes the tools named in `remove` (names not registered are skipped) and registers `add`, all in one
  // new generation, so no snapshot sees the set half changed (an MCP server's tools after list_changed or a
  // reconnect). Each added tool succeeds or fails on its own, as register_tool() would (a name `remove`
  // frees may be taken again); the result has one entry per added tool, in order. No change at all: no new
  // generation.
  std::vector<Result<std::shared_ptr<const ToolDescriptor>>> replace_tools(
      const std::vector<std::string>& remove, std::vector<std::shared_ptr<AgentTool>> add);
  std::shared_ptr<const ToolRegistryGeneration> snapshot() const;

  // An empty generation: what a model with toolUse:false is bound to.
  static std::shared_ptr<const ToolRegistryGeneration> empty_generation();

 private:
  mutable Mutex mu_;
  std::shared_ptr<const ToolRegistryGeneration> current_ KEEL_GUARDED_BY(mu_);
};

// Builds the frozen descriptor of `spec` (what register_tool stores). Exposed for tests and for recovery,
// which recomputes descriptors to compare digests.
Result<ToolDescriptor> make_tool_descriptor(const ToolSpec& spec);

}  // namespace keel
