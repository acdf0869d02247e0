// fuzz_mcp_inbound — what an MCP server sends keel, on arbitrary bytes: the JSON-RPC client core
// (mcp/client/jsonrpc_client.h) fed the message while a request with progress waits, then every result reader
// (mcp/client/mcp_results.h) and, for each tool a tools/list page yields, the schema preparation
// (mcp/host/schema_prep.h) and the naming (mcp/host/tool_names.h). Nothing may throw or crash; every refusal
// carries an mcp.* code; the waiting request completes exactly once (by the message or by close()); a schema
// that is accepted can be written out as JSON; every tool name that is accepted is a name providers take.
#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "keel/tool.h"
#include "mcp/client/jsonrpc_client.h"
#include "mcp/client/mcp_results.h"
#include "mcp/host/schema_prep.h"
#include "mcp/host/tool_names.h"

namespace {

using keel::fuzz::require;
using nlohmann::json;

template <typename T>
void require_mcp_code(const keel::Result<T>& result, const char* what) {
  if (!result) require(result.error().code().starts_with("mcp."), what);
}

// The client core with one request waiting (id 1, with progress), fed `message`, then closed.
void drive_client(const json& message) {
  std::atomic<int> completions{0};
  keel::mcp::JsonRpcClient::Handlers handlers;
  handlers.send = [](const json&) -> keel::Result<void> { return {}; };
  handlers.on_notification = [](const std::string&, const json&) {};
  handlers.on_problem = [](const keel::Error& problem) {
    require(problem.code().starts_with("mcp."), "a client problem without an mcp.* code");
  };
  auto client = keel::mcp::JsonRpcClient::create(std::move(handlers), nullptr);
  keel::mcp::RpcRequestOptions options;
  options.with_progress = true;
  options.on_progress = [](keel::mcp::McpProgress) {};
  client->request("tools/call", json::object(), options,
                  [&completions](keel::Result<json>) { completions.fetch_add(1); });
  client->handle_message(message);
  client->close(keel::Error("mcp.session_closed", "the fuzz case ended"));
  require(completions.load() == 1, "a waiting request completed other than exactly once");
}

void check_tools(const keel::mcp::McpToolPage& page) {
  std::vector<std::string> names;
  for (const auto& tool : page.tools) {
    names.push_back(tool.name);
    const auto input = keel::mcp::prepare_mcp_schema(tool.input_schema, keel::mcp::SchemaRole::kInput);
    require_mcp_code(input, "an input schema refused without an mcp.* code");
    if (input)
      require(keel::fuzz::writable_as_json(input->dump()), "a prepared schema that cannot be written");
    if (tool.output_schema) {
      const auto output = keel::mcp::prepare_mcp_schema(*tool.output_schema, keel::mcp::SchemaRole::kOutput);
      require_mcp_code(output, "an output schema refused without an mcp.* code");
    }
  }
  for (const auto& name : keel::mcp::assign_tool_names("srv", names)) {
    if (name) require(keel::is_valid_tool_name(*name), "a keel tool name a provider would refuse");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The transports hand the core parsed JSON: a line (stdio) or a body or SSE event (HTTP) that does not
  // parse never reaches it. nlohmann's depth is bounded by the input here (the transports bound the size).
  json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) return 0;
  try {
    drive_client(message);
    const json& result = message.is_object() && message.contains("result") ? message["result"] : message;
    require_mcp_code(keel::mcp::parse_server_info(result), "server info refused without an mcp.* code");
    const auto page = keel::mcp::parse_tool_page(result);
    require_mcp_code(page, "a tools/list page refused without an mcp.* code");
    if (page) check_tools(*page);
    const auto checked = keel::mcp::parse_tool_page(result, /*check_param_headers=*/true);
    require_mcp_code(checked, "a tools/list page (x-mcp-header checked) refused without an mcp.* code");
    if (checked) check_tools(*checked);
    require_mcp_code(keel::mcp::parse_call_result(result), "a call result refused without an mcp.* code");
    (void)keel::mcp::parse_log_message(result);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    require(false, "an MCP reader threw");
  }
  return 0;
}
