#include "mcp/auth/http_fetch.h"

#include <gtest/gtest.h>

#include <thread>

#include "mcp/auth/auth_errors.h"

namespace keel::mcp {
namespace {

// Answers every request from a thread of its own, as the real client's worker does, in the chunks given.
class ScriptedHttpClient final : public providers::HttpClient {
 public:
  int status = 200;
  std::vector<std::string> chunks;
  std::optional<Error> failure;
  std::vector<providers::HttpRequest> requests;

  void start(providers::HttpRequest request, CancellationToken cancel,
             std::shared_ptr<providers::HttpStreamHandler> handler) override {
    requests.push_back(request);
    std::thread([this, cancel, handler] {
      if (failure) {
        handler->on_complete(std::unexpected(*failure));
        return;
      }
      handler->on_response_head(status, {{"Location", "http://127.0.0.1/cb?code=c"}});
      for (const std::string& chunk : chunks) {
        if (cancel.is_cancelled()) break;
        handler->on_body(chunk);
      }
      handler->on_complete(cancel.is_cancelled()
                               ? Result<void>(std::unexpected(Error("cancelled", "cancelled")))
                               : Result<void>());
    }).join();
  }
};

TEST(HttpFetch, ReturnsStatusHeadersAndTheWholeBody) {
  auto client = std::make_shared<ScriptedHttpClient>();
  client->status = 302;
  client->chunks = {"{\"a\":", "1}"};
  const HttpFetch fetch = make_http_fetch(client);
  auto reply = fetch(HttpCall{"POST", "http://127.0.0.1:1/token", {{"Content-Type", "x"}}, "body"});
  ASSERT_TRUE(reply.has_value()) << reply.error().to_string();
  EXPECT_EQ(reply->status, 302);
  EXPECT_EQ(reply->body, "{\"a\":1}");
  ASSERT_EQ(reply->headers.size(), 1u);
  EXPECT_EQ(reply->headers[0].first, "Location");
  ASSERT_EQ(client->requests.size(), 1u);
  EXPECT_EQ(client->requests[0].method, "POST");
  EXPECT_EQ(client->requests[0].body, "body");
  EXPECT_EQ(client->requests[0].headers[0].name, "Content-Type");
}

TEST(HttpFetch, AnOversizedBodyEndsTheTransferWithACodedError) {
  auto client = std::make_shared<ScriptedHttpClient>();
  client->chunks = {std::string(600, 'a'), std::string(600, 'b'), std::string(600, 'c')};
  HttpFetchOptions options;
  options.max_body_bytes = 1000;
  auto reply = make_http_fetch(client, options)(HttpCall{"GET", "http://127.0.0.1:1/x", {}, ""});
  ASSERT_FALSE(reply.has_value());
  EXPECT_EQ(reply.error().code(), codes::kMcpAuthBadMetadata);
}

TEST(HttpFetch, ATransportErrorKeepsItsCode) {
  auto client = std::make_shared<ScriptedHttpClient>();
  client->failure = Error("provider.connect_failed", "connection refused");
  auto reply = make_http_fetch(client)(HttpCall{"GET", "http://127.0.0.1:1/x", {}, ""});
  ASSERT_FALSE(reply.has_value());
  EXPECT_EQ(reply.error().code(), "provider.connect_failed");
}

}  // namespace
}  // namespace keel::mcp
