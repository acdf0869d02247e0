// cli/mcp_sessions.cc — mcp_session_factory() (mcp_sessions.h).
#include "cli/mcp_sessions.h"

#include <spdlog/logger.h>

#include <iostream>

#include "mcp/auth/http_fetch.h"
#include "mcp/host/session_factory.h"
#include "providers/http/http_client.h"
#include "util/terminal_text.h"

namespace keel::cli {
namespace {

// Sign-ins through keel's own HTTP client (never the transports'), grants in the vault.
mcp::McpOAuthHooks oauth_hooks(mcp::OAuthGrantVault* grants, std::shared_ptr<spdlog::logger> logger) {
  mcp::McpOAuthHooks hooks;
  if (grants == nullptr) return hooks;
  hooks.fetch = mcp::make_http_fetch(std::make_shared<providers::CurlHttpClient>());
  hooks.load_grant = [grants](const mcp::McpServerSettings& server) {
    return grants->load(server.name, server.url);
  };
  hooks.save_grant = [grants, logger](const mcp::McpServerSettings& server, const mcp::OAuthGrant& grant) {
    auto saved = grants->save(server.name, server.url, grant);
    if (saved) return;
    // The sign-in still holds for this session; the next start asks the person again.
    std::cerr << "keel: warning: MCP server " << terminal_safe(server.name, LineBreaks::kShow)
              << "'s sign-in could not be kept: "
              << terminal_safe(saved.error().to_string(), LineBreaks::kShow) << "\n";
    if (logger)
      logger->warn("MCP server {}'s sign-in could not be kept: {}", server.name, saved.error().to_string());
  };
  hooks.show_sign_in = [](const std::string& server, const std::string& url) {
    std::cerr << "MCP server " << terminal_safe(server, LineBreaks::kShow)
              << " asks you to sign in: " << terminal_safe(url, LineBreaks::kShow) << "\n"
              << std::flush;
  };
  return hooks;
}

}  // namespace

mcp::McpSessionFactory mcp_session_factory(const config::CredentialResolver* credentials,
                                           std::shared_ptr<spdlog::logger> logger,
                                           mcp::OAuthGrantVault* grants) {
  mcp::McpOAuthHooks oauth = oauth_hooks(grants, logger);
  if (credentials == nullptr)
    return mcp::make_mcp_session_factory(nullptr, std::move(logger), std::move(oauth));
  return mcp::make_mcp_session_factory(
      [credentials](const std::string& reference) -> Result<std::optional<std::string>> {
        // The reference as config::CredentialRef::reference() wrote it: "env:NAME" or a stored id.
        config::CredentialRef ref;
        if (reference.starts_with("env:")) {
          ref.source = config::CredentialRef::Source::kEnvironment;
          ref.name = reference.substr(4);
        } else {
          ref.source = config::CredentialRef::Source::kStored;
          ref.name = reference;
        }
        auto secret = credentials->resolve(ref);
        if (!secret) return std::unexpected(secret.error());
        if (!*secret) return std::optional<std::string>();
        return std::optional<std::string>(std::string((*secret)->reveal()));
      },
      std::move(logger), std::move(oauth));
}

}  // namespace keel::cli
