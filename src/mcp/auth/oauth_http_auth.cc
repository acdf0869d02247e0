// mcp/auth/oauth_http_auth.cc — see oauth_http_auth.h.
#include "mcp/auth/oauth_http_auth.h"

#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "mcp/auth/auth_errors.h"
#include "mcp/auth/www_authenticate.h"

namespace keel::mcp {
namespace {

constexpr std::chrono::seconds kExpiryMargin{30};

class OAuthHttpAuth final : public McpHttpAuth {
 public:
  explicit OAuthHttpAuth(OAuthHttpAuthOptions options) : options_(std::move(options)) {
    if (!options_.now) options_.now = [] { return std::chrono::steady_clock::now(); };
    if (options_.grant) adopt(*options_.grant, /*notify=*/false);
  }

  Result<std::string> token() override {
    const std::lock_guard lock(mu_);
    if (!grant_) return std::string();
    if (expires_at_ && options_.now() + kExpiryMargin >= *expires_at_ &&
        !grant_->tokens.refresh_token.empty())
      (void)refresh_locked();  // failing, the old token goes out and the server's 401 signs in again
    return grant_->tokens.access_token;
  }

  Result<void> on_challenge(int status, const std::string& www_authenticate,
                            const std::string& used_token) override {
    const std::lock_guard lock(mu_);
    std::optional<BearerChallenge> challenge;
    if (!www_authenticate.empty()) {
      auto parsed = parse_bearer_challenge(www_authenticate);
      if (!parsed) return std::unexpected(parsed.error());
      challenge = std::move(*parsed);
    }
    const bool insufficient_scope = challenge && challenge->error() == "insufficient_scope";
    if (status == 403 && !insufficient_scope) {
      return fail(codes::kMcpAuthDenied,
                  "the MCP server answered 403 without asking for more scope (insufficient_scope)");
    }
    if (grant_ && grant_->tokens.access_token != used_token) return {};  // renewed meanwhile
    if (status == 401 && grant_ && !grant_->tokens.refresh_token.empty() && refresh_locked()) return {};
    if (insufficient_scope) {
      // Step-up: what was granted or asked for so far, and what the challenge asks for now.
      std::string scope = scope_union(granted_scope_, challenge->scope().value_or(""));
      if (!scope.empty()) challenge->params["scope"] = std::move(scope);
    }
    return sign_in_locked(challenge);
  }

 private:
  bool refresh_locked() {
    auto refreshed = refresh(*grant_, options_.fetch);
    if (!refreshed) return false;
    adopt(std::move(*refreshed), /*notify=*/true);
    return true;
  }

  Result<void> sign_in_locked(const std::optional<BearerChallenge>& challenge) {
    SignInOptions sign_in_options;
    sign_in_options.client_name = options_.client_name;
    sign_in_options.redirect_uri = options_.redirect_uri;
    sign_in_options.preregistered = options_.preregistered;
    std::array<uint8_t, 16> state{};
    if (RAND_bytes(state.data(), static_cast<int>(state.size())) != 1 ||
        RAND_bytes(sign_in_options.pkce_entropy.data(),
                   static_cast<int>(sign_in_options.pkce_entropy.size())) != 1) {
      return fail(codes::kMcpAuthTokenFailed, "no randomness for the sign-in's state and PKCE verifier");
    }
    static constexpr char kHex[] = "0123456789abcdef";
    for (const uint8_t byte : state) {
      sign_in_options.state.push_back(kHex[byte >> 4]);
      sign_in_options.state.push_back(kHex[byte & 15]);
    }
    auto grant =
        sign_in(options_.server_url, challenge, sign_in_options, options_.fetch, options_.authorizer);
    if (!grant) return std::unexpected(grant.error().with_context("signing in to " + options_.server_url));
    if (challenge && challenge->scope()) granted_scope_ = scope_union(granted_scope_, *challenge->scope());
    adopt(std::move(*grant), /*notify=*/true);
    return {};
  }

  void adopt(OAuthGrant grant, bool notify) {
    granted_scope_ = scope_union(granted_scope_, grant.tokens.scope);
    expires_at_.reset();
    if (grant.tokens.expires_in) expires_at_ = options_.now() + *grant.tokens.expires_in;
    grant_ = std::move(grant);
    if (notify && options_.on_grant) options_.on_grant(*grant_);
  }

  OAuthHttpAuthOptions options_;
  std::mutex mu_;
  std::optional<OAuthGrant> grant_;
  std::optional<std::chrono::steady_clock::time_point> expires_at_;
  std::string granted_scope_;  // every scope granted or asked for so far
};

}  // namespace

std::string scope_union(const std::string& a, const std::string& b) {
  std::vector<std::string> scopes;
  for (const std::string* text : {&a, &b}) {
    std::istringstream words(*text);
    std::string scope;
    while (words >> scope) {
      if (std::find(scopes.begin(), scopes.end(), scope) == scopes.end()) scopes.push_back(scope);
    }
  }
  std::string joined;
  for (const std::string& scope : scopes) {
    if (!joined.empty()) joined.push_back(' ');
    joined += scope;
  }
  return joined;
}

std::shared_ptr<McpHttpAuth> make_oauth_http_auth(OAuthHttpAuthOptions options) {
  return std::make_shared<OAuthHttpAuth>(std::move(options));
}

}  // namespace keel::mcp
