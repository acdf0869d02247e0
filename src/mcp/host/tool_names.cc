// mcp/host/tool_names.cc — keel names for MCP tools (tool_names.h).
#include "mcp/host/tool_names.h"

#include <map>

#include "mcp/host/mcp_host_errors.h"
#include "util/sha256.h"

namespace keel::mcp {

namespace {

constexpr std::string_view kSeparator = "__";
constexpr size_t kHashDigits = 10;

bool allowed(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// Replaces every byte outside the set (including each byte of a multi-byte UTF-8 character) with '_'.
std::string sanitize(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (!allowed(c)) c = '_';
  }
  return out;
}

}  // namespace

std::string keel_tool_name(std::string_view server, std::string_view tool) {
  const std::string server_part = sanitize(server);
  const std::string tool_part = sanitize(tool);
  std::string name = server_part + std::string(kSeparator) + tool_part;
  const bool exact = server_part == server && tool_part == tool && !server.empty() && !tool.empty() &&
                     server.find(kSeparator) == std::string_view::npos && name.size() <= kMaxToolNameLength;
  if (exact) return name;
  std::string hashed_input(server);
  hashed_input += '\0';
  hashed_input.append(tool);
  const std::string suffix = "-" + sha256_hex(hashed_input).substr(0, kHashDigits);
  if (name.size() > kMaxToolNameLength - suffix.size()) name.resize(kMaxToolNameLength - suffix.size());
  return name + suffix;
}

std::vector<Result<std::string>> assign_tool_names(std::string_view server,
                                                   const std::vector<std::string>& tools) {
  std::map<std::string, size_t> listed;     // the server's name -> how often
  std::map<std::string, size_t> keel_uses;  // keel name -> how many distinct tools get it
  std::vector<std::string> names;
  names.reserve(tools.size());
  for (const std::string& tool : tools) {
    names.push_back(keel_tool_name(server, tool));
    if (listed[tool]++ == 0) ++keel_uses[names.back()];
  }
  std::vector<Result<std::string>> out;
  out.reserve(tools.size());
  for (size_t i = 0; i < tools.size(); ++i) {
    if (tools[i].empty()) {
      out.emplace_back(fail(codes::kMcpToolNameConflict, "the server listed a tool without a name"));
    } else if (listed[tools[i]] > 1) {
      out.emplace_back(fail(codes::kMcpToolNameConflict, "the server listed this tool name more than once"));
    } else if (keel_uses[names[i]] > 1) {
      out.emplace_back(
          fail(codes::kMcpToolNameConflict, "another tool of the server would also be named " + names[i]));
    } else {
      out.emplace_back(names[i]);
    }
  }
  return out;
}

}  // namespace keel::mcp
