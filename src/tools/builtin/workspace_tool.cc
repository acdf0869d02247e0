// tools/builtin/workspace_tool.cc — the shared part of the workspace file tools.
#include "tools/builtin/workspace_tool.h"

#include <exception>
#include <filesystem>
#include <string>
#include <utility>

#include "keel/error_codes.h"
#include "tools/builtin/tool_support.h"
#include "tools/tool_errors.h"

namespace keel::builtin {

WorkspaceTool::WorkspaceTool(std::shared_ptr<const Workspace> workspace, ToolSpec spec)
    : workspace_(std::move(workspace)), spec_(std::move(spec)) {
  spec_.level = ToolLevel::kBuiltin;
  spec_.binding = ToolBinding{};
}

Result<WorkspacePath> WorkspaceTool::resolve_path_argument(const nlohmann::json& params) const {
  const auto path = params.find("path");
  std::string requested;
  if (path != params.end()) {
    if (!path->is_string()) return fail(codes::kInvalidArgument, "/path: must be a string");
    requested = path->get<std::string>();
  }
  if (spec_.effects == ToolEffects::kWrite) return workspace_->resolve_for_write(requested);
  return workspace_->resolve(requested);
}

Result<ToolTarget> WorkspaceTool::resolve_target(const nlohmann::json& params) const {
  if (!params.is_object()) return fail(codes::kInvalidArgument, "/: arguments must be a JSON object");
  const WorkspacePath path = KEEL_TRY(resolve_path_argument(params));
  ToolTarget target;
  target.path = path.relative;
  return target;
}

void WorkspaceTool::execute(ToolCallContext context, nlohmann::json params,
                            std::function<void(Result<ToolResult>)> done) {
  Result<ToolResult> result = fail(codes::kInternal, "not run");
  if (context.cancel.is_cancelled()) {
    result = fail(cancelled_error(context.cancel));
  } else if (!params.is_object()) {
    result = fail(codes::kInvalidArgument, "/: arguments must be a JSON object");
  } else {
    try {
      result = run(context, params);
    } catch (const std::filesystem::filesystem_error& e) {
      result = fail(codes::kWorkspaceIo, valid_utf8(e.what()));
    } catch (const std::exception& e) {
      result = fail(codes::kInternal, spec_.name + " failed: " + valid_utf8(e.what()));
    }
  }
  done(std::move(result));
}

}  // namespace keel::builtin
