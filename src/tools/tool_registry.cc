// tools/tool_registry.cc — ToolRegistry and its immutable generations.
//
// A generation is never modified after it is published: register/unregister/replace copy the current map,
// change the copy and publish it as generation number+1 under the mutex. Readers only copy the shared_ptr, so
// a snapshot stays exactly as it was however the registry changes later. Copying the map on every change is
// fine: registrations are rare (startup, MCP reconnects) and a map holds tens of tools.
#include "keel/tool_registry.h"

#include <optional>
#include <utility>

#include "keel/error_codes.h"
#include "tools/descriptor.h"
#include "tools/tool_errors.h"

namespace keel {

const RegisteredTool* ToolRegistryGeneration::find(const std::string& name) const {
  const auto it = tools_.find(name);
  return it == tools_.end() ? nullptr : &it->second;
}

std::shared_ptr<const ToolRegistryGeneration> ToolRegistryGeneration::filtered(
    const std::function<bool(const ToolDescriptor&)>& keep) const {
  std::map<std::string, RegisteredTool> kept;
  for (const auto& [name, tool] : tools_) {
    if (keep(*tool.descriptor)) kept.emplace(name, tool);
  }
  // Same number: a filtered view is derived from this generation, not a new state of the registry.
  return std::make_shared<const ToolRegistryGeneration>(number_, std::move(kept));
}

ToolRegistry::ToolRegistry() : current_(empty_generation()) {}

Result<std::shared_ptr<const ToolDescriptor>> ToolRegistry::register_tool(std::shared_ptr<AgentTool> tool) {
  if (!tool) return fail(codes::kInvalidArgument, "register_tool: tool is null");
  // Validation and schema compilation run outside the lock: they may be slow and touch no registry state.
  auto compiled = KEEL_TRY(detail::compile_tool_spec(tool->spec()));
  auto descriptor = std::make_shared<const ToolDescriptor>(std::move(compiled.descriptor));

  MutexLock lock(mu_);
  if (const RegisteredTool* existing = current_->find(descriptor->name)) {
    return fail(codes::kToolDuplicate,
                "a tool named \"" + descriptor->name + "\" is already registered (existing: " +
                    existing->descriptor->summary() + "; new: " + descriptor->summary() + ")");
  }
  std::map<std::string, RegisteredTool> tools = current_->tools();
  tools.emplace(descriptor->name, RegisteredTool{std::move(tool), descriptor, std::move(compiled.validator)});
  current_ = std::make_shared<const ToolRegistryGeneration>(current_->number() + 1, std::move(tools));
  return descriptor;
}

Result<void> ToolRegistry::unregister_tool(const std::string& name) {
  std::shared_ptr<const ToolRegistryGeneration> previous;  // released after the lock (may free the last tool)
  MutexLock lock(mu_);
  if (current_->find(name) == nullptr) {
    return fail(codes::kToolNotFound, "no tool named \"" + name + "\" is registered");
  }
  std::map<std::string, RegisteredTool> tools = current_->tools();
  tools.erase(name);
  previous = std::exchange(
      current_, std::make_shared<const ToolRegistryGeneration>(current_->number() + 1, std::move(tools)));
  return {};
}

std::vector<Result<std::shared_ptr<const ToolDescriptor>>> ToolRegistry::replace_tools(
    const std::vector<std::string>& remove, std::vector<std::shared_ptr<AgentTool>> add) {
  // As in register_tool, validation and compilation run outside the lock.
  std::vector<Result<std::shared_ptr<const ToolDescriptor>>> results;
  std::vector<std::optional<RegisteredTool>> compiled_tools;
  for (std::shared_ptr<AgentTool>& tool : add) {
    if (!tool) {
      results.emplace_back(fail(codes::kInvalidArgument, "replace_tools: tool is null"));
      compiled_tools.emplace_back();
      continue;
    }
    auto compiled = detail::compile_tool_spec(tool->spec());
    if (!compiled) {
      results.emplace_back(fail(compiled.error()));
      compiled_tools.emplace_back();
      continue;
    }
    auto descriptor = std::make_shared<const ToolDescriptor>(std::move(compiled->descriptor));
    results.emplace_back(descriptor);
    compiled_tools.emplace_back(RegisteredTool{std::move(tool), descriptor, std::move(compiled->validator)});
  }

  std::shared_ptr<const ToolRegistryGeneration> previous;  // released after the lock (may free the last tool)
  MutexLock lock(mu_);
  std::map<std::string, RegisteredTool> tools = current_->tools();
  bool changed = false;
  for (const std::string& name : remove) changed = tools.erase(name) > 0 || changed;
  for (size_t i = 0; i < compiled_tools.size(); ++i) {
    if (!compiled_tools[i]) continue;
    const std::shared_ptr<const ToolDescriptor>& descriptor = compiled_tools[i]->descriptor;
    if (const auto existing = tools.find(descriptor->name); existing != tools.end()) {
      results[i] = fail(codes::kToolDuplicate,
                        "a tool named \"" + descriptor->name + "\" is already registered (existing: " +
                            existing->second.descriptor->summary() + "; new: " + descriptor->summary() + ")");
      continue;
    }
    tools.emplace(descriptor->name, std::move(*compiled_tools[i]));
    changed = true;
  }
  if (changed) {
    previous = std::exchange(
        current_, std::make_shared<const ToolRegistryGeneration>(current_->number() + 1, std::move(tools)));
  }
  return results;
}

std::shared_ptr<const ToolRegistryGeneration> ToolRegistry::snapshot() const {
  MutexLock lock(mu_);
  return current_;
}

std::shared_ptr<const ToolRegistryGeneration> ToolRegistry::empty_generation() {
  static const auto empty =
      std::make_shared<const ToolRegistryGeneration>(0, std::map<std::string, RegisteredTool>{});
  return empty;
}

}  // namespace keel
