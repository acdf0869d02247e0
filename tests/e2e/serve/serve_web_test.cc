// The web interface through the keel binary (issue 18, point 1): `keel ui --no-open` and `keel serve
// --listen --ui-dir` print a URL whose fragment's one-time token opens one web session; the session's cookie
// upgrades from keel's own Origin; the server token from the token file also opens one; the app's files come
// with the security headers; a rebinding Host is refused; --ui-dir without a built app is refused.
#include <signal.h>

#include <fstream>
#include <regex>

#include "serve_fixture.h"
#include "transport/http_test_client.h"

namespace keel::e2e {
namespace {

namespace fs = std::filesystem;
using testing::http_request;
using testing::HttpAnswer;
using testing::WsTestClient;

// A tiny built app: what web/dist holds after `npm run build`.
fs::path write_fixture_app(const fs::path& dir) {
  fs::create_directories(dir / "assets");
  std::ofstream(dir / "index.html") << "<!doctype html><title>keel</title><script type=module "
                                       "src=/assets/app-0f1e.js></script>";
  std::ofstream(dir / "assets" / "app-0f1e.js") << "export {};";
  return dir;
}

struct PrintedUrl {
  uint16_t port = 0;
  std::string token;  // the fragment's one-time token ("" when none)
};

// Waits for the "keel: web interface URL" line.
PrintedUrl wait_for_url(ServeProcess& process) {
  const std::regex line("keel: web interface http://127\\.0\\.0\\.1:([0-9]+)/(#token=([0-9a-f]+))?\n");
  std::smatch found;
  const bool printed =
      process.wait_stderr([&](const std::string& err) { return std::regex_search(err, line); });
  const std::string err = process.err();
  if (!printed || !std::regex_search(err, found, line)) {
    ADD_FAILURE() << "no web interface URL; stderr:\n" << err;
    return {};
  }
  return PrintedUrl{static_cast<uint16_t>(std::stoi(found[1].str())), found[3].str()};
}

std::string session_cookie(const HttpAnswer& answer) {
  const std::string set = answer.header("set-cookie");
  return set.substr(0, set.find(';'));
}

using ServeWebTest = ServeFixture;

TEST_F(ServeWebTest, KeelUiPrintsAUrlWhoseOneTimeTokenOpensOneSessionForThePage) {
  start_model(unused_script());
  const fs::path app = write_fixture_app(dir_.path() / "dist");
  ServeProcess& process =
      spawn({"--no-open", "--ui-dir", app.string(), "--workspace", workspace_.string()}, {}, false, "ui");
  const PrintedUrl url = wait_for_url(process);
  ASSERT_NE(url.port, 0);
  ASSERT_EQ(url.token.size(), 64u);
  const std::string origin = "http://127.0.0.1:" + std::to_string(url.port);

  const HttpAnswer index = http_request(url.port, "GET", "/");
  EXPECT_EQ(index.status, 200u);
  EXPECT_NE(index.body.find("/assets/app-0f1e.js"), std::string::npos) << index.body;
  EXPECT_NE(index.header("content-security-policy")
                .find("connect-src 'self' ws://127.0.0.1:" + std::to_string(url.port)),
            std::string::npos);
  EXPECT_EQ(http_request(url.port, "GET", "/assets/app-0f1e.js").header("content-type"),
            "text/javascript; charset=utf-8");

  const std::vector<std::pair<std::string, std::string>> login = {{"Authorization", "Bearer " + url.token},
                                                                  {"Origin", origin}};
  const HttpAnswer opened = http_request(url.port, "POST", "/session", login);
  ASSERT_EQ(opened.status, 204u);
  const std::string cookie = session_cookie(opened);
  EXPECT_TRUE(cookie.starts_with("keel_session_" + std::to_string(url.port) + "=")) << cookie;
  EXPECT_EQ(http_request(url.port, "POST", "/session", login).status, 401u);

  WsTestClient& page = adopt(std::make_unique<WsTestClient>(
      url.port, "", std::vector<std::pair<std::string, std::string>>{{"Origin", origin}, {"Cookie", cookie}},
      "/rpc"));
  EXPECT_TRUE(page.request("initialize", {{"subscribe", true}}).contains("result"));
  EXPECT_TRUE(page.request("thread.list").contains("result"));
  process.signal(SIGTERM);
  EXPECT_EQ(process.wait_exit(), 0);
}

TEST_F(ServeWebTest, ServeListenServesTheAppAndTheTokenFileAlsoOpensASession) {
  start_model(unused_script());
  const fs::path app = write_fixture_app(dir_.path() / "dist");
  ServeProcess& process = spawn({"--listen", "127.0.0.1:0", "--token-file", token_file_.string(), "--ui-dir",
                                 app.string(), "--workspace", workspace_.string()});
  const PrintedUrl url = wait_for_url(process);
  ASSERT_NE(url.port, 0);
  EXPECT_EQ(url.token.size(), 64u);
  EXPECT_EQ(http_request(url.port, "GET", "/").status, 200u);
  const HttpAnswer rebound =
      http_request(url.port, "GET", "/", {}, "evil.example:" + std::to_string(url.port));
  EXPECT_EQ(rebound.status, 403u);
  const HttpAnswer opened =
      http_request(url.port, "POST", "/session", {{"Authorization", std::string("Bearer ") + kToken}});
  EXPECT_EQ(opened.status, 204u);
  EXPECT_FALSE(session_cookie(opened).empty());
  WsTestClient& client = connect(url.port);  // the token itself, as before
  EXPECT_TRUE(client.request("thread.list").contains("result"));
}

TEST_F(ServeWebTest, AUiDirWithoutABuiltAppIsRefused) {
  start_model(unused_script());
  ServeProcess& process = spawn({"--no-open", "--ui-dir", (dir_.path() / "empty").string()}, {}, false, "ui");
  EXPECT_EQ(process.wait_exit(), 2);
  EXPECT_NE(process.err().find("holds no index.html"), std::string::npos) << process.err();
}

}  // namespace
}  // namespace keel::e2e
