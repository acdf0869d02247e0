// tools/builtin/workspace_read_tools.cc — list_files, read_file, search_files.
#include "tools/builtin/workspace_read_tools.h"

#include <re2/re2.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "keel/error_codes.h"
#include "tools/builtin/tool_support.h"
#include "tools/tool_errors.h"

namespace keel::builtin {

namespace fs = std::filesystem;

namespace {

std::string shown_path(std::string_view path) { return "\"" + valid_utf8(path) + "\""; }

std::string_view type_name(WorkspaceEntry::Type type) {
  switch (type) {
    case WorkspaceEntry::Type::kFile:
      return "file";
    case WorkspaceEntry::Type::kFolder:
      return "dir";
    case WorkspaceEntry::Type::kSymlink:
      return "symlink";
    case WorkspaceEntry::Type::kOther:
      break;
  }
  return "other";
}

// The lines of `text` without their '\n' terminators; a final line without one still counts.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string_view without_carriage_return(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

std::string right_aligned(int64_t number, size_t width) {
  std::string text = std::to_string(number);
  if (text.size() < width) text.insert(0, width - text.size(), ' ');
  return text;
}

// What a read tool returns (file text, file names, matching lines) was written by whoever wrote the
// workspace, not by keel: the tool is builtin, its results are untrusted (spec §4 lets a tool override the
// builtin default), so they reach the model inside a data envelope naming the workspace.
void mark_workspace_content(ToolSpec& spec) {
  spec.trust = ToolTrust::kUntrusted;
  spec.provenance = ToolProvenance::kWorkspace;
}

ToolSpec list_files_spec() {
  ToolSpec spec;
  spec.name = "list_files";
  spec.label = "List files";
  spec.description =
      "List the files and folders at a path in the workspace (the workspace root when path is omitted). "
      "Paths are relative to the workspace root; folders end with '/', symlinks with '@'. Set recursive to "
      "include everything below the folder.";
  spec.parameters = {
      {"type", "object"},
      {"properties",
       {{"path",
         {{"type", "string"},
          {"description", "Folder to list, relative to the workspace root. Default: the root."}}},
        {"recursive",
         {{"type", "boolean"}, {"description", "Also list the contents of subfolders. Default: false."}}},
        {"maxEntries",
         {{"type", "integer"},
          {"minimum", 1},
          {"maximum", 10000},
          {"description", "Stop after this many entries. Default: 1000."}}}}},
      {"required", nlohmann::json::array()},
      {"additionalProperties", false},
  };
  spec.effects = ToolEffects::kRead;
  mark_workspace_content(spec);
  return spec;
}

ToolSpec read_file_spec() {
  ToolSpec spec;
  spec.name = "read_file";
  spec.label = "Read file";
  spec.description =
      "Read a text file in the workspace. Each line is shown as its line number (from 1), a tab, and the "
      "text. For a long file, read a range: offset is the first line to show, limit the number of lines "
      "(default 2000).";
  spec.parameters = {
      {"type", "object"},
      {"properties",
       {{"path",
         {{"type", "string"},
          {"minLength", 1},
          {"description", "File to read, relative to the workspace root."}}},
        {"offset",
         {{"type", "integer"}, {"minimum", 1}, {"description", "First line to show (1-based). Default: 1."}}},
        {"limit",
         {{"type", "integer"},
          {"minimum", 1},
          {"maximum", 10000},
          {"description", "Number of lines to show. Default: 2000."}}}}},
      {"required", {"path"}},
      {"additionalProperties", false},
  };
  spec.effects = ToolEffects::kRead;
  mark_workspace_content(spec);
  return spec;
}

ToolSpec search_files_spec() {
  ToolSpec spec;
  spec.name = "search_files";
  spec.label = "Search files";
  spec.description =
      "Search the text files under a path in the workspace (the workspace root when path is omitted) for "
      "lines containing pattern, case-sensitively. With regex set to true, pattern is a regular expression "
      "in RE2 syntax, matched against each line: Perl-like classes (\\d \\w \\s \\b), [...], groups "
      "(...) and (?:...), alternation |, repetition * + ? {n,m} (lazy with ?), anchors ^ $ for the line, "
      "flags such as (?i); no backreferences and no lookaround (?= ?! ?<= ?<!). Each match is reported as "
      "'path:line: text'.";
  spec.parameters = {
      {"type", "object"},
      {"properties",
       {{"pattern",
         {{"type", "string"},
          {"minLength", 1},
          {"maxLength", SearchFilesTool::kMaxPatternBytes},
          {"description", "Text to find, or a regular expression."}}},
        {"regex",
         {{"type", "boolean"},
          {"description",
           "Treat pattern as a regular expression (RE2 syntax: no backreferences or lookaround). Default: "
           "false."}}},
        {"path",
         {{"type", "string"},
          {"description", "Folder or file to search, relative to the workspace root. Default: the root."}}},
        {"maxResults",
         {{"type", "integer"},
          {"minimum", 1},
          {"maximum", 1000},
          {"description", "Stop after this many matches. Default: 100."}}}}},
      {"required", {"pattern"}},
      {"additionalProperties", false},
  };
  spec.effects = ToolEffects::kRead;
  mark_workspace_content(spec);
  return spec;
}

}  // namespace

// --- list_files ---

ListFilesTool::ListFilesTool(std::shared_ptr<const Workspace> workspace)
    : WorkspaceTool(std::move(workspace), list_files_spec()) {}

Result<ToolResult> ListFilesTool::run(const ToolCallContext& context, const nlohmann::json& params) const {
  const WorkspacePath path = KEEL_TRY(resolve_path_argument(params));
  const bool recursive = params.value("recursive", false);
  const auto max_entries = static_cast<size_t>(params.value("maxEntries", kDefaultMaxEntries));

  std::vector<WorkspaceEntry> entries;
  bool truncated = false;
  WorkspaceEntry named = KEEL_TRY(workspace().inspect(path));
  if (named.type == WorkspaceEntry::Type::kFolder) {
    KEEL_TRY(workspace().walk(path, recursive, context.cancel, [&](const WorkspaceEntry& entry) {
      if (entries.size() == max_entries) {
        truncated = true;
        return false;
      }
      entries.push_back(entry);
      return true;
    }));
  } else {
    entries.push_back(std::move(named));
  }

  std::string text;
  nlohmann::json listed = nlohmann::json::array();
  for (const WorkspaceEntry& entry : entries) {
    const std::string name = valid_utf8(entry.relative);
    text += name;
    if (entry.type == WorkspaceEntry::Type::kFolder) text += "/";
    if (entry.type == WorkspaceEntry::Type::kSymlink) text += "@";
    text += "\n";
    nlohmann::json item = {{"path", name}, {"type", type_name(entry.type)}};
    if (entry.type == WorkspaceEntry::Type::kFile) item["size"] = entry.size;
    listed.push_back(std::move(item));
  }
  if (entries.empty()) text = shown_path(path.relative) + " is empty.\n";
  if (truncated) {
    text += "(stopped after " + std::to_string(max_entries) +
            " entries; list a subfolder or raise maxEntries to see more)\n";
  }
  nlohmann::json details = {{"path", valid_utf8(path.relative)},
                            {"recursive", recursive},
                            {"entries", std::move(listed)},
                            {"truncated", truncated}};
  return text_result(std::move(text), std::move(details));
}

// --- read_file ---

ReadFileTool::ReadFileTool(std::shared_ptr<const Workspace> workspace)
    : WorkspaceTool(std::move(workspace), read_file_spec()) {}

Result<ToolResult> ReadFileTool::run(const ToolCallContext& context, const nlohmann::json& params) const {
  (void)context;  // one file: nothing to cancel between
  const WorkspacePath path = KEEL_TRY(resolve_path_argument(params));
  const std::string content = KEEL_TRY(workspace().read_text(path));
  const int64_t offset = params.value("offset", int64_t{1});
  const int64_t limit = params.value("limit", int64_t{kDefaultLineLimit});

  const std::vector<std::string_view> lines = split_lines(content);
  const auto total = static_cast<int64_t>(lines.size());
  nlohmann::json details = {
      {"path", valid_utf8(path.relative)}, {"bytes", content.size()}, {"totalLines", total}};
  if (total == 0) return text_result(shown_path(path.relative) + " is empty.", std::move(details));
  if (offset > total) {
    return text_result(shown_path(path.relative) + " has " + std::to_string(total) + " lines; offset " +
                           std::to_string(offset) + " is past the end.",
                       std::move(details));
  }
  const int64_t last = std::min(total, offset + limit - 1);
  const size_t width = std::max<size_t>(6, std::to_string(last).size());
  std::string text;
  for (int64_t number = offset; number <= last; ++number) {
    const std::string_view line = without_carriage_return(lines[static_cast<size_t>(number - 1)]);
    text += right_aligned(number, width);
    text += '\t';
    text += truncate_utf8(valid_utf8(line), kMaxLineBytes, "… (line cut)");
    text += '\n';
  }
  if (last < total) {
    text += "(showing lines " + std::to_string(offset) + "-" + std::to_string(last) + " of " +
            std::to_string(total) + "; continue with offset " + std::to_string(last + 1) + ")\n";
  }
  details["startLine"] = offset;
  details["endLine"] = last;
  return text_result(std::move(text), std::move(details));
}

// --- search_files ---

SearchFilesTool::SearchFilesTool(std::shared_ptr<const Workspace> workspace)
    : WorkspaceTool(std::move(workspace), search_files_spec()) {}

Result<ToolResult> SearchFilesTool::run(const ToolCallContext& context, const nlohmann::json& params) const {
  const std::string pattern = params.at("pattern").get<std::string>();
  const bool use_regex = params.value("regex", false);
  const auto max_results = static_cast<size_t>(params.value("maxResults", kDefaultMaxResults));
  const WorkspacePath path = KEEL_TRY(resolve_path_argument(params));

  // RE2 matches in time linear in the text and in memory bounded by max_mem, whatever the pattern: a
  // pattern chosen by the model (or by text injected into a file it read) cannot hang or overflow the
  // stack the way a backtracking matcher does. A pattern RE2 refuses (bad syntax, a program over the memory
  // bound) is the model's error to correct.
  std::optional<RE2> regex;
  if (use_regex) {
    RE2::Options options;
    options.set_log_errors(false);
    options.set_never_capture(true);  // only whether a line matches counts
    options.set_max_mem(kMaxRegexMemoryBytes);
    regex.emplace(pattern, options);
    if (!regex->ok()) {
      return fail(codes::kToolInvalidRegex,
                  "/pattern: not a regular expression RE2 accepts: " + regex->error() +
                      (regex->error_code() == RE2::ErrorPatternTooLarge ? " (simplify it)" : ""));
    }
  }
  const auto matches = [&](std::string_view line) {
    if (!regex) return line.find(pattern) != std::string_view::npos;
    return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *regex);
  };

  nlohmann::json found = nlohmann::json::array();
  std::string text;
  bool truncated = false;
  int files_searched = 0;
  int files_skipped = 0;
  // Returns false once max_results matches were found and one more turned up.
  const auto search_file = [&](const WorkspacePath& file) {
    auto content = workspace().read_text(file);
    if (!content) {
      ++files_skipped;  // binary, too large or unreadable: not text we can search
      return true;
    }
    ++files_searched;
    const std::vector<std::string_view> lines = split_lines(*content);
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string_view line = without_carriage_return(lines[i]);
      if (!matches(line)) continue;
      if (found.size() == max_results) {
        truncated = true;
        return false;
      }
      const std::string shown = truncate_utf8(valid_utf8(line), 300);
      const std::string name = valid_utf8(file.relative);
      text += name + ":" + std::to_string(i + 1) + ": " + shown + "\n";
      found.push_back({{"path", name}, {"line", i + 1}, {"text", shown}});
    }
    return true;
  };

  const WorkspaceEntry named = KEEL_TRY(workspace().inspect(path));
  if (named.type == WorkspaceEntry::Type::kFolder) {
    KEEL_TRY(workspace().walk(path, /*recursive=*/true, context.cancel, [&](const WorkspaceEntry& entry) {
      if (entry.type != WorkspaceEntry::Type::kFile) return true;
      // Opened again from the root, beneath it and without following symlinks, like any path.
      return search_file(WorkspacePath{workspace().root() / entry.relative, entry.relative});
    }));
  } else {
    search_file(path);
  }

  if (found.empty()) {
    text = "No matches for \"" + pattern + "\" in " + shown_path(path.relative) + " (" +
           std::to_string(files_searched) + " files searched" +
           (files_skipped > 0
                ? ", " + std::to_string(files_skipped) + " binary, too large or unreadable files skipped"
                : std::string()) +
           ").\n";
  }
  if (truncated) {
    text += "(stopped after " + std::to_string(max_results) + " matches; narrow the pattern or the path)\n";
  }
  nlohmann::json details = {{"pattern", pattern},
                            {"regex", use_regex},
                            {"path", valid_utf8(path.relative)},
                            {"matches", std::move(found)},
                            {"filesSearched", files_searched},
                            {"filesSkipped", files_skipped},
                            {"truncated", truncated}};
  return text_result(std::move(text), std::move(details));
}

}  // namespace keel::builtin
