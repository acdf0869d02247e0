// The static site over real loopback sockets, spoken to by a small synchronous Beast client.
#include "model_server/static_site.h"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <fstream>

#include "model_server/model_server_errors.h"
#include "testing/temp_dir.h"

namespace keel::model_server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace fs = std::filesystem;
using tcp = asio::ip::tcp;

struct Reply {
  unsigned status = 0;
  std::string content_type;
  std::string location;
  std::string content_length;
  std::string body;
};

// One connection to 127.0.0.1:port that can carry several requests.
class Client {
 public:
  explicit Client(uint16_t port) : socket_(ioc_) {
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }

  void send(http::verb method, const std::string& target, const std::string& body = "") {
    http::request<http::string_body> request(method, target, 11);
    request.set(http::field::host, "127.0.0.1");
    request.body() = body;
    request.prepare_payload();
    http::write(socket_, request);
    last_method_ = method;
  }

  Reply receive() {
    http::response_parser<http::string_body> parser;
    parser.body_limit(16 * 1024 * 1024);
    parser.skip(last_method_ == http::verb::head);
    http::read(socket_, buffer_, parser);
    const auto& response = parser.get();
    Reply reply;
    reply.status = response.result_int();
    reply.content_type = std::string(response[http::field::content_type]);
    reply.location = std::string(response[http::field::location]);
    reply.content_length = std::string(response[http::field::content_length]);
    reply.body = response.body();
    return reply;
  }

  // Reads until the server closes the connection; returns every byte received.
  std::string read_to_end() {
    std::string bytes(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    boost::system::error_code ec;
    std::string rest;
    asio::read(socket_, asio::dynamic_buffer(rest), ec);
    EXPECT_EQ(ec, asio::error::eof) << ec.message();
    return bytes + rest;
  }

 private:
  asio::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
  http::verb last_method_ = http::verb::get;
};

Reply fetch(uint16_t port, const std::string& target, http::verb method = http::verb::get) {
  Client client(port);
  client.send(method, target);
  return client.receive();
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

class StaticSiteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(dir_.path() / "site" / "index.html", "<p>home</p>");
    write_file(dir_.path() / "site" / "app.js", "let x = 1;");
    write_file(dir_.path() / "site" / "style.css", "p {}");
    write_file(dir_.path() / "site" / "report.bin", "\x01\x02");
    write_file(dir_.path() / "site" / "sub dir" / "index.html", "<p>sub</p>");
    write_file(dir_.path() / "secret.txt", "outside the root");
  }

  std::unique_ptr<StaticSite> start(size_t listeners = 1) {
    StaticSiteOptions options;
    options.root = root();
    options.listeners = listeners;
    auto site = StaticSite::start(std::move(options));
    EXPECT_TRUE(site) << site.error().to_string();
    return site ? std::move(*site) : nullptr;
  }

  fs::path root() const { return dir_.path() / "site"; }

  testing::TempDir dir_;
};

TEST_F(StaticSiteTest, ServesFilesWithTheirContentType) {
  auto site = start();
  const Reply page = fetch(site->port(), "/");
  EXPECT_EQ(page.status, 200u);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(page.body, "<p>home</p>");

  const Reply script = fetch(site->port(), "/app.js?v=2");
  EXPECT_EQ(script.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(script.body, "let x = 1;");
  EXPECT_EQ(fetch(site->port(), "/style.css").content_type, "text/css; charset=utf-8");

  // Unknown extensions are bytes, which a browser downloads instead of showing.
  const Reply download = fetch(site->port(), "/report.bin");
  EXPECT_EQ(download.content_type, "application/octet-stream");
  EXPECT_EQ(download.body, "\x01\x02");

  EXPECT_EQ(fetch(site->port(), "/sub%20dir/").body, "<p>sub</p>");
}

TEST_F(StaticSiteTest, AnswersHeadWithoutBodyAndPostWithTheFile) {
  auto site = start();
  const Reply head = fetch(site->port(), "/index.html", http::verb::head);
  EXPECT_EQ(head.status, 200u);
  EXPECT_EQ(head.content_length, "11");
  EXPECT_EQ(head.body, "");

  Client client(site->port());
  client.send(http::verb::post, "/index.html", "q=a+form");
  const Reply post = client.receive();
  EXPECT_EQ(post.status, 200u);
  EXPECT_EQ(post.body, "<p>home</p>");

  EXPECT_EQ(fetch(site->port(), "/index.html", http::verb::put).status, 405u);
}

TEST_F(StaticSiteTest, NeverServesAFileOutsideTheRoot) {
  fs::create_directory_symlink(dir_.path(), root() / "escape");
  auto site = start();
  for (const std::string target : {"/../secret.txt", "/%2e%2e/secret.txt", "/sub%20dir/..%2f..%2fsecret.txt",
                                   "/escape/secret.txt", "/missing.html", "/index.html%", "/%zz"}) {
    const Reply reply = fetch(site->port(), target);
    EXPECT_EQ(reply.status, 404u) << target;
    EXPECT_EQ(reply.body.find("outside the root"), std::string::npos) << target;
  }
}

TEST_F(StaticSiteTest, SlowAnswersAfterTheDelay) {
  auto site = start();
  const auto before = std::chrono::steady_clock::now();
  const Reply reply = fetch(site->port(), "/slow?ms=150");
  EXPECT_GE(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(150));
  EXPECT_EQ(reply.status, 200u);
  EXPECT_NE(reply.body.find("Answered after 150 ms."), std::string::npos);

  for (const std::string target : {"/slow", "/slow?ms=", "/slow?ms=x", "/slow?ms=-1", "/slow?ms=600001"}) {
    EXPECT_EQ(fetch(site->port(), target).status, 400u) << target;
  }
}

TEST_F(StaticSiteTest, HangNeverAnswersAndStopClosesIt) {
  auto site = start();
  Client client(site->port());
  client.send(http::verb::get, "/hang");
  ASSERT_TRUE(site->wait_for_request("/hang", std::chrono::seconds(30)));
  // The server still answers others while the request hangs.
  EXPECT_EQ(fetch(site->port(), "/").status, 200u);
  site->stop();
  EXPECT_EQ(client.read_to_end(), "");
}

TEST_F(StaticSiteTest, RedirectPointsAnywhere) {
  auto site = start();
  const Reply reply = fetch(site->port(), "/redirect?to=http%3A%2F%2Flocalhost%3A9%2Fpage.html%3Fa%3D1");
  EXPECT_EQ(reply.status, 302u);
  EXPECT_EQ(reply.location, "http://localhost:9/page.html?a=1");
  EXPECT_EQ(fetch(site->port(), "/redirect?to=/app.js").location, "/app.js");

  for (const std::string target : {"/redirect", "/redirect?to=", "/redirect?to=%0d%0aSet-Cookie:%20x"}) {
    EXPECT_EQ(fetch(site->port(), target).status, 400u) << target;
  }
}

TEST_F(StaticSiteTest, StatusAnswersTheCodeAsked) {
  auto site = start();
  const Reply unavailable = fetch(site->port(), "/status?code=503");
  EXPECT_EQ(unavailable.status, 503u);
  EXPECT_NE(unavailable.body.find("Status 503."), std::string::npos);

  // Several answers on one connection: a bodiless status must not desynchronise the next one.
  Client client(site->port());
  client.send(http::verb::get, "/status?code=204");
  const Reply empty = client.receive();
  EXPECT_EQ(empty.status, 204u);
  EXPECT_EQ(empty.body, "");
  client.send(http::verb::get, "/status?code=404");
  EXPECT_EQ(client.receive().status, 404u);

  for (const std::string target : {"/status", "/status?code=199", "/status?code=600", "/status?code=2x"}) {
    EXPECT_EQ(fetch(site->port(), target).status, 400u) << target;
  }
}

TEST_F(StaticSiteTest, ListenersOnTwoPortsServeTheSameRoot) {
  auto site = start(2);
  ASSERT_NE(site->port(0), 0);
  ASSERT_NE(site->port(1), 0);
  EXPECT_NE(site->port(0), site->port(1));
  EXPECT_EQ(fetch(site->port(1), "/").body, "<p>home</p>");
  EXPECT_EQ(site->origin(1, "localhost"), "http://localhost:" + std::to_string(site->port(1)));
  EXPECT_EQ(site->origin(), "http://127.0.0.1:" + std::to_string(site->port(0)));
}

TEST_F(StaticSiteTest, RecordsEveryRequestInOrder) {
  auto site = start(2);
  EXPECT_EQ(fetch(site->port(0), "/app.js?v=1").status, 200u);
  EXPECT_EQ(fetch(site->port(1), "/missing").status, 404u);
  EXPECT_EQ(site->requests(), (std::vector<std::string>{"/app.js?v=1", "/missing"}));
  EXPECT_TRUE(site->wait_for_request("/app.js", std::chrono::seconds(30)));
  EXPECT_FALSE(site->wait_for_request("/never", std::chrono::milliseconds(1)));
}

TEST_F(StaticSiteTest, StartRefusesABadRootOrListenerCount) {
  StaticSiteOptions missing;
  missing.root = dir_.path() / "nope";
  const auto no_root = StaticSite::start(std::move(missing));
  ASSERT_FALSE(no_root);
  EXPECT_EQ(no_root.error().code(), codes::kInvalidArgument);

  StaticSiteOptions none;
  none.root = root();
  none.listeners = 0;
  const auto no_listener = StaticSite::start(std::move(none));
  ASSERT_FALSE(no_listener);
  EXPECT_EQ(no_listener.error().code(), codes::kInvalidArgument);
}

}  // namespace
}  // namespace keel::model_server
