// mcp/host/session_factory_oauth_test.cc — the real session factory with a `url` server configured for
// OAuth: a scripted loopback MCP server (http_test_server.h) answers 401 until it sees the granted token,
// and the in-memory authorization server (fake_authorization_server.h) consents without a person. The
// factory's session signs in and lists the tools; the grant it saves lets a second factory connect without
// signing in again; without an injected authorizer the URL is shown and the redirect comes back to the
// loopback listener; without a sign-in's HTTP (no credential store) the server fails with a coded error.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <future>
#include <mutex>
#include <thread>

#include "mcp/auth/fake_authorization_server.h"
#include "mcp/auth/oauth_url.h"
#include "mcp/client/http_test_server.h"
#include "mcp/host/mcp_host_errors.h"
#include "mcp/host/session_factory.h"

namespace keel::mcp {
namespace {

using nlohmann::json;
using testing::TestConnection;
using testing::TestHttpServer;
using testing::TestRequest;
constexpr char kMetadata[] = "https://meta.example.com/prm";
constexpr auto kBound = std::chrono::seconds(30);  // only bounds a hang

// An MCP server over Streamable HTTP that refuses every request without "Bearer at-1".
void mcp_server(const TestRequest& r, TestConnection& c) {
  if (r.header("authorization") != "Bearer at-1") {
    c.json(
        401, "{}",
        {std::string("WWW-Authenticate: Bearer resource_metadata=\"") + kMetadata + "\", scope=\"tools\""});
    return;
  }
  if (r.method != "POST") return c.head(405, "");  // no stream for server messages, no session to end
  const json message = json::parse(r.body);
  if (!message.contains("id")) return c.head(202, "");
  json result = json::object();
  if (message["method"] == "initialize") {
    result = {{"protocolVersion", message["params"]["protocolVersion"]},
              {"capabilities", {{"tools", json::object()}}},
              {"serverInfo", {{"name", "signed"}, {"version", "1"}}}};
  } else if (message["method"] == "tools/list") {
    result = {{"tools", json::array({{{"name", "echo"}, {"inputSchema", {{"type", "object"}}}}})}};
  }
  c.json(200, json{{"jsonrpc", "2.0"}, {"id", message["id"]}, {"result", result}}.dump());
}

// What the person's browser does after consenting: GET the redirect on 127.0.0.1, read the page to the end.
void follow_redirect(const std::string& redirect) {
  auto url = parse_http_url(redirect);
  ASSERT_TRUE(url.has_value()) << url.error().to_string();
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(std::stoi(url->port)));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API takes a sockaddr
  ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  const std::string request =
      "GET " + url->path + "?" + url->query + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::array<char, 4096> buffer{};
  while (::recv(fd, buffer.data(), buffer.size(), 0) > 0) {
  }
  ::close(fd);
}

class SessionFactoryOAuthTest : public ::testing::Test {
 protected:
  SessionFactoryOAuthTest() {
    authorization_.documents_[kMetadata] = {{"resource", server_.url()},
                                            {"authorization_servers", {testing::kIssuer}}};
    settings_.name = "signed";
    settings_.url = server_.url();
    settings_.oauth = true;
    settings_.connect_timeout = kBound;
  }

  // Hooks keeping the grant here, as the credential vault would; `authorizer` consents (or refuses).
  McpOAuthHooks hooks(Authorizer authorizer) {
    McpOAuthHooks out;
    out.fetch = authorization_.fetch();
    out.authorizer = std::move(authorizer);
    out.redirect_uri = testing::kRedirect;
    out.load_grant = [this](const McpServerSettings& server) -> Result<std::optional<OAuthGrant>> {
      EXPECT_EQ(server.name, "signed");
      const std::lock_guard lock(mu_);
      return saved_;
    };
    out.save_grant = [this](const McpServerSettings& server, const OAuthGrant& grant) {
      EXPECT_EQ(server.name, "signed");
      const std::lock_guard lock(mu_);
      saved_ = grant;
    };
    return out;
  }

  std::vector<std::string> list_tools(McpOAuthHooks oauth) {
    auto session = make_mcp_session_factory(nullptr, nullptr, std::move(oauth))(settings_, {});
    EXPECT_TRUE(session.has_value()) << session.error().to_string();
    if (!session) return {};
    std::promise<Result<std::vector<McpToolInfo>>> promise;
    (*session)->list_tools([&](Result<std::vector<McpToolInfo>> r) { promise.set_value(std::move(r)); });
    auto future = promise.get_future();
    std::vector<std::string> names;
    if (future.wait_for(kBound) == std::future_status::ready) {
      auto tools = future.get();
      EXPECT_TRUE(tools.has_value()) << tools.error().to_string();
      if (tools) {
        for (const McpToolInfo& tool : *tools) names.push_back(tool.name);
      }
    }
    (*session)->close();
    return names;
  }

  TestHttpServer server_{mcp_server};
  testing::FakeAuthorizationServer authorization_;
  McpServerSettings settings_;
  std::mutex mu_;
  std::optional<OAuthGrant> saved_;
};

TEST_F(SessionFactoryOAuthTest, AServerAnswering401IsSignedInToAndItsToolsListed) {
  EXPECT_EQ(list_tools(hooks(authorization_.authorizer())), std::vector<std::string>{"echo"});
  EXPECT_EQ(find_param(authorization_.authorization_query, "resource"), server_.url());
  EXPECT_EQ(find_param(authorization_.authorization_query, "scope"), "tools");
  const std::lock_guard lock(mu_);
  ASSERT_TRUE(saved_.has_value());
  EXPECT_EQ(saved_->tokens.access_token, "at-1");
}

TEST_F(SessionFactoryOAuthTest, ASavedGrantIsReusedByAnotherFactoryWithoutSigningInAgain) {
  ASSERT_EQ(list_tools(hooks(authorization_.authorizer())), std::vector<std::string>{"echo"});
  const size_t token_requests = authorization_.token_forms.size();
  int sign_ins = 0;
  Authorizer refuses = [&](const std::string&, const std::string&) -> Result<std::string> {
    ++sign_ins;
    return std::unexpected(Error("mcp.auth_denied", "nobody is here to sign in"));
  };
  EXPECT_EQ(list_tools(hooks(std::move(refuses))), std::vector<std::string>{"echo"});
  EXPECT_EQ(sign_ins, 0);
  EXPECT_EQ(authorization_.token_forms.size(), token_requests);
}

TEST_F(SessionFactoryOAuthTest, WithoutAnAuthorizerTheURLIsShownAndTheBrowsersRedirectComesBackToLoopback) {
  McpOAuthHooks oauth = hooks(nullptr);
  std::vector<std::string> shown;
  std::thread browser;
  oauth.show_sign_in = [&](const std::string& server, const std::string& url) {
    shown.push_back(server);
    auto parsed = parse_http_url(url);
    ASSERT_TRUE(parsed.has_value());
    const std::string redirect_uri = find_param(form_decode(parsed->query), "redirect_uri").value_or("");
    EXPECT_TRUE(redirect_uri.starts_with("http://127.0.0.1:")) << redirect_uri;
    // The fake server consents and names the redirect; the browser follows it while keel waits.
    auto redirect = authorization_.authorizer()(url, redirect_uri);
    ASSERT_TRUE(redirect.has_value());
    browser = std::thread([target = *redirect] { follow_redirect(target); });
  };
  EXPECT_EQ(list_tools(std::move(oauth)), std::vector<std::string>{"echo"});
  if (browser.joinable()) browser.join();
  EXPECT_EQ(shown, std::vector<std::string>{"signed"});
  const std::lock_guard lock(mu_);
  ASSERT_TRUE(saved_.has_value());
  EXPECT_EQ(saved_->tokens.access_token, "at-1");
}

TEST_F(SessionFactoryOAuthTest, AConfiguredClientIdIsUsedWithoutRegistering) {
  settings_.oauth_client_id = "keel-client";
  EXPECT_EQ(list_tools(hooks(authorization_.authorizer())), std::vector<std::string>{"echo"});
  EXPECT_EQ(find_param(authorization_.authorization_query, "client_id"), "keel-client");
  EXPECT_TRUE(authorization_.registration.is_null()) << authorization_.registration.dump();
  ASSERT_FALSE(authorization_.token_forms.empty());
  EXPECT_EQ(find_param(authorization_.token_forms[0], "client_id"), "keel-client");
}

TEST_F(SessionFactoryOAuthTest, WithoutASignInsHttpTheServerFailsAsUnavailable) {
  auto session = make_mcp_session_factory(nullptr)(settings_, {});
  ASSERT_FALSE(session.has_value());
  EXPECT_EQ(session.error().code(), codes::kMcpServerUnavailable);
  EXPECT_TRUE(server_.requests().empty());
}

}  // namespace
}  // namespace keel::mcp
