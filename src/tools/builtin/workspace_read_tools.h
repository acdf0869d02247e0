// tools/builtin/workspace_read_tools.h — the read-only workspace file tools: list_files, read_file,
// search_files (effects read, so retry-safe by default).
//
// All three are confined to their Workspace (see workspace.h), run synchronously and check the call's
// cancellation token between files. Their `content` is what the model needs in a compact text form;
// `details` carries the structured result for the UI.
#pragma once

#include <memory>

#include "tools/builtin/workspace_tool.h"

namespace keel::builtin {

// list_files {path?, recursive?, maxEntries?}: the entries of a folder (or the one file a path names),
// workspace-relative and sorted by name; folders end in "/", symlinks in "@" (never followed).
class ListFilesTool final : public WorkspaceTool {
 public:
  static constexpr int kDefaultMaxEntries = 1000;
  explicit ListFilesTool(std::shared_ptr<const Workspace> workspace);

 private:
  Result<ToolResult> run(const ToolCallContext& context, const nlohmann::json& params) const override;
};

// read_file {path, offset?, limit?}: a text file's lines numbered from 1 ("     3\ttext"), from line
// `offset` (1-based), at most `limit` lines. Errors: workspace.not_found, workspace.not_a_file,
// workspace.too_large, workspace.binary_file.
class ReadFileTool final : public WorkspaceTool {
 public:
  static constexpr int kDefaultLineLimit = 2000;
  static constexpr size_t kMaxLineBytes = 2000;  // longer lines are cut, with a marker
  explicit ReadFileTool(std::shared_ptr<const Workspace> workspace);

 private:
  Result<ToolResult> run(const ToolCallContext& context, const nlohmann::json& params) const override;
};

// search_files {pattern, regex?, path?, maxResults?}: lines of the text files under `path` that contain
// `pattern` (or match it as an ECMAScript regex), as "path:line: text". Binary files and files over the
// workspace's size limit are skipped. Errors: invalid_argument for a bad regex, workspace.not_found.
class SearchFilesTool final : public WorkspaceTool {
 public:
  static constexpr int kDefaultMaxResults = 100;
  static constexpr size_t kMaxRegexLineBytes = 4096;  // std::regex recurses per character: bound its input
  explicit SearchFilesTool(std::shared_ptr<const Workspace> workspace);

 private:
  Result<ToolResult> run(const ToolCallContext& context, const nlohmann::json& params) const override;
};

}  // namespace keel::builtin
