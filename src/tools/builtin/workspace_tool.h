// tools/builtin/workspace_tool.h — what every workspace file tool shares.
//
// A WorkspaceTool holds its ToolSpec (level builtin, binding local) and the Workspace it is confined to.
// It runs synchronously: execute() calls `done` exactly once before it returns, with run()'s result. An
// exception escaping run() (a bug, or std::bad_alloc) is reported through `done` as well, so the caller's
// "exactly once" holds on every path. The target of a call is the resolved root-relative path of its
// "path" argument (the root when the argument is absent), resolved for writing when the tool writes.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "keel/tool.h"
#include "tools/builtin/workspace.h"

namespace keel::builtin {

class WorkspaceTool : public AgentTool {
 public:
  const ToolSpec& spec() const final { return spec_; }
  Result<ToolTarget> resolve_target(const nlohmann::json& params) const final;
  void execute(ToolCallContext context, nlohmann::json params,
               std::function<void(Result<ToolResult>)> done) final;

 protected:
  // `workspace` must not be null.
  WorkspaceTool(std::shared_ptr<const Workspace> workspace, ToolSpec spec);

  // The call itself; `params` were validated against spec().parameters.
  virtual Result<ToolResult> run(const ToolCallContext& context, const nlohmann::json& params) const = 0;

  // The "path" argument ("" = the root when absent), resolved for reading or, for write tools, writing.
  Result<WorkspacePath> resolve_path_argument(const nlohmann::json& params) const;

  const Workspace& workspace() const { return *workspace_; }

 private:
  std::shared_ptr<const Workspace> workspace_;
  ToolSpec spec_;
};

}  // namespace keel::builtin
