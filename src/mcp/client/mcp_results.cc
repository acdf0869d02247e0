// mcp/client/mcp_results.cc — see mcp_results.h.
#include "mcp/client/mcp_results.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "mcp/mcp_errors.h"

namespace keel::mcp {

using nlohmann::json;

namespace {

std::string string_field(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

json object_field(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_object() ? *it : json::object();
}

}  // namespace

bool is_legacy_revision_keel_speaks(const std::string& version) {
  return std::ranges::any_of(kLegacyRevisions, [&](const char* known) { return version == known; });
}

Result<McpServerInfo> parse_server_info(const json& result) {
  if (!result.is_object())
    return fail(codes::kMcpBadResponse, "the server's handshake result is not an object");
  McpServerInfo info;
  const json server = object_field(result, "serverInfo");
  info.name = string_field(server, "name");
  info.version = string_field(server, "version");
  info.instructions = string_field(result, "instructions");
  info.capabilities = object_field(result, "capabilities");
  return info;
}

bool is_param_header_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x80 && std::isalnum(byte) != 0) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

std::optional<std::string> invalid_param_header(const json& input_schema) {
  const auto properties = input_schema.find("properties");
  if (!input_schema.is_object() || properties == input_schema.end() || !properties->is_object())
    return std::nullopt;
  std::set<std::string> seen;  // lower-cased names
  for (const auto& [property, definition] : properties->items()) {
    if (!definition.is_object()) continue;
    const auto header = definition.find("x-mcp-header");
    if (header == definition.end()) continue;
    const std::string where = "property " + property.substr(0, 64) + ": ";
    if (!header->is_string() || !is_param_header_name(header->get_ref<const std::string&>()))
      return where + "its x-mcp-header is not an HTTP token";
    const std::string type = string_field(definition, "type");
    if (type != "string" && type != "integer" && type != "boolean")
      return where + "an x-mcp-header on a property whose type is not string, integer or boolean";
    std::string lower = header->get<std::string>();
    std::ranges::transform(lower, lower.begin(), [](char c) {
      return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    });
    if (!seen.insert(lower).second) return where + "x-mcp-header " + lower + " is declared twice";
  }
  return std::nullopt;
}

Result<McpToolPage> parse_tool_page(const json& result, bool check_param_headers) {
  if (!result.is_object()) return fail(codes::kMcpBadResponse, "tools/list: the result is not an object");
  const auto tools = result.find("tools");
  if (tools == result.end() || !tools->is_array())
    return fail(codes::kMcpBadResponse, "tools/list: the result has no `tools` array");
  McpToolPage page;
  for (const json& entry : *tools) {
    const std::string name = entry.is_object() ? string_field(entry, "name") : std::string();
    if (name.empty()) {
      page.skipped.push_back("an entry without a name");
      continue;
    }
    McpToolInfo tool;
    tool.name = name;
    tool.title = string_field(entry, "title");
    tool.description = string_field(entry, "description");
    const auto input = entry.find("inputSchema");
    if (input == entry.end() || !input->is_object()) {
      page.skipped.push_back("tool " + name.substr(0, 128) + ": no inputSchema object");
      continue;
    }
    if (check_param_headers) {
      if (std::optional<std::string> invalid = invalid_param_header(*input)) {
        page.skipped.push_back("tool " + name.substr(0, 128) + ": " + *invalid);
        continue;
      }
    }
    tool.input_schema = *input;
    if (const auto output = entry.find("outputSchema"); output != entry.end() && output->is_object())
      tool.output_schema = *output;
    tool.annotations = object_field(entry, "annotations");
    tool.meta = object_field(entry, "_meta");
    page.tools.push_back(std::move(tool));
  }
  if (const auto cursor = result.find("nextCursor"); cursor != result.end()) {
    if (cursor->is_string()) {
      page.next_cursor = cursor->get<std::string>();
    } else if (!cursor->is_null()) {
      return fail(codes::kMcpBadResponse, "tools/list: nextCursor is not a string");
    }
  }
  return page;
}

Result<McpCallResult> parse_call_result(const json& result) {
  if (!result.is_object()) return fail(codes::kMcpBadResponse, "tools/call: the result is not an object");
  const std::string type = string_field(result, "resultType");
  if (!type.empty() && type != "complete")
    return fail(codes::kMcpBadResponse,
                "tools/call: a result of type `" + type.substr(0, 64) +
                    "`, which keel does not accept yet (it declared no capability for it)");
  McpCallResult call;
  if (const auto content = result.find("content"); content != result.end()) {
    if (!content->is_array()) return fail(codes::kMcpBadResponse, "tools/call: `content` is not an array");
    call.content = *content;
  }
  if (const auto structured = result.find("structuredContent");
      structured != result.end() && !structured->is_null())
    call.structured_content = *structured;
  if (const auto is_error = result.find("isError"); is_error != result.end() && is_error->is_boolean())
    call.is_error = is_error->get<bool>();
  call.meta = object_field(result, "_meta");
  return call;
}

McpLogMessage parse_log_message(const json& params) {
  McpLogMessage message;
  if (!params.is_object()) return message;
  message.level = string_field(params, "level");
  message.logger = string_field(params, "logger");
  if (const auto data = params.find("data"); data != params.end()) message.data = *data;
  return message;
}

}  // namespace keel::mcp
