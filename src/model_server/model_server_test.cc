// The scripted model server in-process, spoken to through keel's HTTP client.
#include "model_server/model_server.h"

#include <gtest/gtest.h>

#include <fstream>

#include "model_server/model_server_errors.h"
#include "model_server/sse_test_support.h"
#include "providers/http/http_errors.h"
#include "providers/http/http_test_support.h"
#include "testing/temp_dir.h"

namespace keel::model_server {
namespace {

using nlohmann::json;
using providers::CurlHttpClient;
using providers::HttpRequest;
using providers::testing::RecordingHandler;
using testing::parse_sse;

std::unique_ptr<ModelServer> start(json script, ServerOptions options = {}) {
  auto parsed = parse_script(script);
  EXPECT_TRUE(parsed) << parsed.error().to_string();
  options.script = std::move(*parsed);
  if (!options.max_duration) options.max_duration = std::chrono::minutes(2);
  auto server = ModelServer::start(std::move(options));
  EXPECT_TRUE(server) << server.error().to_string();
  return std::move(*server);
}

HttpRequest request_to(const ModelServer& server, const std::string& path, json body,
                       std::vector<providers::HttpHeader> headers = {}) {
  HttpRequest request;
  request.url = server.base_url() + path;
  request.headers = std::move(headers);
  request.headers.push_back({"Content-Type", "application/json"});
  request.body = body.dump();
  return request;
}

json chat_body(const std::string& text) {
  return {{"model", "gpt-test"}, {"stream", true}, {"messages", {{{"role", "user"}, {"content", text}}}}};
}

// Sends one request and waits for the whole response.
std::shared_ptr<RecordingHandler> exchange(CurlHttpClient& client, HttpRequest request) {
  auto handler = std::make_shared<RecordingHandler>();
  client.start(std::move(request), {}, handler);
  const Result<void> result = handler->wait_complete();
  EXPECT_TRUE(result) << result.error().to_string();
  return handler;
}

class ModelServerTest : public ::testing::Test {
 protected:
  static providers::HttpClientOptions direct() {
    providers::HttpClientOptions options;
    options.proxy = providers::ProxySettings{};
    return options;
  }
  CurlHttpClient client_{direct()};
};

const json kHello = {
    {"responses", {{{"match", ""}, {"steps", {{{"type", "text"}, {"text", "Hello!"}, {"chunk_size", 3}}}}}}}};

TEST_F(ModelServerTest, ServesEachWireFormatAtItsPath) {
  auto server = start(kHello);
  const auto chat = exchange(client_, request_to(*server, "/v1/chat/completions", chat_body("hi")));
  auto events = parse_sse(chat->body());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().json()["object"], "chat.completion.chunk");
  EXPECT_EQ(events.front().json()["model"], "gpt-test");
  EXPECT_EQ(events.back().data, "[DONE]");

  const auto responses = exchange(
      client_,
      request_to(*server, "/v1/responses", {{"model", "gpt-test"}, {"stream", true}, {"input", "hi"}}));
  events = parse_sse(responses->body());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().name, "response.created");
  EXPECT_EQ(events.back().name, "response.completed");

  const auto anthropic = exchange(client_, request_to(*server, "/v1/messages", chat_body("hi")));
  events = parse_sse(anthropic->body());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().name, "message_start");
  EXPECT_EQ(events.back().name, "message_stop");
  EXPECT_EQ(anthropic->header("content-type"), "text/event-stream; charset=utf-8");
  EXPECT_EQ(anthropic->header("request-id"), "req_scripted_3");
}

TEST_F(ModelServerTest, RefusesAWrongApiKeyWithEachApisErrorBody) {
  ServerOptions options;
  options.api_key = "sk-expected";
  auto server = start(kHello, options);

  const auto no_key = exchange(client_, request_to(*server, "/v1/chat/completions", chat_body("hi")));
  EXPECT_EQ(no_key->status(), 401);
  EXPECT_EQ(json::parse(no_key->body())["error"]["code"], "invalid_api_key");

  const auto wrong =
      exchange(client_, request_to(*server, "/v1/messages", chat_body("hi"), {{"x-api-key", "sk-wrong"}}));
  EXPECT_EQ(wrong->status(), 401);
  const json anthropic_error = json::parse(wrong->body());
  EXPECT_EQ(anthropic_error["type"], "error");
  EXPECT_EQ(anthropic_error["error"]["type"], "authentication_error");

  const auto bearer_to_anthropic = exchange(client_, request_to(*server, "/v1/messages", chat_body("hi"),
                                                                {{"Authorization", "Bearer sk-expected"}}));
  EXPECT_EQ(bearer_to_anthropic->status(), 401);

  EXPECT_EQ(
      exchange(client_, request_to(*server, "/v1/messages", chat_body("hi"), {{"x-api-key", "sk-expected"}}))
          ->status(),
      200);
  EXPECT_EQ(exchange(client_, request_to(*server, "/v1/responses", chat_body("hi"),
                                         {{"Authorization", "Bearer sk-expected"}}))
                ->status(),
            200);
}

TEST_F(ModelServerTest, RecordsEveryRequestToTheFileWithCredentialsRedacted) {
  keel::testing::TempDir dir;
  ServerOptions options;
  options.record_path = dir.file("requests.jsonl");
  auto server = start(kHello, options);
  exchange(client_, request_to(*server, "/v1/chat/completions", chat_body("first"),
                               {{"Authorization", "Bearer sk-live-1"}}));
  exchange(client_, request_to(*server, "/v1/messages", chat_body("second"), {{"x-api-key", "sk-ant-2"}}));
  std::ifstream in(options.record_path);
  std::vector<json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["path"], "/v1/chat/completions");
  EXPECT_EQ(lines[0]["headers"]["authorization"], "Bearer [redacted]");
  EXPECT_EQ(lines[0]["body"]["messages"][0]["content"], "first");
  EXPECT_EQ(lines[1]["headers"]["x-api-key"], "[redacted]");
  EXPECT_EQ(lines[1]["n"], 2);
  std::ifstream again(options.record_path);
  const std::string text((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("sk-live-1"), std::string::npos);
  EXPECT_EQ(text.find("sk-ant-2"), std::string::npos);
}

TEST_F(ModelServerTest, MatchAnswersARepeatedConversationTheSameWay) {
  const json script = {
      {"responses",
       {{{"steps", {{{"type", "text"}, {"text", "in order"}}}}},
        {{"match", "tool says 42"}, {"steps", {{{"type", "text"}, {"text", "the answer is 42"}}}}}}}};
  const json tool_result = {
      {"model", "m"},
      {"stream", true},
      {"messages",
       {{{"role", "user"}, {"content", "compute"}},
        {{"role", "assistant"},
         {"content", nullptr},
         {"tool_calls",
          {{{"id", "c"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}}}},
        {{"role", "tool"}, {"tool_call_id", "c"}, {"content", "tool says 42"}}}}};
  auto server = start(script);
  for (int attempt = 0; attempt < 3; ++attempt) {  // a restarted client sends the same conversation again
    const auto handler = exchange(client_, request_to(*server, "/v1/chat/completions", tool_result));
    EXPECT_NE(handler->body().find("the answer is 42"), std::string::npos) << "attempt " << attempt;
  }
  EXPECT_NE(
      exchange(client_, request_to(*server, "/v1/chat/completions", chat_body("x")))->body().find("in order"),
      std::string::npos);
}

TEST_F(ModelServerTest, AnswersBadRequestsWithTheApisErrors) {
  auto server = start({{"responses", {{{"steps", {{{"type", "text"}, {"text", "only one"}}}}}}}});
  EXPECT_EQ(exchange(client_, request_to(*server, "/v1/unknown", chat_body("x")))->status(), 404);
  HttpRequest get = request_to(*server, "/v1/messages", chat_body("x"));
  get.method = "GET";
  EXPECT_EQ(exchange(client_, std::move(get))->status(), 405);
  HttpRequest not_json = request_to(*server, "/v1/messages", {});
  not_json.body = "{not json";
  EXPECT_EQ(exchange(client_, std::move(not_json))->status(), 400);
  json not_streaming = chat_body("x");
  not_streaming["stream"] = false;
  EXPECT_EQ(exchange(client_, request_to(*server, "/v1/chat/completions", not_streaming))->status(), 400);
  EXPECT_EQ(exchange(client_, request_to(*server, "/v1/chat/completions", chat_body("x")))->status(), 200);
  const auto exhausted = exchange(client_, request_to(*server, "/v1/chat/completions", chat_body("x")));
  EXPECT_EQ(exhausted->status(), 500);
  EXPECT_NE(exhausted->body().find("no response left"), std::string::npos);
  EXPECT_EQ(server->requests().size(), 6u);
}

TEST_F(ModelServerTest, StopsAfterMaxRequests) {
  ServerOptions options;
  options.max_requests = 2;
  auto server = start(kHello, options);
  exchange(client_, request_to(*server, "/v1/chat/completions", chat_body("1")));
  exchange(client_, request_to(*server, "/v1/chat/completions", chat_body("2")));
  EXPECT_EQ(server->wait(), "served 2 requests");
}

TEST_F(ModelServerTest, StopsAfterTheTimeLimitEvenWithAStreamOpen) {
  ServerOptions options;
  options.max_duration = std::chrono::milliseconds(300);
  auto server =
      start({{"responses", {{{"steps", {{{"type", "text"}, {"text", "a"}}, {{"type", "hang"}}}}}}}}, options);
  auto handler = std::make_shared<RecordingHandler>();
  client_.start(request_to(*server, "/v1/chat/completions", chat_body("x")), {}, handler);
  EXPECT_EQ(server->wait(), "time limit reached");
  // The server closed the stream it was holding open: the client sees the body cut short.
  EXPECT_EQ(handler->wait_complete().error().code(), codes::kHttpConnectionLost);
}

TEST_F(ModelServerTest, ALeadingDelayHoldsBackTheHead) {
  auto server =
      start({{"responses",
              {{{"steps", {{{"type", "delay"}, {"ms", 50}}, {{"type", "text"}, {"text", "late"}}}}}}}});
  const auto handler =
      exchange(client_, request_to(*server, "/v1/responses", {{"stream", true}, {"input", "x"}}));
  EXPECT_EQ(handler->status(), 200);
  EXPECT_NE(handler->body().find("late"), std::string::npos);
}

TEST_F(ModelServerTest, RefusesToStartOnAPortInUse) {
  auto first = start(kHello);
  auto script = parse_script(kHello);
  ServerOptions options;
  options.script = *script;
  options.port = first->port();
  auto second = ModelServer::start(std::move(options));
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code(), codes::kModelServerListenFailed);
}

}  // namespace
}  // namespace keel::model_server
