// tools/builtin/workspace_read_tools.h — the read-only workspace file tools: list_files, read_file,
// search_files (effects read, so retry-safe by default).
//
// All three are confined to their Workspace (see workspace.h), run synchronously and check the call's
// cancellation token between files. Their `content` is what the model needs in a compact text form;
// `details` carries the structured result for the UI. Their results are untrusted, provenance workspace
// (the text is whoever wrote the workspace's, not keel's): the model gets them inside a data envelope
// (store/data_envelope.h).
#pragma once

#include <cstdint>
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
// `pattern` (or match it as an RE2 regular expression), as "path:line: text". Binary files and files over
// the workspace's size limit are skipped. Matching is linear in the text and its memory bounded, so no
// pattern can hang or crash it. Errors: tool.invalid_regex for a pattern RE2 refuses, workspace.not_found.
class SearchFilesTool final : public WorkspaceTool {
 public:
  static constexpr int kDefaultMaxResults = 100;
  static constexpr int kMaxPatternBytes = 4096;
  // RE2's budget for the compiled program and its DFA caches; a pattern that needs more is refused, and a
  // search that fills the DFA cache goes on with the slower, still linear, NFA.
  static constexpr int64_t kMaxRegexMemoryBytes = int64_t{8} << 20;
  explicit SearchFilesTool(std::shared_ptr<const Workspace> workspace);

 private:
  Result<ToolResult> run(const ToolCallContext& context, const nlohmann::json& params) const override;
};

}  // namespace keel::builtin
