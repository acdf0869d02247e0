// The client against the scripted model server, in-process, and against sockets that refuse or stay silent.
#include "providers/http/http_client.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "model_server/model_server.h"
#include "providers/http/http_errors.h"
#include "providers/http/http_test_support.h"

namespace keel::providers {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::RecordingHandler;

constexpr char kSecret[] = "sk-test-secret-0123456789";

std::unique_ptr<model_server::ModelServer> serve(json responses) {
  auto script = model_server::parse_script({{"responses", std::move(responses)}});
  EXPECT_TRUE(script) << script.error().to_string();
  model_server::ServerOptions options;
  options.script = std::move(*script);
  options.max_duration = std::chrono::minutes(2);  // a hung test does not leave a server behind forever
  auto server = model_server::ModelServer::start(std::move(options));
  EXPECT_TRUE(server) << server.error().to_string();
  return std::move(*server);
}

HttpRequest chat_request(const std::string& base_url, const std::string& text = "hello") {
  HttpRequest request;
  request.url = base_url + "/v1/chat/completions";
  request.headers = {{"Content-Type", "application/json"},
                     {"Authorization", std::string("Bearer ") + kSecret}};
  request.body =
      json{{"model", "m"}, {"stream", true}, {"messages", {{{"role", "user"}, {"content", text}}}}}.dump();
  return request;
}

// A client that ignores the process environment's proxies (the proxy tests set their own).
HttpClientOptions direct() {
  HttpClientOptions options;
  options.proxy = ProxySettings{};
  return options;
}

const json kTextThenHang = {{{"steps", {{{"type", "text"}, {"text", "alpha"}}, {{"type", "hang"}}}}}};

TEST(HttpClientTest, DeliversChunksBeforeTheResponseEnds) {
  auto server = serve(kTextThenHang);
  CurlHttpClient client(direct());
  CancellationSource cancel;
  auto handler = std::make_shared<RecordingHandler>();
  client.start(chat_request(server->base_url()), cancel.token(), handler);
  // The server never ends this response, so seeing its text proves delivery while it is still open.
  ASSERT_TRUE(handler->wait_for_body("alpha"));
  EXPECT_FALSE(handler->completed());
  EXPECT_EQ(handler->status(), 200);
  EXPECT_EQ(handler->header("content-type"), "text/event-stream; charset=utf-8");
  cancel.cancel();
  EXPECT_EQ(handler->wait_complete().error().code(), codes::kCancelled);
}

TEST(HttpClientTest, CancellationMidStreamCompletesWithCancelledAndStopsTheBody) {
  auto server = serve(kTextThenHang);
  CurlHttpClient client(direct());
  CancellationSource cancel;
  auto handler = std::make_shared<RecordingHandler>();
  client.start(chat_request(server->base_url()), cancel.token(), handler);
  ASSERT_TRUE(handler->wait_for_body("alpha"));
  const size_t chunks_before = handler->chunks();
  cancel.cancel("user interrupt");
  const Result<void> result = handler->wait_complete();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kCancelled);
  EXPECT_EQ(result.error().message(), "user interrupt");
  EXPECT_EQ(handler->chunks(), chunks_before);
  EXPECT_EQ(handler->completions(), 1);
}

TEST(HttpClientTest, CancellationFromInsideOnBodyAbortsAtOnce) {
  auto server = serve(
      {{{"chunk_delay_ms", 20}, {"steps", {{{"type", "text"}, {"text", "abcdefgh"}, {"chunk_size", 1}}}}}});
  CurlHttpClient client(direct());
  CancellationSource cancel;
  auto handler = std::make_shared<RecordingHandler>();
  handler->on_chunk = [&cancel](std::string_view) { cancel.cancel(); };
  client.start(chat_request(server->base_url()), cancel.token(), handler);
  EXPECT_EQ(handler->wait_complete().error().code(), codes::kCancelled);
  EXPECT_EQ(handler->chunks(), 1u);
}

TEST(HttpClientTest, AlreadyCancelledRequestNeverReachesTheServer) {
  auto server = serve(kTextThenHang);
  CurlHttpClient client(direct());
  CancellationSource cancel;
  cancel.cancel();
  auto handler = std::make_shared<RecordingHandler>();
  client.start(chat_request(server->base_url()), cancel.token(), handler);
  EXPECT_EQ(handler->wait_complete().error().code(), codes::kCancelled);
  EXPECT_EQ(handler->heads(), 0);
  EXPECT_TRUE(server->requests().empty());
}

TEST(HttpClientTest, IdleTimeoutWhenTheStreamGoesSilent) {
  auto server = serve(kTextThenHang);
  CurlHttpClient client(direct());
  auto handler = std::make_shared<RecordingHandler>();
  HttpRequest request = chat_request(server->base_url());
  request.idle_timeout = milliseconds(200);
  client.start(std::move(request), {}, handler);
  const Result<void> result = handler->wait_complete();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kHttpIdleTimeout);
  EXPECT_TRUE(result.error().retryable());
  EXPECT_NE(handler->body().find("alpha"), std::string::npos);
}

TEST(HttpClientTest, IdleTimeoutWhenAnAcceptedConnectionNeverAnswers) {
  testing::LocalSocket silent(/*listening=*/true);
  CurlHttpClient client(direct());
  auto handler = std::make_shared<RecordingHandler>();
  HttpRequest request = chat_request("http://127.0.0.1:" + std::to_string(silent.port()));
  request.idle_timeout = milliseconds(200);
  client.start(std::move(request), {}, handler);
  EXPECT_EQ(handler->wait_complete().error().code(), codes::kHttpIdleTimeout);
  EXPECT_EQ(handler->heads(), 0);
}

TEST(HttpClientTest, TotalTimeoutEndsAStreamThatKeepsTalking) {
  auto server =
      serve({{{"chunk_delay_ms", 20},
              {"steps", {{{"type", "text"}, {"text", std::string(10'000, 'x')}, {"chunk_size", 1}}}}}});
  CurlHttpClient client(direct());
  auto handler = std::make_shared<RecordingHandler>();
  HttpRequest request = chat_request(server->base_url());
  request.idle_timeout = milliseconds(10'000);
  request.total_timeout = milliseconds(300);
  client.start(std::move(request), {}, handler);
  const Result<void> result = handler->wait_complete();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kHttpTimeout);
}

TEST(HttpClientTest, DisconnectMidBodyIsALostConnection) {
  auto server = serve({{{"steps", {{{"type", "text"}, {"text", "partial"}}, {{"type", "disconnect"}}}}}});
  CurlHttpClient client(direct());
  auto handler = std::make_shared<RecordingHandler>();
  client.start(chat_request(server->base_url()), {}, handler);
  const Result<void> result = handler->wait_complete();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kHttpConnectionLost);
  EXPECT_TRUE(result.error().retryable());
  EXPECT_NE(handler->body().find("partial"), std::string::npos);
}

TEST(HttpClientTest, DisconnectBeforeTheHeadIsALostConnection) {
  auto server = serve({{{"steps", {{{"type", "disconnect"}}}}}});
  CurlHttpClient client(direct());
  auto handler = std::make_shared<RecordingHandler>();
  client.start(chat_request(server->base_url()), {}, handler);
  EXPECT_EQ(handler->wait_complete().error().code(), codes::kHttpConnectionLost);
  EXPECT_EQ(handler->heads(), 0);
}

TEST(HttpClientTest, RefusedConnectionIsARetryableConnectFailure) {
  testing::RefusingPort refusing(/*listening=*/false);
  CurlHttpClient client(direct());
  auto handler = std::make_shared<RecordingHandler>();
  client.start(chat_request("http://127.0.0.1:" + std::to_string(refusing.port())), {}, handler);
  const Result<void> result = handler->wait_complete();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kHttpConnectFailed);
  EXPECT_TRUE(result.error().retryable());
}

TEST(HttpClientTest, TlsAgainstAPlainHttpServerIsATlsFailure) {
  auto server = serve(kTextThenHang);
  CurlHttpClient client(direct());
  auto handler = std::make_shared<RecordingHandler>();
  client.start(chat_request("https://127.0.0.1:" + std::to_string(server->port())), {}, handler);
  EXPECT_EQ(handler->wait_complete().error().code(), codes::kHttpTlsFailed);
}

TEST(HttpClientTest, HttpErrorStatusPassesThroughWithItsBodyAndHeaders) {
  auto server = serve(
      {{{"steps", {{{"type", "error"}, {"status", 429}, {"retry_after", 7}, {"message", "slow down"}}}}}});
  CurlHttpClient client(direct());
  auto handler = std::make_shared<RecordingHandler>();
  client.start(chat_request(server->base_url()), {}, handler);
  EXPECT_TRUE(handler->wait_complete());
  EXPECT_EQ(handler->status(), 429);
  EXPECT_EQ(handler->header("Retry-After"), "7");
  EXPECT_EQ(json::parse(handler->body())["error"]["message"], "slow down");
}

TEST(HttpClientTest, NonSseResponsePassesThrough) {
  auto server = serve({{{"steps", {{{"type", "not_sse"}, {"body", "<html>maintenance</html>"}}}}}});
  CurlHttpClient client(direct());
  auto handler = std::make_shared<RecordingHandler>();
  client.start(chat_request(server->base_url()), {}, handler);
  EXPECT_TRUE(handler->wait_complete());
  EXPECT_EQ(handler->status(), 200);
  EXPECT_EQ(handler->header("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(handler->body(), "<html>maintenance</html>");
}

TEST(HttpClientTest, SendsMethodHeadersAndBody) {
  auto server = serve({{{"steps", {{{"type", "text"}, {"text", "ok"}}}}}});
  CurlHttpClient client(direct());
  auto handler = std::make_shared<RecordingHandler>();
  HttpRequest request = chat_request(server->base_url(), "what is up");
  request.headers.push_back({"X-Trace", "t-1"});
  client.start(std::move(request), {}, handler);
  ASSERT_TRUE(handler->wait_complete());
  EXPECT_NE(handler->body().find("data: [DONE]"), std::string::npos);
  const auto requests = server->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0]["method"], "POST");
  EXPECT_EQ(requests[0]["path"], "/v1/chat/completions");
  EXPECT_EQ(requests[0]["headers"]["x-trace"], "t-1");
  EXPECT_EQ(requests[0]["headers"]["authorization"], "Bearer [redacted]");
  EXPECT_EQ(requests[0]["body"]["messages"][0]["content"], "what is up");
}

TEST(HttpClientTest, ServesManyConcurrentRequests) {
  auto server = serve({{{"match", ""},
                        {"chunk_delay_ms", 1},
                        {"steps", {{{"type", "text"}, {"text", "0123456789"}, {"chunk_size", 2}}}}}});
  CurlHttpClient client(direct());
  constexpr int kRequests = 64;
  std::vector<std::shared_ptr<RecordingHandler>> handlers;
  for (int i = 0; i < kRequests; ++i) {
    handlers.push_back(std::make_shared<RecordingHandler>());
    client.start(chat_request(server->base_url(), "request " + std::to_string(i)), {}, handlers.back());
  }
  for (const auto& handler : handlers) {
    const Result<void> result = handler->wait_complete();
    ASSERT_TRUE(result) << result.error().to_string();
    EXPECT_NE(handler->body().find("data: [DONE]"), std::string::npos);
  }
  EXPECT_EQ(server->requests().size(), static_cast<size_t>(kRequests));
}

TEST(HttpClientTest, AHandlerMayStartTheNextRequestFromOnComplete) {
  auto server = serve({{{"steps", {{{"type", "error"}, {"status", 503}}}}},
                       {{"steps", {{{"type", "text"}, {"text", "second"}}}}}});
  CurlHttpClient client(direct());
  auto retry = std::make_shared<RecordingHandler>();
  auto first = std::make_shared<RecordingHandler>();
  const std::string url = server->base_url();
  first->on_done = [&client, retry, url](const Result<void>&) { client.start(chat_request(url), {}, retry); };
  client.start(chat_request(url), {}, first);
  ASSERT_TRUE(first->wait_complete());
  EXPECT_EQ(first->status(), 503);
  ASSERT_TRUE(retry->wait_complete());
  EXPECT_NE(retry->body().find("second"), std::string::npos);
}

TEST(HttpClientTest, DestroyingTheClientCompletesOpenRequestsWithCancelled) {
  auto server = serve(kTextThenHang);
  auto handler = std::make_shared<RecordingHandler>();
  {
    CurlHttpClient client(direct());
    client.start(chat_request(server->base_url()), {}, handler);
    ASSERT_TRUE(handler->wait_for_body("alpha"));
  }
  ASSERT_TRUE(handler->completed());
  EXPECT_EQ(handler->wait_complete().error().code(), codes::kCancelled);
}

TEST(HttpClientTest, RejectsUrlsItCannotUse) {
  CurlHttpClient client(direct());
  for (const std::string url : {"ftp://127.0.0.1/file", "not a url", "http://127.0.0.1:1/path\r\nX: y"}) {
    auto handler = std::make_shared<RecordingHandler>();
    HttpRequest request;
    request.url = url;
    client.start(std::move(request), {}, handler);
    EXPECT_EQ(handler->wait_complete().error().code(), codes::kInvalidArgument) << url;
  }
}

TEST(HttpClientTest, RejectsAHeaderThatWouldInjectAnother) {
  CurlHttpClient client(direct());
  auto handler = std::make_shared<RecordingHandler>();
  HttpRequest request;
  request.url = "http://127.0.0.1:1/";
  request.headers = {{"X-Bad", "value\r\nAuthorization: stolen"}};
  client.start(std::move(request), {}, handler);
  EXPECT_EQ(handler->wait_complete().error().code(), codes::kInvalidArgument);
}

// --- Proxies from the environment ---

// Sets environment variables for one test and restores them after (the client reads them when made).
class ScopedEnvironment {
 public:
  ScopedEnvironment(std::initializer_list<std::pair<const char*, const char*>> values) {
    for (const char* name :
         {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"}) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      ::unsetenv(name);
    }
    for (const auto& [name, value] : values) ::setenv(name, value, 1);
  }
  ~ScopedEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(HttpClientProxyTest, NoProxyBypassesABogusProxyFromTheEnvironment) {
  auto server = serve({{{"steps", {{{"type", "text"}, {"text", "direct"}}}}}});
  testing::RefusingPort dead_proxy(/*listening=*/false);
  const std::string proxy = "http://127.0.0.1:" + std::to_string(dead_proxy.port());
  ScopedEnvironment env(
      {{"http_proxy", proxy.c_str()}, {"HTTPS_PROXY", proxy.c_str()}, {"NO_PROXY", "127.0.0.1"}});
  CurlHttpClient client;  // reads the environment
  auto handler = std::make_shared<RecordingHandler>();
  client.start(chat_request(server->base_url()), {}, handler);
  const Result<void> result = handler->wait_complete();
  EXPECT_TRUE(result) << result.error().to_string();
  EXPECT_NE(handler->body().find("direct"), std::string::npos);
}

TEST(HttpClientProxyTest, AnUnreachableProxyFromTheEnvironmentIsAProxyFailure) {
  auto server = serve({{{"steps", {{{"type", "text"}, {"text", "direct"}}}}}});
  testing::RefusingPort dead_proxy(/*listening=*/false);
  const std::string proxy = "http://127.0.0.1:" + std::to_string(dead_proxy.port());
  ScopedEnvironment env({{"http_proxy", proxy.c_str()}});
  CurlHttpClient client;
  auto handler = std::make_shared<RecordingHandler>();
  client.start(chat_request(server->base_url()), {}, handler);
  const Result<void> result = handler->wait_complete();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kHttpProxyFailed);
  EXPECT_TRUE(server->requests().empty());
}

// --- Secrets ---

TEST(HttpClientTest, ErrorMessagesNeverContainRequestHeadersOrTheQuery) {
  auto hanging = serve(kTextThenHang);
  auto dropping = serve({{{"steps", {{{"type", "text"}, {"text", "x"}}, {{"type", "disconnect"}}}}}});
  testing::RefusingPort refusing(/*listening=*/false);
  testing::LocalSocket silent(/*listening=*/true);
  const std::string query = std::string("?key=") + kSecret;
  std::vector<HttpRequest> requests = {
      chat_request("http://127.0.0.1:" + std::to_string(refusing.port())),
      chat_request("http://127.0.0.1:" + std::to_string(silent.port())),
      chat_request(dropping->base_url()),
      chat_request(hanging->base_url()),
      chat_request("https://127.0.0.1:" + std::to_string(hanging->port())),
  };
  HttpClientOptions via_dead_proxy;
  via_dead_proxy.proxy = ProxySettings{
      .https_proxy = "", .http_proxy = "http://127.0.0.1:" + std::to_string(refusing.port()), .no_proxy = ""};
  CurlHttpClient client(direct());
  CurlHttpClient proxied(std::move(via_dead_proxy));
  for (size_t i = 0; i <= requests.size(); ++i) {
    HttpRequest request = i < requests.size() ? requests[i] : chat_request(hanging->base_url());
    request.url += query;
    request.headers.push_back({"x-api-key", kSecret});
    request.idle_timeout = milliseconds(200);
    request.total_timeout = milliseconds(5000);
    auto handler = std::make_shared<RecordingHandler>();
    (i < requests.size() ? client : proxied).start(std::move(request), {}, handler);
    const Result<void> result = handler->wait_complete();
    ASSERT_FALSE(result) << "request " << i;
    EXPECT_EQ(result.error().message().find(kSecret), std::string::npos) << result.error().to_string();
    EXPECT_EQ(result.error().message().find("Bearer"), std::string::npos) << result.error().to_string();
  }
}

}  // namespace
}  // namespace keel::providers
