// mcp/host/session_factory.cc — make_mcp_session_factory() (session_factory.h).
#include "mcp/host/session_factory.h"

#include "mcp/auth/loopback_redirect.h"
#include "mcp/auth/oauth_http_auth.h"
#include "mcp/client/http_transport.h"
#include "mcp/client/session_open.h"
#include "mcp/client/stdio_transport.h"
#include "mcp/host/mcp_host_errors.h"
#include "mcp/host/server_log.h"

namespace keel::mcp {
namespace {

// The OAuth layer of a server with `oauth`: its saved grant, the loopback listener its sign-ins come back
// to (or the hooks' own authorizer), and its grants saved.
Result<std::shared_ptr<McpHttpAuth>> oauth_for(const McpServerSettings& server, const McpOAuthHooks& hooks) {
  if (!hooks.fetch) {
    return fail(codes::kMcpServerUnavailable,
                "MCP server " + server.name +
                    ": it is signed in to with OAuth, which cannot be done here "
                    "(no credential store)");
  }
  OAuthHttpAuthOptions options;
  options.server_url = server.url;
  options.fetch = hooks.fetch;
  if (!server.oauth_client_id.empty()) {
    OAuthClient client;  // public: the configuration holds no secret
    client.client_id = server.oauth_client_id;
    options.preregistered = std::move(client);
  }
  if (hooks.load_grant) {
    auto grant = hooks.load_grant(server);
    if (!grant) return std::unexpected(grant.error().with_context("MCP server " + server.name + "'s grant"));
    options.grant = std::move(*grant);
  }
  if (hooks.save_grant) {
    options.on_grant = [save = hooks.save_grant, server](const OAuthGrant& grant) { save(server, grant); };
  }
  if (hooks.authorizer) {
    options.authorizer = hooks.authorizer;
    options.redirect_uri = hooks.redirect_uri;
  } else {
    std::shared_ptr<LoopbackRedirectListener> listener = KEEL_TRY(LoopbackRedirectListener::open());
    options.redirect_uri = listener->redirect_uri();
    auto show = [show = hooks.show_sign_in, name = server.name](const std::string& url) {
      if (show) show(name, url);
    };
    // The listener lives as long as the authorizer; sign-ins are one at a time (oauth_http_auth.h).
    options.authorizer =
        [listener,
         authorize = make_loopback_authorizer(*listener, std::move(show), server.connect_timeout, {})](
            const std::string& url, const std::string& redirect_uri) { return authorize(url, redirect_uri); };
  }
  return make_oauth_http_auth(std::move(options));
}

Result<std::unique_ptr<McpTransport>> http_transport_for(const McpServerSettings& server,
                                                         const McpBearerTokens& tokens,
                                                         const McpOAuthHooks& oauth) {
  HttpTransportOptions options;
  options.url = server.url;
  options.connect_timeout = server.connect_timeout;
  if (server.oauth) options.auth = KEEL_TRY(oauth_for(server, oauth));
  if (!server.credential.empty()) {
    if (!tokens) {
      return fail(codes::kMcpServerUnavailable,
                  "MCP server " + server.name + ": its credential cannot be read here (no credential store)");
    }
    options.bearer_token = [tokens, reference = server.credential,
                            name = server.name]() -> Result<std::string> {
      auto token = tokens(reference);
      if (!token) return std::unexpected(token.error().with_context("MCP server " + name + "'s credential"));
      if (!*token) {
        return fail(codes::kMcpServerUnavailable,
                    "MCP server " + name + ": its credential '" + reference + "' holds no token");
      }
      return std::move(**token);
    };
  }
  return make_http_transport(std::move(options));
}

// The events with the server's logging written to `log` first.
McpSessionEvents logged_events(McpSessionEvents events, const std::string& server,
                               std::shared_ptr<spdlog::logger> log) {
  auto server_log = std::make_shared<McpServerLog>(server, std::move(log));
  events.on_log = [server_log, next = std::move(events.on_log)](McpLogMessage message) {
    server_log->message(message);
    if (next) next(std::move(message));
  };
  events.on_problem = [server_log, next = std::move(events.on_problem)](const Error& problem, bool is_log) {
    if (is_log) {
      server_log->stderr_line(problem.message());
    } else {
      server_log->problem(problem);
    }
    if (next) next(problem, is_log);
  };
  return events;
}

}  // namespace

McpSessionFactory make_mcp_session_factory(McpBearerTokens tokens, std::shared_ptr<spdlog::logger> log,
                                           McpOAuthHooks oauth) {
  return
      [tokens = std::move(tokens), log = std::move(log), oauth = std::move(oauth)](
          const McpServerSettings& server, McpSessionEvents events) -> Result<std::shared_ptr<McpSession>> {
        std::unique_ptr<McpTransport> transport;
        if (!server.url.empty()) {
          transport = KEEL_TRY(http_transport_for(server, tokens, oauth));
        } else {
          StdioServerSpec spec;
          spec.command = server.command;
          spec.args = server.args;
          spec.env = server.env;
          spec.cwd = server.cwd;
          transport = KEEL_TRY(make_stdio_transport(std::move(spec)));
        }
        McpClientOptions options;
        options.handshake_timeout = server.connect_timeout;
        if (log) {
          options.log_level = mcp_log_level(log->level());
          events = logged_events(std::move(events), server.name, log);
        }
        return open_mcp_session(std::move(transport), std::move(options), std::move(events));
      };
}

}  // namespace keel::mcp
