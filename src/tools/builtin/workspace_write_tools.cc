// tools/builtin/workspace_write_tools.cc — write_file and edit_file.
#include "tools/builtin/workspace_write_tools.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "keel/error_codes.h"
#include "tools/builtin/tool_support.h"
#include "tools/call_preview.h"
#include "tools/tool_errors.h"

namespace keel::builtin {

namespace {

std::string shown_path(std::string_view path) { return "\"" + valid_utf8(path) + "\""; }

size_t count_lines(std::string_view text) {
  if (text.empty()) return 0;
  const auto newlines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  return text.back() == '\n' ? newlines : newlines + 1;
}

// 1-based number of the line holding byte `offset`.
size_t line_at(std::string_view text, size_t offset) {
  return static_cast<size_t>(
             std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n')) +
         1;
}

// Every line of `text` prefixed with `sign`, for the UI's diff summary.
std::string prefixed_lines(std::string_view text, char sign) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    out += sign;
    out += valid_utf8(text.substr(start, end - start));
    out += '\n';
    start = end + 1;
  }
  return out;
}

ToolSpec write_file_spec() {
  ToolSpec spec;
  spec.name = "write_file";
  spec.label = "Write file";
  spec.description =
      "Create a text file in the workspace, or replace an existing file's whole content. Missing folders "
      "are created. To change part of an existing file, use edit_file instead.";
  spec.parameters = {
      {"type", "object"},
      {"properties",
       {{"path",
         {{"type", "string"},
          {"minLength", 1},
          {"description", "File to write, relative to the workspace root."}}},
        {"content", {{"type", "string"}, {"description", "The complete new content of the file."}}}}},
      {"required", {"path", "content"}},
      {"additionalProperties", false},
  };
  spec.effects = ToolEffects::kWrite;
  return spec;
}

ToolSpec edit_file_spec() {
  ToolSpec spec;
  spec.name = "edit_file";
  spec.label = "Edit file";
  spec.description =
      "Replace one exact occurrence of oldText with newText in a text file in the workspace. oldText must "
      "match the file's current text exactly, whitespace and line breaks included, and must occur exactly "
      "once: include enough surrounding lines to make it unique. Read the file first.";
  spec.parameters = {
      {"type", "object"},
      {"properties",
       {{"path",
         {{"type", "string"},
          {"minLength", 1},
          {"description", "File to edit, relative to the workspace root."}}},
        {"oldText", {{"type", "string"}, {"minLength", 1}, {"description", "The exact text to replace."}}},
        {"newText", {{"type", "string"}, {"description", "The text to put in its place."}}}}},
      {"required", {"path", "oldText", "newText"}},
      {"additionalProperties", false},
  };
  spec.effects = ToolEffects::kWrite;
  return spec;
}

}  // namespace

// --- write_file ---

WriteFileTool::WriteFileTool(std::shared_ptr<const Workspace> workspace)
    : WorkspaceTool(std::move(workspace), write_file_spec()) {}

Result<ToolResult> WriteFileTool::run(const ToolCallContext& context, const nlohmann::json& params) const {
  (void)context;  // one file, written atomically: cancellation was checked before the call started
  const WorkspacePath path = KEEL_TRY(resolve_path_argument(params));
  const std::string& content = params.at("content").get_ref<const std::string&>();

  const WorkspaceWrite written = KEEL_TRY(workspace().write_atomically(path, content));
  const bool existed = written.replaced;

  const std::string name = valid_utf8(path.relative);
  std::string text = "Wrote " + std::to_string(content.size()) + " bytes (" +
                     std::to_string(count_lines(content)) + " lines) to " + shown_path(name) +
                     (existed ? " (replaced the previous content)." : " (new file).");
  nlohmann::json details = {{"path", name}, {"bytesWritten", content.size()}, {"created", !existed}};
  if (existed) details["previousBytes"] = written.previous_bytes;
  return text_result(std::move(text), std::move(details));
}

// Approval previews (keel/tool.h): kept apart from run() so that what is shown and what runs are read
// from the same arguments but neither depends on the other.
CallPreview WriteFileTool::preview(const nlohmann::json& params, const ToolTarget& target) const {
  const Result<WorkspacePath> path = resolve_path_argument(params);
  const auto content = params.find("content");
  if (!path || content == params.end() || !content->is_string()) return default_call_preview(params, target);
  const std::string& text = content->get_ref<const std::string&>();
  CallPreview preview;
  preview.target = valid_utf8(path->absolute.string());
  preview.bytes_after = static_cast<int64_t>(text.size());
  // Looked at beneath the workspace root like every other access (no symlink followed).
  const Result<WorkspaceEntry> existing = workspace().inspect(*path);
  if (!existing && existing.error().code() == codes::kWorkspaceNotFound) {
    preview.action = "create file";
    preview.change_format = "excerpt";
    preview.change = excerpt_lines(text, "+");
    return preview;
  }
  preview.action = "overwrite file";
  const Result<std::string> before = workspace().read_text(*path);
  if (before) {
    preview.bytes_before = static_cast<int64_t>(before->size());
    preview.change_format = "diff";
    preview.change = bounded_diff(*before, text);
    if (preview.change.empty()) preview.change = "(the content does not change)\n";
  } else {
    // Not a text file keel can read (binary, too large): the new content is shown whole-or-bounded.
    if (existing && existing->type == WorkspaceEntry::Type::kFile) {
      preview.bytes_before = static_cast<int64_t>(existing->size);
    }
    preview.change_format = "excerpt";
    preview.change = "(the current content cannot be shown: " + before.error().message() + ")\n" +
                     excerpt_lines(text, "+");
  }
  return preview;
}

CallPreview EditFileTool::preview(const nlohmann::json& params, const ToolTarget& target) const {
  const Result<WorkspacePath> path = resolve_path_argument(params);
  const auto old_text = params.find("oldText");
  const auto new_text = params.find("newText");
  if (!path || old_text == params.end() || !old_text->is_string() || new_text == params.end() ||
      !new_text->is_string()) {
    return default_call_preview(params, target);
  }
  const std::string& from = old_text->get_ref<const std::string&>();
  const std::string& to = new_text->get_ref<const std::string&>();
  CallPreview preview;
  preview.action = "edit file";
  preview.target = valid_utf8(path->absolute.string());
  preview.change_format = "diff";
  const Result<std::string> content = workspace().read_text(*path);
  ExcerptLimits side;
  side.max_lines = 20;
  side.max_bytes = 2048;
  std::string header;
  if (!content) {
    header = "(the file cannot be read: " + content.error().message() + "; the edit will fail)\n";
  } else {
    preview.bytes_before = static_cast<int64_t>(content->size());
    const size_t at = from.empty() ? std::string::npos : content->find(from);
    const bool unique = at != std::string::npos && content->find(from, at + 1) == std::string::npos;
    if (unique) {
      preview.bytes_after = static_cast<int64_t>(content->size() - from.size() + to.size());
      header = "@@ line " + std::to_string(line_at(*content, at)) + " @@\n";
    } else {
      header = at == std::string::npos ? "(oldText is not in the file; the edit will fail)\n"
                                       : "(oldText occurs more than once; the edit will fail)\n";
    }
  }
  preview.change = header + excerpt_lines(from, "-", side) + excerpt_lines(to, "+", side);
  return preview;
}

// --- edit_file ---

EditFileTool::EditFileTool(std::shared_ptr<const Workspace> workspace)
    : WorkspaceTool(std::move(workspace), edit_file_spec()) {}

Result<ToolResult> EditFileTool::run(const ToolCallContext& context, const nlohmann::json& params) const {
  (void)context;  // one file, written atomically: cancellation was checked before the call started
  const WorkspacePath path = KEEL_TRY(resolve_path_argument(params));
  const std::string& old_text = params.at("oldText").get_ref<const std::string&>();
  const std::string& new_text = params.at("newText").get_ref<const std::string&>();
  if (old_text.empty()) return fail(codes::kInvalidArgument, "/oldText: must not be empty");
  const std::string content = KEEL_TRY(workspace().read_text(path));

  // Every occurrence, overlapping ones included: "aa" occurs twice in "aaa", and either reading is a guess.
  std::vector<size_t> occurrences;
  for (size_t at = content.find(old_text); at != std::string::npos; at = content.find(old_text, at + 1)) {
    occurrences.push_back(at);
  }
  const std::string name = valid_utf8(path.relative);
  if (occurrences.empty()) {
    return fail(codes::kWorkspaceEditNoMatch,
                "oldText was not found in " + shown_path(name) +
                    "; it must match the current text exactly (whitespace included): read the file again");
  }
  if (occurrences.size() > 1) {
    std::string lines;
    for (size_t i = 0; i < occurrences.size() && i < 10; ++i) {
      if (i > 0) lines += ", ";
      lines += std::to_string(line_at(content, occurrences[i]));
    }
    if (occurrences.size() > 10) lines += ", ...";
    return fail(codes::kWorkspaceEditAmbiguous,
                "oldText occurs " + std::to_string(occurrences.size()) + " times in " + shown_path(name) +
                    " (at lines " + lines + "); include more surrounding text so it occurs exactly once");
  }

  const size_t at = occurrences.front();
  std::string edited = content;
  edited.replace(at, old_text.size(), new_text);
  KEEL_TRY(workspace().write_atomically(path, edited));

  const size_t line = line_at(content, at);
  const size_t removed = count_lines(old_text);
  const size_t added = count_lines(new_text);
  std::string text = "Edited " + shown_path(name) + ": replaced " + std::to_string(removed) +
                     " line(s) at line " + std::to_string(line) + " with " + std::to_string(added) +
                     " line(s).";
  nlohmann::json details = {
      {"path", name},
      {"line", line},
      {"removedLines", removed},
      {"addedLines", added},
      {"bytesBefore", content.size()},
      {"bytesAfter", edited.size()},
      {"diff", "@@ line " + std::to_string(line) + " @@\n" + prefixed_lines(old_text, '-') +
                   prefixed_lines(new_text, '+')},
  };
  return text_result(std::move(text), std::move(details));
}

}  // namespace keel::builtin
