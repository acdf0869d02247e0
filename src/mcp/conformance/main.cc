// keel-mcp-conformance-client — keel's MCP client as the official conformance suite
// (@modelcontextprotocol/conformance, client mode) drives it: the suite starts a scenario's mock server,
// runs this program with the server's URL as its last argument and the scenario in the environment
// (MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_PROTOCOL_VERSION, MCP_CONFORMANCE_CONTEXT), and then checks
// what the server saw. docs/mcp-client.md "Conformance" lists the scenarios and what keel does for each.
//
// Every scenario gets the same behaviour, which is what a host does with a new server: open a session over
// Streamable HTTP (the version probe and handshake), list the tools, and call each tool once with arguments
// made from its input schema (a number for each number property, and so on). The scenarios differ only in
// what the mock server checks on the way (headers, _meta, SSE resumption, OAuth). Exit status 0 when every
// step worked, 1 otherwise; what happened is written to stderr (never a token).
//
// The transport always carries keel's OAuth layer (mcp/auth/oauth_http_auth.h): a server that answers 401
// gets discovery, dynamic registration (or the pre-registered client_id/client_secret the scenario's context
// names), PKCE and the code exchange, with the suite's authorization server consenting without a person
// (redirect_authorizer.h); a 403 insufficient_scope gets a step-up sign-in.
#include <chrono>
#include <cstdlib>
#include <future>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mcp/auth/http_fetch.h"
#include "mcp/auth/oauth_http_auth.h"
#include "mcp/auth/redirect_authorizer.h"
#include "mcp/client/http_transport.h"
#include "mcp/client/session_open.h"

namespace {

using nlohmann::json;

// A value for one property of an input schema.
json sample_value(const json& schema) {
  if (!schema.is_object()) return "test";
  if (const auto it = schema.find("default"); it != schema.end()) return *it;
  if (const auto it = schema.find("enum"); it != schema.end() && it->is_array() && !it->empty())
    return (*it)[0];
  const std::string type = schema.value("type", "string");
  if (type == "number" || type == "integer") return 2;
  if (type == "boolean") return true;
  if (type == "array") return json::array();
  if (type == "object") return json::object();
  return "test";
}

json sample_arguments(const json& input_schema) {
  json arguments = json::object();
  if (!input_schema.is_object()) return arguments;
  const auto properties = input_schema.find("properties");
  if (properties == input_schema.end() || !properties->is_object()) return arguments;
  for (const auto& [name, schema] : properties->items()) arguments[name] = sample_value(schema);
  return arguments;
}

// The scenario's context (MCP_CONFORMANCE_CONTEXT), or an empty object.
json scenario_context() {
  const char* context = std::getenv("MCP_CONFORMANCE_CONTEXT");
  if (context == nullptr) return json::object();
  json parsed = json::parse(context, nullptr, /*allow_exceptions=*/false);
  return parsed.is_object() ? parsed : json::object();
}

// keel's OAuth layer for `url`, its HTTP on a client of its own (the transport's worker never waits for it).
std::shared_ptr<keel::mcp::McpHttpAuth> oauth_for(const std::string& url, const json& context) {
  keel::mcp::HttpFetch fetch =
      keel::mcp::make_http_fetch(std::make_shared<keel::providers::CurlHttpClient>());
  keel::mcp::OAuthHttpAuthOptions options;
  options.server_url = url;
  options.client_name = "keel-mcp-conformance-client";
  options.redirect_uri = "http://127.0.0.1:8976/callback";  // the authorizer reads the redirect; no listener
  if (context.contains("client_id") && context["client_id"].is_string()) {
    keel::mcp::OAuthClient client;
    client.client_id = context["client_id"].get<std::string>();
    if (context.contains("client_secret") && context["client_secret"].is_string()) {
      client.client_secret = context["client_secret"].get<std::string>();
      client.token_endpoint_auth_method = "client_secret_basic";
    }
    options.preregistered = std::move(client);
  }
  options.authorizer = keel::mcp::make_redirect_authorizer(fetch);
  options.fetch = std::move(fetch);
  options.on_grant = [](const keel::mcp::OAuthGrant& grant) {
    std::cerr << "signed in: client " << grant.client.client_id << ", scope '" << grant.tokens.scope << "'\n";
  };
  return keel::mcp::make_oauth_http_auth(std::move(options));
}

int run(const std::string& url) {
  const char* scenario = std::getenv("MCP_CONFORMANCE_SCENARIO");
  const json context = scenario_context();
  std::cerr << "keel-mcp-conformance-client: scenario " << (scenario ? scenario : "(none)") << ", server "
            << url << "\n";
  keel::mcp::HttpTransportOptions transport_options;
  transport_options.url = url;
  transport_options.default_retry = std::chrono::milliseconds(1000);
  transport_options.auth = oauth_for(url, context);
  auto transport = keel::mcp::make_http_transport(std::move(transport_options));
  if (!transport) {
    std::cerr << transport.error().to_string() << "\n";
    return 1;
  }
  keel::mcp::McpClientOptions options;
  options.client_name = "keel-mcp-conformance-client";
  options.handshake_timeout = std::chrono::seconds(20);
  options.probe_timeout = std::chrono::seconds(10);
  keel::mcp::McpSessionEvents events;
  events.on_problem = [](const keel::Error& problem, bool) {
    std::cerr << "problem: " << problem.to_string() << "\n";
  };
  auto session = keel::mcp::open_mcp_session(std::move(*transport), options, std::move(events));
  if (!session) {
    std::cerr << "open: " << session.error().to_string() << "\n";
    return 1;
  }
  std::cerr << "session open, revision " << (*session)->server_info().protocol_version << "\n";

  std::promise<keel::Result<std::vector<keel::mcp::McpToolInfo>>> listed;
  (*session)->list_tools(
      [&](keel::Result<std::vector<keel::mcp::McpToolInfo>> tools) { listed.set_value(tools); });
  auto tools = listed.get_future().get();
  if (!tools) {
    std::cerr << "tools/list: " << tools.error().to_string() << "\n";
    (*session)->close();
    return 1;
  }
  // The scenario may name the calls to make (MCP_CONFORMANCE_CONTEXT {"toolCalls":[{name, arguments}]});
  // otherwise every listed tool is called once.
  std::vector<std::pair<std::string, json>> calls;
  if (context.contains("toolCalls") && context["toolCalls"].is_array()) {
    for (const json& call : context["toolCalls"]) {
      if (call.is_object() && call.contains("name") && call["name"].is_string())
        calls.emplace_back(call["name"].get<std::string>(), call.value("arguments", json::object()));
    }
  }
  if (calls.empty()) {
    for (const auto& tool : *tools) calls.emplace_back(tool.name, sample_arguments(tool.input_schema));
  }
  int status = 0;
  for (const auto& [name, arguments] : calls) {
    keel::mcp::McpCallRequest call;
    call.tool = name;
    call.arguments = arguments;
    call.idle_timeout = std::chrono::seconds(15);
    std::promise<keel::Result<keel::mcp::McpCallResult>> called;
    (*session)->call_tool(std::move(call),
                          [&](keel::Result<keel::mcp::McpCallResult> result) { called.set_value(result); });
    auto result = called.get_future().get();
    if (!result) {
      std::cerr << "tools/call " << name << ": " << result.error().to_string() << "\n";
      status = 1;
    } else {
      std::cerr << "tools/call " << name << ": " << result->content.dump().substr(0, 200) << "\n";
    }
  }
  (*session)->close();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: keel-mcp-conformance-client [options] <server-url>\n";
    return 2;
  }
  return run(argv[argc - 1]);
}
