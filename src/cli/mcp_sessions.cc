// cli/mcp_sessions.cc — mcp_session_factory() (mcp_sessions.h).
#include "cli/mcp_sessions.h"

#include "mcp/host/session_factory.h"

namespace keel::cli {

mcp::McpSessionFactory mcp_session_factory(const config::CredentialResolver* credentials,
                                           std::shared_ptr<spdlog::logger> logger) {
  if (credentials == nullptr) return mcp::make_mcp_session_factory(nullptr, std::move(logger));
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
      std::move(logger));
}

}  // namespace keel::cli
