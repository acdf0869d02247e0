// What only the WebSocket transport does: the checks before the upgrade (token, Origin, Host, no body, a
// bounded header, a cap and a deadline on unauthenticated connections), the accept back-off at the descriptor
// limit, principals bound to tokens, many clients at once.
#include "transport/websocket_server.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <cerrno>
#include <condition_variable>
#include <map>
#include <mutex>

#include "engine/engine_harness.h"
#include "keel/error_codes.h"
#include "transport/rpc_test_client.h"

namespace keel {
namespace {

namespace beast = boost::beast;
using nlohmann::json;
using testing::EngineHarness;
using testing::ScriptedResponse;
using testing::WsTestClient;

// What a real WebSocket client (Beast's) got for its upgrade.
struct Upgrade {
  unsigned status = 0;
  std::string body;  // the refusal's JSON
};

// Tries the upgrade with `header_token` (Authorization: Bearer), `target`, the Host `host` and, when not
// empty, the Origin `origin` (what a browser sends for a page).
Upgrade try_upgrade(uint16_t port, const std::string& header_token, const std::string& target,
                    const std::string& host = "127.0.0.1", const std::string& origin = "") {
  boost::asio::io_context io;
  beast::websocket::stream<boost::asio::ip::tcp::socket> ws(io);
  boost::asio::ip::tcp::resolver resolver(io);
  boost::asio::connect(ws.next_layer(), resolver.resolve("127.0.0.1", std::to_string(port)));
  ws.set_option(
      beast::websocket::stream_base::decorator([header_token, origin](beast::websocket::request_type& r) {
        if (!header_token.empty()) r.set(beast::http::field::authorization, "Bearer " + header_token);
        if (!origin.empty()) r.set(beast::http::field::origin, origin);
      }));
  beast::websocket::response_type response;
  beast::error_code error;
  ws.handshake(response, host, target, error);
  return Upgrade{response.result_int(), response.body()};
}

// The `code` of a refusal's JSON body ("" when it has none).
std::string code_of(const std::string& body) {
  const json parsed = json::parse(body, nullptr, false);
  return parsed.is_object() ? parsed.value("code", "") : "";
}

unsigned upgrade_status(uint16_t port, const std::string& header_token, const std::string& target) {
  return try_upgrade(port, header_token, target).status;
}

// A plain TCP client on 127.0.0.1:port for what no WebSocket client would send.
class RawClient {
 public:
  explicit RawClient(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~RawClient() { ::close(fd_); }
  bool connected() const { return connected_; }
  void send(const std::string& bytes) { (void)::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL); }
  // Everything the server sends until it closes the connection.
  std::string read_to_end() {
    std::string out;
    char chunk[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd_, chunk, sizeof chunk, 0)) > 0) out.append(chunk, static_cast<size_t>(n));
    return out;
  }

 private:
  int fd_;
  bool connected_ = false;
};

// A Scheduler the test fires by hand: no timer runs unless the test says so. Records every delay asked for.
class ManualTimers final : public Scheduler {
 public:
  std::unique_ptr<ScheduledTask> schedule_after(std::chrono::milliseconds delay,
                                                std::function<void()> callback) override {
    std::lock_guard<std::mutex> guard(mu_);
    const uint64_t id = ++next_;
    pending_[id] = {delay, std::move(callback)};
    delays_.push_back(delay);
    cv_.notify_all();
    return std::make_unique<Handle>(*this, id);
  }
  // Waits until `n` timers of `delay` were asked for in all.
  bool wait_asked(std::chrono::milliseconds delay, size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] {
      return static_cast<size_t>(std::count(delays_.begin(), delays_.end(), delay)) >= n;
    });
  }
  // Runs every pending timer of `delay` (under the lock, so a handle being destroyed waits for it).
  size_t fire(std::chrono::milliseconds delay) {
    std::lock_guard<std::mutex> guard(mu_);
    size_t fired = 0;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.first != delay) {
        ++it;
        continue;
      }
      auto callback = std::move(it->second.second);
      it = pending_.erase(it);
      callback();
      ++fired;
    }
    return fired;
  }
  std::vector<std::chrono::milliseconds> delays() const {
    std::lock_guard<std::mutex> guard(mu_);
    return delays_;
  }

 private:
  class Handle final : public ScheduledTask {
   public:
    Handle(ManualTimers& timers, uint64_t id) : timers_(timers), id_(id) {}
    ~Handle() override {
      std::lock_guard<std::mutex> guard(timers_.mu_);
      timers_.pending_.erase(id_);
    }

   private:
    ManualTimers& timers_;
    uint64_t id_;
  };
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_ = 0;
  std::map<uint64_t, std::pair<std::chrono::milliseconds, std::function<void()>>> pending_;
  std::vector<std::chrono::milliseconds> delays_;
};

class WebSocketServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    h.start();
    WebSocketServerOptions options;
    options.token = "s3cret";
    auto started = WebSocketServer::start(*h.transport, options);
    ASSERT_TRUE(started) << started.error().to_string();
    server = std::move(started).value();
  }
  void TearDown() override {
    server->stop();
    h.stop();
  }
  EngineHarness h;
  std::unique_ptr<WebSocketServer> server;
};

TEST_F(WebSocketServerTest, WrongOrMissingTokenGetsHttp401BeforeTheUpgrade) {
  EXPECT_EQ(upgrade_status(server->port(), "", "/"), 401u);
  EXPECT_EQ(upgrade_status(server->port(), "wrong", "/"), 401u);
  EXPECT_EQ(upgrade_status(server->port(), "", "/?token=wrong"), 401u);
  EXPECT_EQ(upgrade_status(server->port(), "s3cret", "/"), 101u);
  EXPECT_EQ(upgrade_status(server->port(), "", "/rpc?x=1&token=s3cret"), 101u);
  // The engine is untouched and still serves a proper client.
  WsTestClient client(server->port(), "s3cret");
  EXPECT_TRUE(client.request("thread.list").contains("result"));
}

TEST_F(WebSocketServerTest, ServerWithoutTokenIsRefusedUnlessAllowedOnPurpose) {
  auto refused = WebSocketServer::start(*h.transport, {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), "invalid_argument");
  WebSocketServerOptions open;
  open.allow_without_token = true;
  auto allowed = WebSocketServer::start(*h.transport, open);
  ASSERT_TRUE(allowed) << allowed.error().to_string();
  EXPECT_EQ(upgrade_status((*allowed)->port(), "", "/"), 101u);
}

TEST_F(WebSocketServerTest, ManyClientsWatchingOneThreadSeeTheSameOrderedEvents) {
  std::vector<std::unique_ptr<WsTestClient>> clients;
  for (int i = 0; i < 6; ++i) clients.push_back(std::make_unique<WsTestClient>(server->port(), "s3cret"));
  for (auto& client : clients) ASSERT_TRUE(client->request("thread.list").contains("result"));
  EXPECT_EQ(server->client_count(), 6u);
  auto created = clients[0]->command("thread.create", {{"title", "shared"}});
  const std::string thread = created["result"]["threadId"];
  for (int turn = 1; turn <= 3; ++turn) {
    h.provider.push(ScriptedResponse::text("reply " + std::to_string(turn)));
    auto submitted = clients[turn]->command("turn.submit", {{"threadId", thread}, {"input", "go"}});
    ASSERT_TRUE(submitted.contains("result")) << submitted.dump();
    for (auto& client : clients) client->wait_event(thread, "turn.complete", static_cast<size_t>(turn));
  }
  const auto reference = clients[0]->events(thread);
  EXPECT_FALSE(reference.empty());
  for (auto& client : clients) EXPECT_EQ(client->events(thread), reference);
  clients.clear();
  for (int i = 0; i < 3000 && server->client_count() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(server->client_count(), 0u);
}

// Issue 15, point 3: with --no-token, a page the person opened connected, set allow_all and wrote a file. A
// real WebSocket client sending the page's Origin is refused with 403 at the upgrade, before any JSON-RPC.
TEST_F(WebSocketServerTest, ForeignOriginIsRefusedWith403BeforeAnyJsonRpc) {
  WebSocketServerOptions open;
  open.allow_without_token = true;
  auto started = WebSocketServer::start(*h.transport, open);
  ASSERT_TRUE(started) << started.error().to_string();
  const uint16_t port = (*started)->port();
  const Upgrade page = try_upgrade(port, "", "/", "127.0.0.1:" + std::to_string(port), "http://evil.example");
  EXPECT_EQ(page.status, 403u);
  EXPECT_EQ(code_of(page.body), codes::kRpcOriginRefused) << page.body;
  EXPECT_EQ((*started)->client_count(), 0u);
  // Not a browser (no Origin), and keel's own origin, are let in.
  EXPECT_EQ(try_upgrade(port, "", "/", "127.0.0.1:" + std::to_string(port)).status, 101u);
  EXPECT_EQ(try_upgrade(port, "", "/", "127.0.0.1:" + std::to_string(port),
                        "http://127.0.0.1:" + std::to_string(port))
                .status,
            101u);
  WebSocketServerOptions listed = open;
  listed.allowed_origins = {"http://evil.example"};
  auto allowing = WebSocketServer::start(*h.transport, listed);
  ASSERT_TRUE(allowing) << allowing.error().to_string();
  EXPECT_EQ(try_upgrade((*allowing)->port(), "", "/", "127.0.0.1", "http://evil.example").status, 101u);
}

// Issue 15, point 3: a page whose DNS name was rebound to 127.0.0.1 sends its own name as Host.
TEST_F(WebSocketServerTest, RebindingHostIsRefusedWith403) {
  const Upgrade rebound =
      try_upgrade(server->port(), "s3cret", "/", "evil.example:" + std::to_string(server->port()));
  EXPECT_EQ(rebound.status, 403u);
  EXPECT_EQ(code_of(rebound.body), codes::kRpcHostRefused) << rebound.body;
  EXPECT_EQ(try_upgrade(server->port(), "s3cret", "/", "localhost:" + std::to_string(server->port())).status,
            101u);
}

TEST_F(WebSocketServerTest, NonLoopbackListenIsRefusedUnlessAllowedOnPurpose) {
  for (const char* host : {"0.0.0.0", "::"}) {
    WebSocketServerOptions options;
    options.host = host;
    options.token = "s3cret";
    auto refused = WebSocketServer::start(*h.transport, options);
    ASSERT_FALSE(refused) << host;
    EXPECT_EQ(refused.error().code(), codes::kRpcListenNotLoopback) << host;
  }
  WebSocketServerOptions remote;
  remote.host = "0.0.0.0";
  remote.token = "s3cret";
  remote.allow_remote = true;
  auto allowed = WebSocketServer::start(*h.transport, remote);
  ASSERT_TRUE(allowed) << allowed.error().to_string();
  WsTestClient client((*allowed)->port(), "s3cret");
  EXPECT_TRUE(client.request("thread.list").contains("result"));
}

// Issue 15, point 4: the body (up to 1 MiB) was read before the token was checked. Now the header alone is
// read: a request announcing a body is refused without the body ever being sent (the old server waited for
// it).
TEST_F(WebSocketServerTest, ABodyIsRefusedBeforeItIsReadAndTheHeaderIsBounded) {
  RawClient body(server->port());
  ASSERT_TRUE(body.connected());
  body.send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1048576\r\n\r\n");
  const std::string answer = body.read_to_end();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 400")) << answer;
  EXPECT_NE(answer.find(codes::kRpcBodyRefused), std::string::npos) << answer;

  // Exactly the bound and no end of header: the server reads it all (nothing unread turns its close into a
  // reset) and finds no end.
  RawClient huge(server->port());
  std::string header = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ";
  header.resize(kMaxHandshakeHeaderBytes, 'a');
  huge.send(header);
  const std::string too_large = huge.read_to_end();
  EXPECT_TRUE(too_large.starts_with("HTTP/1.1 431")) << too_large;
  EXPECT_NE(too_large.find(codes::kRpcHeaderTooLarge), std::string::npos) << too_large;
}

// Issue 15, point 4: connections that never finish their handshake are capped, and closed at their deadline
// (the timer is the test's: no wall clock).
TEST_F(WebSocketServerTest, UnauthenticatedConnectionsAreCappedAndTimedOut) {
  ManualTimers timers;
  WebSocketServerOptions options;
  options.token = "s3cret";
  options.max_unauthenticated = 2;
  options.handshake_timeout = std::chrono::milliseconds(7'000);
  options.timers = &timers;
  auto started = WebSocketServer::start(*h.transport, options);
  ASSERT_TRUE(started) << started.error().to_string();
  const uint16_t port = (*started)->port();
  RawClient first(port);
  RawClient second(port);
  RawClient third(port);  // accepted after the first two (one acceptor, in order): over the cap
  const std::string refused = third.read_to_end();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << refused;
  EXPECT_NE(refused.find(codes::kRpcTooManyUnauthenticated), std::string::npos) << refused;
  ASSERT_TRUE(timers.wait_asked(options.handshake_timeout, 2));
  EXPECT_EQ((*started)->unauthenticated_count(), 2u);
  EXPECT_EQ(timers.fire(options.handshake_timeout), 2u);
  EXPECT_EQ(first.read_to_end(), "");  // closed at the deadline, nothing answered
  EXPECT_EQ(second.read_to_end(), "");
  EXPECT_EQ((*started)->unauthenticated_count(), 0u);
  WsTestClient client(port, "s3cret");
  EXPECT_TRUE(client.request("thread.list").contains("result"));
  EXPECT_EQ((*started)->unauthenticated_count(), 0u);
}

// Issue 15, point 5: at the descriptor limit accept(2) fails at once every time; retrying at once spun at
// 100 % CPU. Attempts are counted by the injected hook and time is the test's, so "no spin" is exact: no
// attempt happens until the back-off timer fires, and connected clients are served meanwhile.
TEST_F(WebSocketServerTest, AtTheDescriptorLimitTheAcceptorBacksOffAndServesItsClients) {
  ManualTimers timers;
  std::atomic<int> attempts{0};
  std::atomic<bool> out_of_descriptors{false};
  WebSocketServerOptions options;
  options.token = "s3cret";
  options.timers = &timers;
  options.accept_fault = [&] {
    ++attempts;
    return out_of_descriptors.load() ? EMFILE : 0;
  };
  auto started = WebSocketServer::start(*h.transport, options);
  ASSERT_TRUE(started) << started.error().to_string();
  const uint16_t port = (*started)->port();
  WsTestClient connected(port, "s3cret");
  ASSERT_TRUE(connected.request("thread.list").contains("result"));
  out_of_descriptors = true;
  WsTestClient last(port, "s3cret");  // accepted by the attempt already under way; the next one fails
  const auto first_backoff = std::chrono::milliseconds(50);
  ASSERT_TRUE(timers.wait_asked(first_backoff, 1));
  const int after_failure = attempts.load();
  EXPECT_EQ(after_failure, 3);  // the first client's, the last client's, the failed one
  // The server goes on serving while the acceptor waits; the acceptor tries nothing meanwhile.
  EXPECT_TRUE(connected.request("thread.list").contains("result"));
  EXPECT_TRUE(last.request("thread.list").contains("result"));
  EXPECT_EQ(attempts.load(), after_failure);
  // Each failure waits longer.
  EXPECT_EQ(timers.fire(first_backoff), 1u);
  ASSERT_TRUE(timers.wait_asked(std::chrono::milliseconds(100), 1));
  EXPECT_EQ(attempts.load(), after_failure + 1);
  out_of_descriptors = false;
  EXPECT_EQ(timers.fire(std::chrono::milliseconds(100)), 1u);
  WsTestClient later(port, "s3cret");
  EXPECT_TRUE(later.request("thread.list").contains("result"));
}

// Issue 15, point 10: clientId was taken from the params, so a client could replay another's receipt (and get
// its answer) or take its submission id first. Receipts are now per principal, the token's.
TEST_F(WebSocketServerTest, AnotherPrincipalNeitherReplaysNorPreemptsReceipts) {
  WebSocketServerOptions options;
  options.token = "alice-token";
  options.credentials = {{"bob", "bob-token"}};
  auto started = WebSocketServer::start(*h.transport, options);
  ASSERT_TRUE(started) << started.error().to_string();
  const uint16_t port = (*started)->port();
  auto alice = std::make_unique<WsTestClient>(port, "alice-token");
  WsTestClient bob(port, "bob-token");
  const json create = {{"title", "alice's"}, {"submissionId", "sub-1"}};
  const json mine = alice->request("thread.create", create);
  ASSERT_TRUE(mine.contains("result")) << mine.dump();
  const std::string thread = mine["result"]["threadId"];
  // Bob replays Alice's submission, also claiming her connection's old default clientId and her principal.
  for (const json& claim : {json(nullptr), json("ws-1"), json("ws:owner")}) {
    json replay = create;
    if (!claim.is_null()) replay["clientId"] = claim;
    const json answer = bob.request("thread.create", replay);
    ASSERT_TRUE(answer.contains("result")) << answer.dump();
    EXPECT_NE(answer["result"].value("threadId", ""), thread) << claim;
    EXPECT_FALSE(answer["result"].value("replayed", false)) << claim;
  }
  // Bob takes a submission id first; Alice's own use of it is hers (not a conflict, not Bob's answer).
  const json bobs = bob.request("thread.create", {{"title", "bob's"}, {"submissionId", "sub-2"}});
  ASSERT_TRUE(bobs.contains("result")) << bobs.dump();
  const json hers = alice->request("thread.create", {{"title", "alice's second"}, {"submissionId", "sub-2"}});
  ASSERT_TRUE(hers.contains("result")) << hers.dump();
  EXPECT_NE(hers["result"].value("threadId", ""), bobs["result"].value("threadId", ""));
  EXPECT_FALSE(hers["result"].value("replayed", false));
  // Alice reconnects with her token: her receipt is hers still, replayed.
  alice.reset();
  WsTestClient again(port, "alice-token");
  const json replayed = again.request("thread.create", create);
  ASSERT_TRUE(replayed.contains("result")) << replayed.dump();
  EXPECT_EQ(replayed["result"].value("threadId", ""), thread);
  EXPECT_TRUE(replayed["result"].value("replayed", false));
}

}  // namespace
}  // namespace keel
