// mcp/auth/fake_authorization_server.h — for tests: an authorization server and an MCP server's
// protected-resource metadata in memory, reached through an HttpFetch and an Authorizer (no sockets). The
// code exchange is checked the way a real server checks it (the PKCE verifier must match the challenge).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mcp/auth/oauth_flow.h"
#include "mcp/auth/oauth_url.h"
#include "mcp/auth/pkce.h"

namespace keel::mcp::testing {

using nlohmann::json;

inline constexpr char kServer[] = "https://mcp.example.com/mcp";
inline constexpr char kIssuer[] = "https://auth.example.com";
inline constexpr char kRedirect[] = "http://127.0.0.1:4711/callback";

class FakeAuthorizationServer {
 public:
  FakeAuthorizationServer() {
    documents_["https://mcp.example.com/.well-known/oauth-protected-resource/mcp"] = {
        {"resource", kServer}, {"authorization_servers", {kIssuer}}, {"scopes_supported", {"tools"}}};
    documents_[std::string(kIssuer) + "/.well-known/oauth-authorization-server"] = {
        {"issuer", kIssuer},
        {"authorization_endpoint", std::string(kIssuer) + "/authorize"},
        {"token_endpoint", std::string(kIssuer) + "/token"},
        {"registration_endpoint", std::string(kIssuer) + "/register"},
        {"code_challenge_methods_supported", {"S256"}}};
  }

  HttpFetch fetch() {
    return [this](const HttpCall& call) -> Result<HttpReply> {
      calls.push_back(call.method + " " + call.url);
      if (call.method == "GET") {
        const auto it = documents_.find(call.url);
        if (it == documents_.end()) return HttpReply{404, {}, "not found"};
        return HttpReply{200, {}, it->second.dump()};
      }
      if (call.url == std::string(kIssuer) + "/register") {
        registration = json::parse(call.body);
        return HttpReply{201, {}, json{{"client_id", "dyn-client"}}.dump()};
      }
      if (call.url == std::string(kIssuer) + "/token") {
        token_forms.push_back(form_decode(call.body));
        const QueryParams& form = token_forms.back();
        if (find_param(form, "grant_type") == "authorization_code") {
          if (find_param(form, "code") != "the-code" ||
              pkce_challenge(find_param(form, "code_verifier").value_or("")) != challenge) {
            return HttpReply{400, {}, R"({"error":"invalid_grant"})"};
          }
          return HttpReply{
              200, {}, R"({"access_token":"at-1","token_type":"Bearer","refresh_token":"rt-1"})"};
        }
        if (find_param(form, "refresh_token") != "rt-1")
          return HttpReply{400, {}, R"({"error":"invalid_grant"})"};
        return HttpReply{200, {}, refresh_reply};
      }
      return HttpReply{404, {}, ""};
    };
  }

  Authorizer authorizer() {
    return [this](const std::string& url, const std::string& redirect_uri) -> Result<std::string> {
      auto parsed = parse_http_url(url);
      if (!parsed) return std::unexpected(parsed.error());
      authorization_query = form_decode(parsed->query);
      challenge = find_param(authorization_query, "code_challenge").value_or("");
      const std::string state = find_param(authorization_query, "state").value_or("");
      return redirect_uri + "?code=the-code&state=" + (forge_state ? "forged" : state);
    };
  }

  std::map<std::string, json> documents_;
  std::vector<std::string> calls;
  json registration;
  QueryParams authorization_query;
  std::vector<QueryParams> token_forms;
  std::string challenge;
  std::string refresh_reply = R"({"access_token":"at-2","token_type":"Bearer"})";
  bool forge_state = false;
};

}  // namespace keel::mcp::testing
