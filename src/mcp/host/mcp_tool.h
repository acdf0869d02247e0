// mcp/host/mcp_tool.h — McpTool: one tool of a connected MCP server, as a keel AgentTool (spec §4, level
// mcp).
//
// What the tool declares (its ToolSpec) comes from the server's tools/list entry, prepared here once:
//   - name: the keel name (tool_names.h), label: the tool's title (or its name), description as the server
//     gave it (bounded);
//   - parameters: the inputSchema through prepare_mcp_schema(); an outputSchema is prepared and compiled too,
//     and a tool whose schemas keel cannot use is not made (mcp.schema_remote_ref / mcp.schema_unusable);
//   - level mcp, binding {server, endpoint, auth identity}, so a changed endpoint or credential changes the
//     tool's digest and refuses recovery (spec §5); trust and provenance take the mcp defaults (untrusted,
//     results inside a data envelope);
//   - effects and recovery (mcp_tool_effects()): from the annotations only for a server the person marked
//     trusted; otherwise every tool is a write that is never retried, whatever it claims.
//
// A call (execute) goes to the server's current session, with a progress token (progress becomes
// ToolProgress), the call's cancel token and the server's timeouts. What the server answers becomes content
// for the model (convert_call_result()): text and images as they are; audio, resource links and embedded
// resources as a text description, their data (bounded) in `details` for the UI; structuredContent checked
// against the outputSchema unless isError; a result over the size bound is mcp.result_too_large; an isError
// result is mcp.tool_error carrying the server's text, which the model sees like any tool error.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "keel/error.h"
#include "keel/tool.h"
#include "keel/tool_registry.h"
#include "mcp/client/mcp_session.h"

namespace keel::mcp {

struct McpCallLimits {
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(60);  // silence that ends a call
  std::chrono::milliseconds max_total = std::chrono::minutes(10);     // the longest call, progress or not
  size_t max_result_bytes = size_t{4} << 20;    // the content and structuredContent of one result, as JSON
  size_t max_detail_bytes = size_t{256} << 10;  // data of one non-text block kept in details for the UI
};

// What a tool knows of its server.
struct McpToolOrigin {
  std::string server;         // the configured name
  std::string endpoint;       // the command line or URL (binding)
  std::string auth_identity;  // the credential reference ("" = none) (binding)
  bool trusted = false;       // the person marked the server trusted: annotations count
  McpCallLimits limits;
};

// The server's current session, or mcp.server_unavailable while it is not connected. Called on each call.
using McpSessionSource = std::function<Result<std::shared_ptr<McpSession>>()>;

struct McpToolEffects {
  ToolEffects effects = ToolEffects::kWrite;
  ToolRecovery recovery = ToolRecovery::kNeverRetry;
};

// Trusted server: readOnlyHint true -> read, retry-safe; otherwise a write, retry-safe when idempotentHint
// is true (calling again with the same arguments has no further effect, so a call interrupted by a crash
// may be repeated), never-retry when not. destructiveHint changes neither (a write that only adds is still
// a write). Untrusted server: write, never-retry. Hints that are not booleans count as absent.
McpToolEffects mcp_tool_effects(const nlohmann::json& annotations, bool trusted);

// Turns a CallToolResult into what the model sees (see the header comment). `output_validator` may be null
// (no outputSchema).
Result<ToolResult> convert_call_result(const McpCallResult& result, const std::string& server,
                                       const ParameterValidator* output_validator,
                                       const McpCallLimits& limits);

class McpTool final : public AgentTool {
 public:
  const ToolSpec& spec() const override { return spec_; }
  const std::string& server_tool_name() const { return server_tool_name_; }
  Result<ToolTarget> resolve_target(const nlohmann::json& params) const override;
  std::optional<std::chrono::milliseconds> time_budget(const nlohmann::json& params) const override;
  void execute(ToolCallContext context, nlohmann::json params,
               std::function<void(Result<ToolResult>)> done) override;
  CallPreview preview(const nlohmann::json& params, const ToolTarget& target) const override;

 private:
  friend Result<std::shared_ptr<McpTool>> make_mcp_tool(const McpToolInfo&, std::string, const McpToolOrigin&,
                                                        McpSessionSource);
  struct Key {
    explicit Key() = default;
  };

 public:
  explicit McpTool(Key /*only make_mcp_tool*/) {}

 private:
  ToolSpec spec_;
  std::string server_tool_name_;
  McpToolOrigin origin_;
  std::shared_ptr<const ParameterValidator> output_validator_;  // null without an outputSchema
  McpSessionSource sessions_;
};

// Builds the tool named `keel_name` from a tools/list entry. Errors: mcp.schema_remote_ref,
// mcp.schema_unusable.
Result<std::shared_ptr<McpTool>> make_mcp_tool(const McpToolInfo& info, std::string keel_name,
                                               const McpToolOrigin& origin, McpSessionSource sessions);

}  // namespace keel::mcp
