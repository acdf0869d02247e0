// mcp/host/mcp_tool.cc — McpTool (mcp_tool.h).
#include "mcp/host/mcp_tool.h"

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "keel/error_codes.h"
#include "mcp/host/mcp_host_errors.h"
#include "mcp/host/schema_prep.h"
#include "util/utf8.h"

namespace keel::mcp {

namespace {

using nlohmann::json;

constexpr size_t kMaxDescriptionBytes = 8 * 1024;
constexpr size_t kMaxLabelBytes = 200;
constexpr size_t kMaxErrorTextBytes = 16 * 1024;
// The time budget the engine gives a call is the call's own bound plus this, so that the session's
// mcp.call_timed_out (which also sends notifications/cancelled) normally ends it first.
constexpr std::chrono::milliseconds kBudgetMargin = std::chrono::seconds(5);

std::string bounded(std::string text, size_t max_bytes) {
  text = utf8_sanitized(std::move(text));
  if (text.size() <= max_bytes) return text;
  text.resize(utf8_prefix_length(text, max_bytes));
  return text + " [...]";
}

std::string string_field(const json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

bool hint(const json& annotations, const char* key) {
  if (!annotations.is_object()) return false;
  const auto it = annotations.find(key);
  return it != annotations.end() && it->is_boolean() && it->get<bool>();
}

std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

// 3 rather than 3.0; 2.5 stays 2.5.
std::string number_text(double value) {
  if (value == static_cast<double>(static_cast<int64_t>(value)) && value > -1e15 && value < 1e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  return dump(json(value));
}

// Base64 of `n` characters holds about 3/4 n bytes.
size_t decoded_size(const std::string& base64) { return base64.size() / 4 * 3; }

ContentBlock text_block(std::string text) {
  ContentBlock block;
  block.text = std::move(text);
  return block;
}

// Keeps a non-text block's data for the UI when it fits the bound; says so when it did not.
json detail_of(json block, const char* data_key, const McpCallLimits& limits) {
  if (block.contains(data_key) && dump(block[data_key]).size() > limits.max_detail_bytes) {
    block.erase(data_key);
    block["truncated"] = true;
  }
  return block;
}

std::string describe_binary(std::string_view what, const std::string& mime, const std::string& base64) {
  std::string text = "[" + std::string(what);
  if (!mime.empty()) text += " (" + mime + ")";
  text += ", about " + std::to_string(decoded_size(base64)) + " bytes; shown to the user, not to you]";
  return text;
}

}  // namespace

McpToolEffects mcp_tool_effects(const nlohmann::json& annotations, bool trusted) {
  if (!trusted) return {};
  if (hint(annotations, "readOnlyHint")) return {ToolEffects::kRead, ToolRecovery::kRetrySafe};
  if (hint(annotations, "idempotentHint")) return {ToolEffects::kWrite, ToolRecovery::kRetrySafe};
  return {ToolEffects::kWrite, ToolRecovery::kNeverRetry};
}

Result<ToolResult> convert_call_result(const McpCallResult& result, const std::string& server,
                                       const ParameterValidator* output_validator,
                                       const McpCallLimits& limits) {
  size_t size = dump(result.content).size();
  if (result.structured_content) size += dump(*result.structured_content).size();
  if (size > limits.max_result_bytes) {
    return fail(codes::kMcpResultTooLarge, "the result of MCP server " + server + " has " +
                                               std::to_string(size) + " bytes; keel accepts at most " +
                                               std::to_string(limits.max_result_bytes));
  }
  if (!result.content.is_array()) {
    return fail(codes::kMcpBadToolResult,
                "MCP server " + server + " sent a result whose content is not a list");
  }

  ToolResult out;
  json details = json::array();
  for (const json& block : result.content) {
    const std::string type = string_field(block, "type");
    if (type == "text" && block.contains("text") && block["text"].is_string()) {
      out.content.push_back(text_block(block["text"].get<std::string>()));
    } else if (type == "image" && !string_field(block, "data").empty() &&
               string_field(block, "mimeType").starts_with("image/")) {
      ContentBlock image;
      image.kind = ContentBlock::Kind::kImage;
      image.media_type = string_field(block, "mimeType");
      image.data_base64 = string_field(block, "data");
      out.content.push_back(std::move(image));
    } else if (type == "audio") {
      out.content.push_back(
          text_block(describe_binary("audio", string_field(block, "mimeType"), string_field(block, "data"))));
      details.push_back(detail_of(block, "data", limits));
    } else if (type == "resource_link") {
      std::string text =
          "[resource link: " + string_field(block, "name") + " <" + string_field(block, "uri") + ">";
      if (const std::string mime = string_field(block, "mimeType"); !mime.empty()) text += " (" + mime + ")";
      if (const std::string about = string_field(block, "description"); !about.empty()) text += ": " + about;
      out.content.push_back(text_block(text + "]"));
      details.push_back(block);
    } else if (type == "resource" && block.contains("resource") && block["resource"].is_object()) {
      const json& resource = block["resource"];
      const std::string uri = string_field(resource, "uri");
      const std::string mime = string_field(resource, "mimeType");
      if (resource.contains("text") && resource["text"].is_string()) {
        std::string head = "[resource <" + uri + ">" + (mime.empty() ? "" : " (" + mime + ")") + "]\n";
        out.content.push_back(text_block(head + resource["text"].get<std::string>()));
      } else {
        out.content.push_back(
            text_block(describe_binary("resource <" + uri + ">", mime, string_field(resource, "blob"))));
        json detail = block;
        detail["resource"] = detail_of(resource, "blob", limits);
        details.push_back(std::move(detail));
      }
    } else {
      out.content.push_back(
          text_block("[content of type \"" + bounded(type, 64) + "\" that keel does not show]"));
    }
  }

  if (result.is_error) {
    std::string text;
    for (const ContentBlock& block : out.content) {
      if (block.kind != ContentBlock::Kind::kText) continue;
      if (!text.empty()) text += "\n";
      text += block.text;
    }
    if (text.empty()) text = "the tool reported an error without saying what it was";
    return fail(codes::kMcpToolError, bounded(std::move(text), kMaxErrorTextBytes));
  }

  if (output_validator != nullptr) {
    if (!result.structured_content) {
      return fail(codes::kMcpOutputMismatch, "the tool declares an outputSchema but MCP server " + server +
                                                 " sent no structuredContent");
    }
    if (auto valid = output_validator->validate(*result.structured_content); !valid) {
      return fail(codes::kMcpOutputMismatch, "the structuredContent of MCP server " + server +
                                                 " does not match the tool's outputSchema: " +
                                                 bounded(valid.error().message(), kMaxErrorTextBytes));
    }
  }
  if (result.structured_content && out.content.empty()) {
    out.content.push_back(text_block(dump(*result.structured_content)));
  }
  if (out.content.empty()) out.content.push_back(text_block("(the tool returned no content)"));

  if (!details.empty() || result.structured_content) {
    out.details = json::object();
    if (!details.empty()) out.details["content"] = std::move(details);
    if (result.structured_content) out.details["structuredContent"] = *result.structured_content;
  }
  return out;
}

Result<ToolTarget> McpTool::resolve_target(const nlohmann::json& params) const {
  (void)params;
  return ToolTarget{.server_id = origin_.server};
}

std::optional<std::chrono::milliseconds> McpTool::time_budget(const nlohmann::json& params) const {
  (void)params;
  return origin_.limits.max_total + kBudgetMargin;
}

CallPreview McpTool::preview(const nlohmann::json& params, const ToolTarget& target) const {
  (void)target;
  CallPreview preview = default_call_preview(params, ToolTarget{.server_id = origin_.server});
  preview.target = "MCP server " + origin_.server;
  return preview;
}

void McpTool::execute(ToolCallContext context, nlohmann::json params,
                      std::function<void(Result<ToolResult>)> done) {
  Result<std::shared_ptr<McpSession>> session = std::shared_ptr<McpSession>();
  if (sessions_) session = sessions_();
  if (!session) {
    done(fail(session.error()));
    return;
  }
  if (*session == nullptr) {
    done(fail(codes::kMcpServerUnavailable, "MCP server " + origin_.server + " is not connected"));
    return;
  }
  McpCallRequest request;
  request.tool = server_tool_name_;
  request.arguments = std::move(params);
  request.cancel = context.cancel;
  request.idle_timeout = origin_.limits.idle_timeout;
  request.max_total = origin_.limits.max_total;
  request.on_progress = [progress = context.progress](McpProgress update) {
    json details = {{"progress", update.progress}};
    if (update.total) details["total"] = *update.total;
    std::string text = update.message;
    if (!text.empty()) details["message"] = update.message;
    if (text.empty()) {
      text = "progress " + number_text(update.progress);
      if (update.total) text += " of " + number_text(*update.total);
    }
    progress(ToolProgress{bounded(std::move(text), 1024), std::move(details)});
  };
  (*session)->call_tool(std::move(request),
                        [server = origin_.server, validator = output_validator_, limits = origin_.limits,
                         done = std::move(done)](Result<McpCallResult> result) {
                          if (!result) {
                            done(fail(result.error()));
                            return;
                          }
                          done(convert_call_result(*result, server, validator.get(), limits));
                        });
}

Result<std::shared_ptr<McpTool>> make_mcp_tool(const McpToolInfo& info, std::string keel_name,
                                               const McpToolOrigin& origin, McpSessionSource sessions) {
  auto tool = std::make_shared<McpTool>(McpTool::Key{});
  ToolSpec& spec = tool->spec_;
  spec.name = std::move(keel_name);
  std::string label = info.title;
  if (label.empty()) label = string_field(info.annotations, "title");
  if (label.empty()) label = info.name;
  spec.label = bounded(std::move(label), kMaxLabelBytes);
  spec.description = info.description.find_first_not_of(" \t\r\n") == std::string::npos
                         ? "Tool " + info.name + " of MCP server " + origin.server + "."
                         : info.description;
  spec.description = bounded(std::move(spec.description), kMaxDescriptionBytes);
  spec.parameters = KEEL_TRY(prepare_mcp_schema(info.input_schema, SchemaRole::kInput));
  if (info.output_schema) {
    const json output = KEEL_TRY(prepare_mcp_schema(*info.output_schema, SchemaRole::kOutput));
    auto compiled = compile_parameter_schema(output);
    if (!compiled) return fail(codes::kMcpSchemaUnusable, "outputSchema: " + compiled.error().message());
    tool->output_validator_ = std::move(*compiled);
  }
  spec.level = ToolLevel::kMcp;
  const McpToolEffects effects = mcp_tool_effects(info.annotations, origin.trusted);
  spec.effects = effects.effects;
  spec.recovery = effects.recovery;
  spec.binding = ToolBinding{ToolBinding::Kind::kMcp, origin.server, origin.endpoint, origin.auth_identity};
  tool->server_tool_name_ = info.name;
  tool->origin_ = origin;
  tool->sessions_ = std::move(sessions);
  return tool;
}

}  // namespace keel::mcp
