// The checks of a WebSocket upgrade request, on the request header's bytes (issue 15, points 3, 4, 10).
#include "transport/ws_handshake.h"

#include <gtest/gtest.h>

#include <string>

#include "keel/error_codes.h"
#include "transport/transport_errors.h"

namespace keel {
namespace {

HandshakePolicy policy() {
  HandshakePolicy p;
  p.credentials = {{"owner", "s3cret"}, {"bob", "other-token"}};
  p.listen_host = "127.0.0.1";
  p.port = 7777;
  return p;
}

// An upgrade request header with `extra` header lines (each ending in \r\n).
std::string upgrade(const std::string& extra, const std::string& target = "/") {
  return "GET " + target +
         " HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
         extra + "\r\n";
}

HandshakeVerdict check(const std::string& bytes, const HandshakePolicy& p = policy()) {
  auto request = parse_handshake_header(bytes);
  if (!request) {
    HandshakeVerdict unparsed;
    unparsed.status = 0;
    unparsed.code = "unparsed";
    return unparsed;
  }
  return check_handshake(*request, p);
}

TEST(WsHandshakeTest, TheTokenNamesThePrincipal) {
  auto owner = check(upgrade("Host: 127.0.0.1:7777\r\nAuthorization: Bearer s3cret\r\n"));
  EXPECT_TRUE(owner.accepted()) << owner.message;
  EXPECT_EQ(owner.principal, "owner");
  auto bob = check(upgrade("Host: localhost:7777\r\n", "/rpc?token=other-token"));
  EXPECT_TRUE(bob.accepted()) << bob.message;
  EXPECT_EQ(bob.principal, "bob");
  EXPECT_EQ(check(upgrade("Host: 127.0.0.1\r\nAuthorization: Bearer s3cre\r\n")).status, 401u);
  EXPECT_EQ(check(upgrade("Host: 127.0.0.1\r\n")).code, codes::kRpcUnauthorized);
  HandshakePolicy open = policy();
  open.credentials.clear();
  auto anonymous = check(upgrade("Host: 127.0.0.1\r\n"), open);
  EXPECT_TRUE(anonymous.accepted());
  EXPECT_EQ(anonymous.principal, "anonymous");
}

TEST(WsHandshakeTest, ForeignOriginIsRefusedWith403EvenWithoutAToken) {
  HandshakePolicy open = policy();
  open.credentials.clear();  // --no-token: the case the issue found exploited
  for (const char* origin : {"http://evil.example", "https://evil.example:7777", "null",
                             "http://127.0.0.1:8080", "http://localhost.evil.example:7777", "file://"}) {
    auto verdict = check(upgrade("Host: 127.0.0.1:7777\r\nOrigin: " + std::string(origin) + "\r\n"), open);
    EXPECT_EQ(verdict.status, 403u) << origin;
    EXPECT_EQ(verdict.code, codes::kRpcOriginRefused) << origin;
  }
}

TEST(WsHandshakeTest, NoOriginKeelsOwnOriginAndListedOriginsPass) {
  const std::string token = "Authorization: Bearer s3cret\r\n";
  EXPECT_TRUE(check(upgrade("Host: 127.0.0.1:7777\r\n" + token)).accepted());
  EXPECT_TRUE(check(upgrade("Host: 127.0.0.1:7777\r\nOrigin: http://127.0.0.1:7777\r\n" + token)).accepted());
  EXPECT_TRUE(check(upgrade("Host: localhost:7777\r\nOrigin: HTTP://LOCALHOST:7777\r\n" + token)).accepted());
  EXPECT_TRUE(check(upgrade("Host: [::1]:7777\r\nOrigin: http://[::1]:7777\r\n" + token)).accepted());
  // Own origin means this Host: a page from localhost does not pass for 127.0.0.1.
  EXPECT_FALSE(
      check(upgrade("Host: 127.0.0.1:7777\r\nOrigin: http://localhost:7777\r\n" + token)).accepted());
  HandshakePolicy listed = policy();
  listed.allowed_origins = {"https://ui.example.org"};
  EXPECT_TRUE(
      check(upgrade("Host: 127.0.0.1\r\nOrigin: https://ui.example.org:443\r\n" + token), listed).accepted());
  EXPECT_FALSE(
      check(upgrade("Host: 127.0.0.1\r\nOrigin: http://ui.example.org\r\n" + token), listed).accepted());
}

TEST(WsHandshakeTest, RebindingHostIsRefusedWith403) {
  const std::string token = "Authorization: Bearer s3cret\r\n";
  for (const char* host :
       {"evil.example:7777", "evil.example", "127.0.0.1.evil.example", "localhost.evil.example"}) {
    auto verdict = check(upgrade("Host: " + std::string(host) + "\r\n" + token));
    EXPECT_EQ(verdict.status, 403u) << host;
    EXPECT_EQ(verdict.code, codes::kRpcHostRefused) << host;
  }
  EXPECT_EQ(check(upgrade(token)).code, codes::kRpcHostRefused);               // no Host at all
  EXPECT_TRUE(check(upgrade("Host: 127.0.0.2:7777\r\n" + token)).accepted());  // loopback
  EXPECT_FALSE(check(upgrade("Host: 192.168.1.5:7777\r\n" + token)).accepted());
  HandshakePolicy remote = policy();
  remote.listen_host = "0.0.0.0";
  remote.any_ip_host = true;
  remote.allowed_hosts = {"keel.lan"};
  EXPECT_TRUE(check(upgrade("Host: 192.168.1.5:7777\r\n" + token), remote).accepted());
  EXPECT_TRUE(check(upgrade("Host: KEEL.lan:7777\r\n" + token), remote).accepted());
  EXPECT_FALSE(check(upgrade("Host: evil.example:7777\r\n" + token), remote).accepted());
}

TEST(WsHandshakeTest, ABodyIsRefusedAndAmbiguousHeadersToo) {
  const std::string token = "Host: 127.0.0.1\r\nAuthorization: Bearer s3cret\r\n";
  auto body = check(upgrade(token + "Content-Length: 1048576\r\n"));
  EXPECT_EQ(body.status, 400u);
  EXPECT_EQ(body.code, codes::kRpcBodyRefused);
  EXPECT_EQ(check(upgrade(token + "Transfer-Encoding: chunked\r\n")).code, codes::kRpcBodyRefused);
  EXPECT_TRUE(check(upgrade(token + "Content-Length: 0\r\n")).accepted());
  EXPECT_EQ(check(upgrade(token + "Host: evil.example\r\n")).status, 400u);
  EXPECT_EQ(check(upgrade(token + "Origin: http://127.0.0.1\r\nOrigin: http://evil.example\r\n")).status,
            400u);
}

TEST(WsHandshakeTest, PlainHttpAndBrokenHeadersAreNotUpgraded) {
  auto plain = check("GET /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer s3cret\r\n\r\n");
  EXPECT_EQ(plain.status, 426u);
  EXPECT_FALSE(plain.accepted());
  EXPECT_FALSE(parse_handshake_header("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"));  // no end of header
  EXPECT_FALSE(parse_handshake_header("not http\r\n\r\n"));
  EXPECT_FALSE(
      parse_handshake_header(upgrade("X-Pad: " + std::string(kMaxHandshakeHeaderBytes, 'a') + "\r\n")));
}

// Issue 18: the web interface's requests on the same port.
std::string plain(const std::string& method, const std::string& target, const std::string& extra) {
  return method + " " + target + " HTTP/1.1\r\n" + extra + "\r\n";
}

TEST(WsHandshakeTest, StaticGetsNeedNoTokenButPassHostOriginAndBodyChecks) {
  const auto file = check(plain("GET", "/assets/app.js", "Host: 127.0.0.1:7777\r\n"));
  EXPECT_EQ(file.action, HandshakeAction::kServeFile);
  EXPECT_EQ(file.self_host, "127.0.0.1:7777");
  EXPECT_EQ(check(plain("HEAD", "/", "Host: localhost\r\n")).self_host, "localhost:7777");
  EXPECT_EQ(check(plain("GET", "/", "Host: evil.example:7777\r\n")).code, codes::kRpcHostRefused);
  EXPECT_EQ(check(plain("GET", "/", "Host: 127.0.0.1:7777\r\nOrigin: http://evil.example\r\n")).code,
            codes::kRpcOriginRefused);
  EXPECT_EQ(check(plain("GET", "/", "Host: 127.0.0.1\r\nContent-Length: 5\r\n")).code,
            codes::kRpcBodyRefused);
  EXPECT_EQ(check(plain("PUT", "/", "Host: 127.0.0.1\r\n")).status, 405u);
  EXPECT_EQ(check(plain("GET", "/session", "Host: 127.0.0.1\r\n")).status, 405u);
}

TEST(WsHandshakeTest, PostSessionTakesTheOneTimeTokenOnceOrTheServerToken) {
  UiSessions sessions("once-0123456789");
  HandshakePolicy p = policy();
  p.sessions = &sessions;
  const std::string host = "Host: 127.0.0.1:7777\r\nOrigin: http://127.0.0.1:7777\r\n";
  const auto opened = check(plain("POST", "/session", host + "Authorization: Bearer once-0123456789\r\n"), p);
  EXPECT_EQ(opened.action, HandshakeAction::kOpenSession);
  EXPECT_EQ(opened.status, 204u);
  const auto again = check(plain("POST", "/session", host + "Authorization: Bearer once-0123456789\r\n"), p);
  EXPECT_EQ(again.status, 401u);
  EXPECT_EQ(again.code, codes::kRpcUnauthorized);
  EXPECT_EQ(check(plain("POST", "/session", host + "Authorization: Bearer s3cret\r\n"), p).action,
            HandshakeAction::kOpenSession);
  // Another principal's token is no web session: the page is the owner.
  EXPECT_EQ(check(plain("POST", "/session", host + "Authorization: Bearer other-token\r\n"), p).status, 401u);
  EXPECT_EQ(check(plain("POST", "/session", host), p).status, 401u);
  EXPECT_EQ(check(plain("POST", "/session", "Host: 127.0.0.1\r\nAuthorization: Bearer s3cret\r\n")).status,
            404u);  // a server without a web interface
  HandshakePolicy open = p;
  open.credentials.clear();
  EXPECT_EQ(check(plain("POST", "/session", host), open).action, HandshakeAction::kOpenSession);
}

TEST(WsHandshakeTest, ASessionCookieUpgradesAsTheOwnerOnlyFromKeelsOwnOrigin) {
  UiSessions sessions;
  HandshakePolicy p = policy();
  p.sessions = &sessions;
  const std::string cookie = "Cookie: a=b; keel_session_7777=" + sessions.open() + "\r\n";
  const auto page =
      check(upgrade("Host: 127.0.0.1:7777\r\nOrigin: http://127.0.0.1:7777\r\n" + cookie, "/rpc"), p);
  EXPECT_TRUE(page.accepted()) << page.message;
  EXPECT_EQ(page.action, HandshakeAction::kUpgrade);
  EXPECT_EQ(page.principal, "owner");
  EXPECT_EQ(check(upgrade("Host: 127.0.0.1:7777\r\n" + cookie), p).status, 401u);  // no Origin
  EXPECT_EQ(check(upgrade("Host: 127.0.0.1:7777\r\nOrigin: http://evil.example\r\n" + cookie), p).status,
            403u);
  HandshakePolicy listed = p;
  listed.allowed_origins = {"https://ui.example.org"};
  EXPECT_EQ(
      check(upgrade("Host: 127.0.0.1:7777\r\nOrigin: https://ui.example.org\r\n" + cookie), listed).status,
      401u);  // a listed origin may connect with a token, not with keel's cookie
  EXPECT_EQ(check(upgrade("Host: 127.0.0.1:7777\r\nOrigin: http://127.0.0.1:7777\r\n"
                          "Cookie: keel_session_7777=" +
                          std::string(64, '0') + "\r\n"),
                  p)
                .status,
            401u);
  // The same name twice is ambiguous: neither counts.
  EXPECT_EQ(check(upgrade("Host: 127.0.0.1:7777\r\nOrigin: http://127.0.0.1:7777\r\n" + cookie +
                          "Cookie: keel_session_7777=x\r\n"),
                  p)
                .status,
            401u);
  EXPECT_EQ(session_cookie_name(7777), "keel_session_7777");
}

TEST(WsHandshakeTest, LoopbackAddresses) {
  EXPECT_TRUE(is_loopback_address("127.0.0.1"));
  EXPECT_TRUE(is_loopback_address("127.1.2.3"));
  EXPECT_TRUE(is_loopback_address("::1"));
  EXPECT_TRUE(is_loopback_address("::ffff:127.0.0.1"));
  EXPECT_FALSE(is_loopback_address("0.0.0.0"));
  EXPECT_FALSE(is_loopback_address("::"));
  EXPECT_FALSE(is_loopback_address("192.168.1.5"));
  EXPECT_FALSE(is_loopback_address("localhost"));
}

}  // namespace
}  // namespace keel
