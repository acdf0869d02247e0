// tools/builtin/workspace_write_tools.h — the workspace file tools that change files: write_file and
// edit_file (effects write, so never-retry by default: after a crash the user decides).
//
// Both are confined to their Workspace (see workspace.h): their target is resolved for writing and reached
// through descriptors beneath the root, never through a symlink, and files are replaced atomically
// (temporary file + rename in the same folder), so a file is never left half-written and a hard link's
// other names are never written through. They run synchronously.
#pragma once

#include <memory>

#include "tools/builtin/workspace_tool.h"

namespace keel::builtin {

// write_file {path, content}: creates or replaces a file with `content`, creating missing folders.
class WriteFileTool final : public WorkspaceTool {
 public:
  explicit WriteFileTool(std::shared_ptr<const Workspace> workspace);
  // The absolute path; a new file's content or a replaced file's diff, with both sizes.
  CallPreview preview(const nlohmann::json& params, const ToolTarget& target) const override;

 private:
  Result<ToolResult> run(const ToolCallContext& context, const nlohmann::json& params) const override;
};

// edit_file {path, oldText, newText}: replaces the one occurrence of `oldText` (exact, byte for byte) with
// `newText`. Errors: workspace.edit_no_match (none), workspace.edit_ambiguous (more than one, overlapping
// occurrences included), plus read_file's errors for the file itself.
class EditFileTool final : public WorkspaceTool {
 public:
  explicit EditFileTool(std::shared_ptr<const Workspace> workspace);
  // The absolute path; the changed lines at their line number, with the file's size before and after.
  CallPreview preview(const nlohmann::json& params, const ToolTarget& target) const override;

 private:
  Result<ToolResult> run(const ToolCallContext& context, const nlohmann::json& params) const override;
};

}  // namespace keel::builtin
