// The web interface keel serves on its WebSocket port (issue 18, point 1), through a real socket: its files
// with their types and security headers, traversal refused on the wire, the not-built page, the one-time
// token traded once for a session cookie, the cookie upgrading only from keel's own Origin, the server token
// still working, Host rebinding refused on a plain GET, and held static downloads bounded in memory.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <fstream>

#include "engine/engine_harness.h"
#include "keel/error_codes.h"
#include "testing/temp_dir.h"
#include "transport/http_test_client.h"
#include "transport/rpc_test_client.h"
#include "transport/websocket_server.h"

namespace keel {
namespace {

namespace fs = std::filesystem;
namespace beast = boost::beast;
using testing::EngineHarness;
using testing::http_request;
using testing::HttpAnswer;
using testing::WsTestClient;
using Headers = std::vector<std::pair<std::string, std::string>>;

void write_ui_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// The HTTP status of a WebSocket upgrade with `headers` (Beast's client).
unsigned web_upgrade_status(uint16_t port, const Headers& headers, const std::string& target = "/rpc") {
  boost::asio::io_context io;
  beast::websocket::stream<boost::asio::ip::tcp::socket> ws(io);
  boost::asio::ip::tcp::resolver resolver(io);
  boost::asio::connect(ws.next_layer(), resolver.resolve("127.0.0.1", std::to_string(port)));
  ws.set_option(beast::websocket::stream_base::decorator([headers](beast::websocket::request_type& r) {
    for (const auto& [name, value] : headers) r.set(name, value);
  }));
  beast::websocket::response_type response;
  beast::error_code error;
  ws.handshake(response, "127.0.0.1:" + std::to_string(port), target, error);
  return response.result_int();
}

// "keel_session_<port>=<value>" from a Set-Cookie value ("" when there is none).
std::string cookie_pair(const HttpAnswer& answer) {
  const std::string set = answer.header("set-cookie");
  return set.substr(0, set.find(';'));
}

size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  size_t resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

class WebInterfaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    h.start();
    ui_ = dir_.path() / "dist";
    write_ui_file(ui_ / "index.html", "<!doctype html><script type=module src=/assets/app-1a2b.js></script>");
    write_ui_file(ui_ / "assets" / "app-1a2b.js", "console.log('keel')");
    write_ui_file(ui_ / "assets" / "app-1a2b.css", "body{}");
    write_ui_file(dir_.path() / "secret.txt", "private");
  }
  void TearDown() override {
    for (auto& server : servers_) server->stop();
    h.stop();
  }
  // A server with the token "s3cret", the one-time token "once-0123456789" and `ui_dir`.
  WebSocketServer& serve(fs::path ui_dir, WebSocketServerOptions options = {}) {
    if (options.token.empty() && !options.allow_without_token) options.token = "s3cret";
    options.ui_dir = std::move(ui_dir);
    options.ui_one_time_token = "once-0123456789";
    auto started = WebSocketServer::start(*h.transport, std::move(options));
    EXPECT_TRUE(started) << started.error().to_string();
    servers_.push_back(std::move(started).value());
    return *servers_.back();
  }
  std::string own_origin(uint16_t port) const { return "http://127.0.0.1:" + std::to_string(port); }

  EngineHarness h;
  testing::TempDir dir_;
  fs::path ui_;
  std::vector<std::unique_ptr<WebSocketServer>> servers_;
};

TEST_F(WebInterfaceTest, FilesAreServedWithTheirTypesCachingAndSecurityHeaders) {
  const uint16_t port = serve(ui_).port();
  const HttpAnswer index = http_request(port, "GET", "/");
  EXPECT_EQ(index.status, 200u);
  EXPECT_EQ(index.body, "<!doctype html><script type=module src=/assets/app-1a2b.js></script>");
  EXPECT_EQ(index.header("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(index.header("cache-control"), "no-cache");
  EXPECT_EQ(
      index.header("content-security-policy"),
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src "
      "'self' ws://127.0.0.1:" +
          std::to_string(port) + "; object-src 'none'; base-uri 'none'; frame-ancestors 'none'");
  EXPECT_EQ(index.header("x-content-type-options"), "nosniff");
  EXPECT_EQ(index.header("referrer-policy"), "no-referrer");
  EXPECT_EQ(index.header("x-frame-options"), "DENY");

  const HttpAnswer script = http_request(port, "GET", "/assets/app-1a2b.js");
  EXPECT_EQ(script.status, 200u);
  EXPECT_EQ(script.body, "console.log('keel')");
  EXPECT_EQ(script.header("content-type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(script.header("cache-control"), "public, max-age=31536000, immutable");
  EXPECT_EQ(http_request(port, "GET", "/assets/app-1a2b.css").header("content-type"),
            "text/css; charset=utf-8");

  const HttpAnswer head = http_request(port, "HEAD", "/assets/app-1a2b.js");
  EXPECT_EQ(head.status, 200u);
  EXPECT_EQ(head.header("content-length"), "19");
  EXPECT_EQ(head.body, "");

  const HttpAnswer missing = http_request(port, "GET", "/nothing.js");
  EXPECT_EQ(missing.status, 404u);
  EXPECT_EQ(missing.header("x-content-type-options"), "nosniff");
  const HttpAnswer put = http_request(port, "PUT", "/index.html");
  EXPECT_EQ(put.status, 405u);
  EXPECT_EQ(put.header("x-frame-options"), "DENY");
  EXPECT_EQ(http_request(port, "DELETE", "/session").status, 405u);
  EXPECT_EQ(http_request(port, "GET", "/rpc").status, 426u);
}

TEST_F(WebInterfaceTest, TraversalEncodedSlashesAndASymlinkOutAreRefusedOnTheWire) {
  fs::create_symlink(dir_.path() / "secret.txt", ui_ / "assets" / "link.js");
  const uint16_t port = serve(ui_).port();
  for (const char* target : {"/../secret.txt", "/assets/../../secret.txt", "/%2e%2e/secret.txt",
                             "/assets%2f..%2f..%2fsecret.txt", "/assets/link.js", "/assets/"}) {
    const HttpAnswer answer = http_request(port, "GET", target);
    EXPECT_EQ(answer.status, 404u) << target;
    EXPECT_EQ(answer.body.find("private"), std::string::npos) << target;
  }
}

TEST_F(WebInterfaceTest, WithoutABuiltAppTheRootSaysHowToBuildIt) {
  const uint16_t port = serve(dir_.path() / "not-built").port();
  const HttpAnswer page = http_request(port, "GET", "/");
  EXPECT_EQ(page.status, 200u);
  EXPECT_NE(page.body.find("cd web &amp;&amp; npm ci &amp;&amp; npm run build"), std::string::npos)
      << page.body;
  EXPECT_EQ(page.body.find("<script"), std::string::npos);
  EXPECT_NE(page.header("content-security-policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(http_request(port, "GET", "/assets/app-1a2b.js").status, 404u);
}

TEST_F(WebInterfaceTest, TheOneTimeTokenOpensOneSessionOnlyAndItsCookieUpgradesFromKeelsOwnOrigin) {
  WebSocketServer& server = serve(ui_);
  const uint16_t port = server.port();
  EXPECT_EQ(server.one_time_token(), "once-0123456789");
  const Headers bearer = {{"Authorization", "Bearer once-0123456789"}, {"Origin", own_origin(port)}};
  EXPECT_EQ(http_request(port, "POST", "/session", {{"Authorization", "Bearer wrong-token"}}).status, 401u);
  const HttpAnswer opened = http_request(port, "POST", "/session", bearer);
  ASSERT_EQ(opened.status, 204u);
  const std::string set_cookie = opened.header("set-cookie");
  EXPECT_TRUE(set_cookie.ends_with("; HttpOnly; SameSite=Strict; Path=/")) << set_cookie;
  const std::string cookie = cookie_pair(opened);
  ASSERT_TRUE(cookie.starts_with("keel_session_" + std::to_string(port) + "=")) << cookie;
  EXPECT_EQ(cookie.size(), std::string("keel_session_=").size() + std::to_string(port).size() + 64);
  EXPECT_EQ(opened.header("cache-control"), "no-store");
  EXPECT_EQ(http_request(port, "POST", "/session", bearer).status, 401u);  // used up
  EXPECT_EQ(server.web_session_count(), 1u);

  // The page: cookie and keel's own Origin. Two tabs share the cookie and both work.
  WsTestClient tab(port, "", {{"Origin", own_origin(port)}, {"Cookie", "theme=dark; " + cookie}}, "/rpc");
  EXPECT_TRUE(tab.request("thread.list").contains("result"));
  WsTestClient second_tab(port, "", {{"Origin", own_origin(port)}, {"Cookie", cookie}}, "/rpc");
  EXPECT_TRUE(second_tab.request("thread.list").contains("result"));
  // A page reloaded with the cookie keeps its session without a token.
  const HttpAnswer kept =
      http_request(port, "POST", "/session", {{"Origin", own_origin(port)}, {"Cookie", cookie}});
  EXPECT_EQ(kept.status, 204u);
  EXPECT_EQ(kept.header("set-cookie"), "");
  // Another site's page: refused for its Origin before anything; a client without Origin gets nothing for
  // the cookie; no cookie, or a made-up one, is 401.
  EXPECT_EQ(web_upgrade_status(port, {{"Origin", "http://evil.example"}, {"Cookie", cookie}}), 403u);
  EXPECT_EQ(web_upgrade_status(port, {{"Cookie", cookie}}), 401u);
  EXPECT_EQ(web_upgrade_status(port, {{"Origin", own_origin(port)}}), 401u);
  EXPECT_EQ(web_upgrade_status(
                port, {{"Origin", own_origin(port)},
                       {"Cookie", "keel_session_" + std::to_string(port) + "=" + std::string(64, 'a')}}),
            401u);
  // The cookie of a keel on another port is not this one's.
  EXPECT_EQ(web_upgrade_status(port, {{"Origin", own_origin(port)},
                                      {"Cookie", "keel_session_1" + cookie.substr(cookie.find('='))}}),
            401u);
}

TEST_F(WebInterfaceTest, TheServerTokenStillUpgradesAndAlsoOpensASession) {
  const uint16_t port = serve(ui_).port();
  WsTestClient client(port, "s3cret");
  EXPECT_TRUE(client.request("thread.list").contains("result"));
  const HttpAnswer opened = http_request(port, "POST", "/session", {{"Authorization", "Bearer s3cret"}});
  EXPECT_EQ(opened.status, 204u);
  EXPECT_FALSE(cookie_pair(opened).empty());
  // The server token does not spend the one-time token.
  EXPECT_EQ(http_request(port, "POST", "/session", {{"Authorization", "Bearer once-0123456789"}}).status,
            204u);
  // A foreign page is refused before its token is looked at.
  EXPECT_EQ(http_request(port, "POST", "/session",
                         {{"Authorization", "Bearer s3cret"}, {"Origin", "http://evil.example"}})
                .status,
            403u);
}

TEST_F(WebInterfaceTest, ASessionRequestWithABodyIsRefusedUnreadAndKeepsTheOneTimeToken) {
  const uint16_t port = serve(ui_).port();
  const HttpAnswer body = http_request(
      port, "POST", "/session", {{"Authorization", "Bearer once-0123456789"}, {"Content-Length", "1048576"}});
  EXPECT_EQ(body.status, 400u);
  EXPECT_NE(body.body.find(codes::kRpcBodyRefused), std::string::npos) << body.body;
  EXPECT_EQ(http_request(port, "POST", "/session", {{"Authorization", "Bearer once-0123456789"}}).status,
            204u);
}

TEST_F(WebInterfaceTest, WithoutATokenAnyoneGetsASessionButForeignPagesStillNot) {
  WebSocketServerOptions options;
  options.allow_without_token = true;
  const uint16_t port = serve(ui_, options).port();
  EXPECT_EQ(http_request(port, "POST", "/session", {{"Origin", own_origin(port)}}).status, 204u);
  EXPECT_EQ(http_request(port, "POST", "/session", {{"Origin", "http://evil.example"}}).status, 403u);
}

TEST_F(WebInterfaceTest, ARebindingHostIsRefusedOnAStaticGet) {
  const uint16_t port = serve(ui_).port();
  const HttpAnswer rebound = http_request(port, "GET", "/", {}, "evil.example:" + std::to_string(port));
  EXPECT_EQ(rebound.status, 403u);
  EXPECT_NE(rebound.body.find(codes::kRpcHostRefused), std::string::npos) << rebound.body;
  EXPECT_EQ(rebound.body.find("<!doctype"), std::string::npos);
  EXPECT_EQ(http_request(port, "GET", "/", {}, "localhost:" + std::to_string(port)).status, 200u);
}

// A client that asks for a file and reads nothing: its receive window is 4 KiB, so the server's write of a
// large file stalls with the file unread on disk.
class StalledDownload {
 public:
  explicit StalledDownload(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    const int small = 4096;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return;
    const std::string request =
        "GET /assets/big.bin HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n\r\n";
    (void)::send(fd_, request.data(), request.size(), MSG_NOSIGNAL);
  }
  ~StalledDownload() { ::close(fd_); }
  // The answer's status line (its first 12 bytes), blocking until they are there.
  std::string status_line() {
    std::string out;
    char chunk[12];
    while (out.size() < sizeof chunk) {
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk - out.size(), 0);
      if (n <= 0) break;
      out.append(chunk, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_;
};

// Issue 18: unauthenticated static GETs keep the caps of the upgrade: 200 clients that request an 8 MiB file
// and read nothing hold 64 connections (the rest get 503 at once), and the server streams from the file:
// its memory does not grow with the file (64 copies would be 512 MiB).
TEST_F(WebInterfaceTest, HeldStaticDownloadsAreCappedAndDoNotGrowMemory) {
  {
    std::ofstream big(ui_ / "assets" / "big.bin", std::ios::binary);
    const std::string block(1 << 20, 'x');
    for (int i = 0; i < 8; ++i) big << block;
  }
  WebSocketServerOptions options;
  options.handshake_timeout = std::chrono::minutes(10);  // no deadline during the test
  const uint16_t port = serve(ui_, options).port();
  ASSERT_EQ(http_request(port, "GET", "/").status, 200u);  // warm: the first connection's allocations
  const size_t before = resident_bytes();
  std::vector<std::unique_ptr<StalledDownload>> clients;
  for (int i = 0; i < 200; ++i) clients.push_back(std::make_unique<StalledDownload>(port));
  size_t served = 0;
  size_t busy = 0;
  for (auto& client : clients) {
    const std::string status = client->status_line();
    served += status == "HTTP/1.1 200" ? 1 : 0;
    busy += status == "HTTP/1.1 503" ? 1 : 0;
  }
  EXPECT_EQ(served, 64u);
  EXPECT_EQ(busy, 136u);
  const size_t after = resident_bytes();
  EXPECT_LT(after, before + (32u << 20)) << "RSS " << before / 1024 << " KiB -> " << after / 1024 << " KiB";
  std::cout << "[ measure ] 200 held 8 MiB static GETs: RSS " << before / 1024 << " KiB -> " << after / 1024
            << " KiB\n";
}

}  // namespace
}  // namespace keel
