// The Streamable HTTP transport against a scripted loopback server in the test process.
#include "mcp/client/http_transport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <set>
#include <thread>

#include "keel/error_codes.h"
#include "mcp/auth/fake_authorization_server.h"
#include "mcp/auth/oauth_http_auth.h"
#include "mcp/client/http_errors.h"
#include "mcp/client/http_test_server.h"
#include "mcp/mcp_errors.h"
#include "providers/http/http_test_support.h"
#include "util/thread_annotations.h"

namespace keel::mcp {
namespace {

using nlohmann::json;
using testing::TestConnection;
using testing::TestHttpServer;
using testing::TestRequest;

constexpr auto kHangGuard = std::chrono::seconds(30);

// What the transport told its handlers.
class Recorder {
 public:
  McpTransport::Handlers handlers() {
    McpTransport::Handlers h;
    h.on_message = [this](json message) {
      MutexLock lock(mu_);
      messages_.push_back(std::move(message));
      changed_.notify_all();
    };
    h.on_problem = [this](const Error& problem, bool) {
      MutexLock lock(mu_);
      problems_.push_back(problem);
      changed_.notify_all();
    };
    h.on_closed = [this](const Error& reason) {
      MutexLock lock(mu_);
      closed_.push_back(reason);
      changed_.notify_all();
    };
    return h;
  }
  bool wait_messages(size_t count) {
    return wait([&]() REQUIRES(mu_) { return messages_.size() >= count; });
  }
  bool wait_problems(size_t count) {
    return wait([&]() REQUIRES(mu_) { return problems_.size() >= count; });
  }
  bool wait_closed() {
    return wait([&]() REQUIRES(mu_) { return !closed_.empty(); });
  }
  std::vector<json> messages() const {
    MutexLock lock(mu_);
    return messages_;
  }
  std::vector<Error> problems() const {
    MutexLock lock(mu_);
    return problems_;
  }
  std::vector<Error> closed() const {
    MutexLock lock(mu_);
    return closed_;
  }

 private:
  template <class Predicate>
  bool wait(Predicate done) {
    MutexLock lock(mu_);
    const auto give_up = std::chrono::steady_clock::now() + kHangGuard;
    while (!done()) {
      if (lock.wait_until(changed_, give_up) == std::cv_status::timeout) return false;
    }
    return true;
  }
  mutable Mutex mu_;
  std::condition_variable changed_;
  std::vector<json> messages_ GUARDED_BY(mu_);
  std::vector<Error> problems_ GUARDED_BY(mu_);
  std::vector<Error> closed_ GUARDED_BY(mu_);
};

json request(int id, const std::string& method, json params = json::object()) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}
json result(const json& id, json value = json::object()) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(value)}};
}
std::string sse(const json& message, const std::string& id = "") {
  std::string text;
  if (!id.empty()) text += "id: " + id + "\n";
  return text + "data: " + message.dump() + "\n\n";
}
json body_of(const TestRequest& r) { return json::parse(r.body); }

struct Fixture {
  explicit Fixture(TestHttpServer::Handler handler, HttpTransportOptions options = {})
      : server(std::move(handler)) {
    options.url = server.url();
    options.http_client = std::make_shared<providers::CurlHttpClient>(direct());
    auto made = make_http_transport(std::move(options));
    EXPECT_TRUE(made) << made.error().to_string();
    transport = std::move(*made);
    EXPECT_TRUE(transport->start(recorder.handlers()));
  }
  static providers::HttpClientOptions direct() {
    providers::HttpClientOptions options;
    options.proxy = providers::ProxySettings{};
    return options;
  }
  TestHttpServer server;
  Recorder recorder;
  std::unique_ptr<McpTransport> transport;
};

// An initialize answer that names a session, then plain JSON answers.
void answer_with_session(const TestRequest& r, TestConnection& c) {
  if (r.method != "POST") return c.head(405, "");
  const json message = body_of(r);
  if (!message.contains("id")) return c.head(202, "");
  c.json(200, result(message["id"], {{"method", message["method"]}}).dump(), {"Mcp-Session-Id: sess-1"});
}

TEST(HttpTransport, PostsEachMessageAndDeliversAJsonAnswer) {
  Fixture f(answer_with_session);
  ASSERT_TRUE(f.transport->send(request(1, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  EXPECT_EQ(f.recorder.messages()[0], result(1, {{"method", "tools/list"}}));
  const TestRequest r = f.server.requests().at(0);
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/mcp");
  EXPECT_EQ(r.header("accept"), "application/json, text/event-stream");
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_EQ(body_of(r), request(1, "tools/list"));
  EXPECT_FALSE(r.header("authorization"));
  EXPECT_TRUE(f.recorder.problems().empty());
}

TEST(HttpTransport, AnSseAnswerDeliversEveryMessageInOrderWithMultiLineData) {
  Fixture f([](const TestRequest& r, TestConnection& c) {
    const json id = body_of(r)["id"];
    c.head(200, "text/event-stream; charset=utf-8");
    c.write(": keep-alive\n\nid: 1\nretry: 5\ndata: \n\n");  // a comment and a priming event
    c.write(
        sse({{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", {{"progress", 1}}}}, "2"));
    c.write("event: message\nid: 3\ndata: {\"jsonrpc\":\"2.0\",\n");
    c.write("data: \"method\":\"notifications/message\",\"params\":{}}\r\n\r\n");
    c.write(sse(result(id, {{"done", true}}), "4"));
  });
  ASSERT_TRUE(f.transport->send(request(7, "tools/call", {{"name", "t"}})));
  ASSERT_TRUE(f.recorder.wait_messages(3));
  const auto messages = f.recorder.messages();
  EXPECT_EQ(messages[0]["method"], "notifications/progress");
  EXPECT_EQ(messages[1]["method"], "notifications/message");
  EXPECT_EQ(messages[2], result(7, {{"done", true}}));
  EXPECT_TRUE(f.recorder.problems().empty());
}

TEST(HttpTransport, TheSessionIdOfTheInitializeAnswerIsSentOnEveryLaterRequest) {
  Fixture f(answer_with_session);
  ASSERT_TRUE(f.transport->send(request(1, "initialize")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  ASSERT_TRUE(f.transport->send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}));
  ASSERT_TRUE(f.transport->send(request(2, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_messages(2));
  ASSERT_TRUE(f.server.wait_requests(3));
  const auto requests = f.server.requests();
  EXPECT_FALSE(requests[0].header("mcp-session-id"));
  EXPECT_EQ(requests[1].header("mcp-session-id"), "sess-1");
  EXPECT_EQ(requests[2].header("mcp-session-id"), "sess-1");
}

TEST(HttpTransport, ASessionIdOnAnAnswerOtherThanInitializeIsNotTaken) {
  Fixture f(answer_with_session);
  ASSERT_TRUE(f.transport->send(request(1, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  ASSERT_TRUE(f.transport->send(request(2, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_messages(2));
  EXPECT_FALSE(f.server.requests().at(1).header("mcp-session-id"));
}

TEST(HttpTransport, TheProtocolVersionHeaderFollowsSetProtocolVersion) {
  Fixture f(answer_with_session);
  ASSERT_TRUE(f.transport->send(request(1, "initialize")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  f.transport->set_protocol_version("2025-11-25");
  ASSERT_TRUE(f.transport->send(request(2, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_messages(2));
  const auto requests = f.server.requests();
  EXPECT_FALSE(requests[0].header("mcp-protocol-version"));
  EXPECT_EQ(requests[1].header("mcp-protocol-version"), "2025-11-25");
  // Headers of the stateless revision only: not for 2025-11-25.
  EXPECT_FALSE(requests[1].header("mcp-method"));
}

TEST(HttpTransport, The2026RevisionCarriesMcpMethodAndMcpNameFromTheMessage) {
  Fixture f(answer_with_session);
  const json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}};
  ASSERT_TRUE(f.transport->send(request(1, "server/discover", {{"_meta", meta}})));
  ASSERT_TRUE(f.transport->send(request(2, "tools/call", {{"name", "get-sum"}, {"_meta", meta}})));
  ASSERT_TRUE(f.transport->send(request(3, "resources/read", {{"uri", "file:///a b"}, {"_meta", meta}})));
  ASSERT_TRUE(f.transport->send(request(4, "prompts/get", {{"name", "grüße"}, {"_meta", meta}})));
  ASSERT_TRUE(f.recorder.wait_messages(4));
  std::map<std::string, TestRequest> by_method;
  for (const auto& r : f.server.requests()) by_method[body_of(r)["method"]] = r;
  EXPECT_EQ(by_method["server/discover"].header("mcp-protocol-version"), "2026-07-28");
  EXPECT_EQ(by_method["server/discover"].header("mcp-method"), "server/discover");
  EXPECT_FALSE(by_method["server/discover"].header("mcp-name"));
  EXPECT_EQ(by_method["tools/call"].header("mcp-method"), "tools/call");
  EXPECT_EQ(by_method["tools/call"].header("mcp-name"), "get-sum");
  EXPECT_EQ(by_method["resources/read"].header("mcp-name"), "file:///a b");
  // Not ASCII: Base64 of the UTF-8 bytes, in the sentinel form.
  EXPECT_EQ(by_method["prompts/get"].header("mcp-name"), "=?base64?Z3LDvMOfZQ==?=");
}

TEST(HttpTransport, DeclaredToolArgumentsAreMirroredAsMcpParamHeadersIn2026) {
  const json tools = {{"tools",
                       {{{"name", "t"},
                         {"inputSchema",
                          {{"type", "object"},
                           {"properties",
                            {{"region", {{"type", "string"}, {"x-mcp-header", "Region"}}},
                             {"count", {{"type", "integer"}, {"x-mcp-header", "Count"}}},
                             {"flag", {{"type", "boolean"}, {"x-mcp-header", "Flag"}}},
                             {"city", {{"type", "string"}, {"x-mcp-header", "City"}}},
                             {"bad", {{"type", "string"}, {"x-mcp-header", "Bad Name"}}},
                             {"plain", {{"type", "string"}}}}}}}}}}};
  Fixture f([&](const TestRequest& r, TestConnection& c) {
    const json message = body_of(r);
    c.json(200, result(message["id"], message["method"] == "tools/list" ? tools : json::object()).dump());
  });
  const json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}};
  ASSERT_TRUE(f.transport->send(request(1, "tools/list", {{"_meta", meta}})));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  const json arguments = {{"region", "us-west1"}, {"count", 42}, {"flag", false},
                          {"city", "Köln"},       {"bad", "x"},  {"plain", "y"}};
  ASSERT_TRUE(f.transport->send(
      request(2, "tools/call", {{"name", "t"}, {"arguments", arguments}, {"_meta", meta}})));
  ASSERT_TRUE(f.recorder.wait_messages(2));
  const TestRequest call = f.server.requests().at(1);
  EXPECT_EQ(call.header("mcp-param-region"), "us-west1");
  EXPECT_EQ(call.header("mcp-param-count"), "42");
  EXPECT_EQ(call.header("mcp-param-flag"), "false");
  EXPECT_EQ(call.header("mcp-param-city"), "=?base64?S8O2bG4=?=");
  size_t params = 0;
  for (const auto& [name, value] : call.headers) params += name.starts_with("mcp-param-") ? 1 : 0;
  EXPECT_EQ(params, 4u);  // not the undeclared argument, not the invalid declaration
}

TEST(HttpTransport, HeaderValuesThatAreNotPlainAsciiAreBase64Encoded) {
  EXPECT_EQ(encode_header_value("echo"), "echo");
  EXPECT_EQ(encode_header_value(" lead"), "=?base64?IGxlYWQ=?=");
  EXPECT_EQ(encode_header_value("a\r\nX-Evil: 1"), "=?base64?YQ0KWC1FdmlsOiAx?=");
  EXPECT_EQ(encode_header_value("=?base64?x?="), "=?base64?PT9iYXNlNjQ/eD89?=");
  EXPECT_EQ(mcp_name_header("tasks/get", {{"taskId", "t1"}}), "t1");
  EXPECT_EQ(mcp_name_header("tools/list", {{"name", "x"}}), "");
}

TEST(HttpTransport, A404OnARequestWithASessionEndsTheTransportWithSessionExpired) {
  std::atomic<bool> forget{false};
  Fixture f([&](const TestRequest& r, TestConnection& c) {
    if (forget && r.header("mcp-session-id")) return c.json(404, R"({"error":"no session"})");
    answer_with_session(r, c);
  });
  ASSERT_TRUE(f.transport->send(request(1, "initialize")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  forget = true;
  ASSERT_TRUE(f.transport->send(request(2, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_closed());
  ASSERT_EQ(f.recorder.closed().size(), 1u);
  EXPECT_EQ(f.recorder.closed()[0].code(), codes::kMcpSessionExpired);
  EXPECT_TRUE(f.recorder.closed()[0].retryable());
  EXPECT_EQ(f.recorder.messages().size(), 1u);  // nothing after on_closed
  const auto refused = f.transport->send(request(3, "tools/list"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), codes::kMcpTransportClosed);
}

TEST(HttpTransport, AStreamCutBeforeTheAnswerIsResumedWithGetAndLastEventIdAfterRetry) {
  std::atomic<int> gets{0};
  Fixture f([&](const TestRequest& r, TestConnection& c) {
    if (r.method == "POST") {
      c.head(200, "text/event-stream");
      c.write("id: ev-1\nretry: 20\ndata: \n\n");
      return;  // the stream ends here: no answer yet
    }
    ++gets;
    c.head(200, "text/event-stream");
    if (gets == 1) {
      c.write(sse({{"jsonrpc", "2.0"}, {"method", "notifications/message"}}, "ev-2"));
      return;  // cut again
    }
    c.write(sse(result(9), "ev-3"));
    c.wait_closed();  // a GET stream stays open: the client drops it once answered
  });
  ASSERT_TRUE(f.transport->send(request(9, "tools/call", {{"name", "slow"}})));
  ASSERT_TRUE(f.recorder.wait_messages(2));
  EXPECT_EQ(f.recorder.messages()[1], result(9));
  const auto requests = f.server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].method, "GET");
  EXPECT_EQ(requests[1].header("last-event-id"), "ev-1");
  EXPECT_EQ(requests[1].header("accept"), "text/event-stream");
  EXPECT_EQ(requests[2].header("last-event-id"), "ev-2");
  EXPECT_TRUE(f.recorder.problems().empty());
}

TEST(HttpTransport, TheServerStreamDeliversUnaskedMessagesAndReopensAfterItsLastEvent) {
  std::atomic<int> gets{0};
  Fixture f([&](const TestRequest& r, TestConnection& c) {
    if (r.method == "POST") {
      c.json(200, result(body_of(r)["id"]).dump(), {"Mcp-Session-Id: sess-1"});
      return;
    }
    c.head(200, "text/event-stream");
    if (++gets == 1) {
      c.write("retry: 10\n\n");
      c.write(sse({{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}}, "ev-1"));
      return;  // the stream ends: the transport opens it again
    }
    c.write(sse({{"jsonrpc", "2.0"}, {"method", "notifications/message"}}, "ev-2"));
    c.wait_closed();
  });
  ASSERT_TRUE(f.transport->send(request(1, "initialize")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  f.transport->set_protocol_version("2025-11-25");
  f.transport->open_server_stream();
  f.transport->open_server_stream();  // once only
  ASSERT_TRUE(f.recorder.wait_messages(3));
  const auto messages = f.recorder.messages();
  EXPECT_EQ(messages[1]["method"], "notifications/tools/list_changed");
  EXPECT_EQ(messages[2]["method"], "notifications/message");
  const auto requests = f.server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].method, "GET");
  EXPECT_EQ(requests[1].header("accept"), "text/event-stream");
  EXPECT_EQ(requests[1].header("mcp-session-id"), "sess-1");
  EXPECT_EQ(requests[1].header("mcp-protocol-version"), "2025-11-25");
  EXPECT_FALSE(requests[1].header("last-event-id"));
  EXPECT_EQ(requests[2].header("last-event-id"), "ev-1");
  EXPECT_TRUE(f.recorder.problems().empty());
}

TEST(HttpTransport, AServerWithoutAServerStreamAnswers405AndThatIsNoProblem) {
  HttpTransportOptions options;
  options.max_concurrent_requests = 1;  // so a send succeeds only once the GET's exchange is over
  Fixture f(
      [&](const TestRequest& r, TestConnection& c) {
        if (r.method == "GET") return c.json(405, "");
        c.json(200, result(body_of(r)["id"]).dump());
      },
      options);
  f.transport->open_server_stream();
  const auto give_up = std::chrono::steady_clock::now() + kHangGuard;
  Result<void> sent = f.transport->send(request(2, "tools/list"));
  while (!sent && sent.error().code() == codes::kMcpHttpBusy && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polling the exchange's end, bounded
    sent = f.transport->send(request(2, "tools/list"));
  }
  ASSERT_TRUE(sent) << sent.error().to_string();
  ASSERT_TRUE(f.recorder.wait_messages(1));
  EXPECT_TRUE(f.recorder.problems().empty());  // a problem about the GET would have come before its end
  EXPECT_EQ(f.server.requests().at(0).method, "GET");
}

TEST(HttpTransport, A404ToTheServerStreamOfASessionEndsTheTransportWithSessionExpired) {
  Fixture f([&](const TestRequest& r, TestConnection& c) {
    if (r.method == "GET") return c.json(404, "");
    c.json(200, result(body_of(r)["id"]).dump(), {"Mcp-Session-Id: sess-1"});
  });
  ASSERT_TRUE(f.transport->send(request(1, "initialize")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  f.transport->open_server_stream();
  ASSERT_TRUE(f.recorder.wait_closed());
  EXPECT_EQ(f.recorder.closed().at(0).code(), codes::kMcpSessionExpired);
}

TEST(HttpTransport, ResumptionIsBoundedAndEndsTheRequestWithACodedError) {
  HttpTransportOptions options;
  options.max_resumptions = 2;
  Fixture f(
      [](const TestRequest&, TestConnection& c) {
        c.head(200, "text/event-stream");
        c.write("id: e\nretry: 1\ndata: \n\n");
      },
      options);
  ASSERT_TRUE(f.transport->send(request(5, "tools/call", {{"name", "x"}})));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  const json answer = f.recorder.messages()[0];
  EXPECT_EQ(answer["id"], 5);
  EXPECT_EQ(answer["error"]["data"]["keel/code"], codes::kMcpHttpStreamEnded);
  EXPECT_EQ(f.server.requests().size(), 3u);  // the POST and two resumptions
  ASSERT_EQ(f.recorder.problems().size(), 1u);
  EXPECT_EQ(f.recorder.problems()[0].code(), codes::kMcpHttpStreamEnded);
}

TEST(HttpTransport, ABearerTokenFromTheProviderGoesInAuthorizationAndNeverInErrors) {
  HttpTransportOptions options;
  options.bearer_token = []() -> Result<std::string> { return std::string("tok-secret-123"); };
  Fixture f([](const TestRequest&, TestConnection& c) { c.json(401, "denied"); }, options);
  ASSERT_TRUE(f.transport->send(request(1, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  EXPECT_EQ(f.server.requests().at(0).header("authorization"), "Bearer tok-secret-123");
  const json answer = f.recorder.messages()[0];
  EXPECT_EQ(answer["error"]["data"]["keel/code"], codes::kMcpHttpUnauthorized);
  EXPECT_EQ(answer.dump().find("tok-secret"), std::string::npos);
  for (const auto& p : f.recorder.problems()) EXPECT_EQ(p.to_string().find("tok-secret"), std::string::npos);
}

TEST(HttpTransport, ATokenProviderFailureFailsTheSend) {
  HttpTransportOptions options;
  options.bearer_token = []() -> Result<std::string> {
    return fail("credentials.missing", "no token stored");
  };
  Fixture f(answer_with_session, options);
  const auto sent = f.transport->send(request(1, "tools/list"));
  ASSERT_FALSE(sent);
  EXPECT_EQ(sent.error().code(), "credentials.missing");
}

TEST(HttpTransport, AnAnswerOverTheSizeBoundEndsTheRequestWithMessageTooLarge) {
  HttpTransportOptions options;
  options.max_message_bytes = 1024;
  Fixture f(
      [](const TestRequest& r, TestConnection& c) {
        c.json(200, result(body_of(r)["id"], {{"blob", std::string(4096, 'x')}}).dump());
      },
      options);
  ASSERT_TRUE(f.transport->send(request(1, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  EXPECT_EQ(f.recorder.messages()[0]["error"]["data"]["keel/code"], codes::kMcpMessageTooLarge);
}

TEST(HttpTransport, AnSseEventOverTheSizeBoundEndsTheRequestWithMessageTooLarge) {
  HttpTransportOptions options;
  options.max_message_bytes = 1024;
  Fixture f(
      [](const TestRequest&, TestConnection& c) {
        c.head(200, "text/event-stream");
        c.write("data: " + std::string(4096, 'x'));
        c.wait_closed();
      },
      options);
  ASSERT_TRUE(f.transport->send(request(1, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  EXPECT_EQ(f.recorder.messages()[0]["error"]["data"]["keel/code"], codes::kMcpMessageTooLarge);
}

TEST(HttpTransport, GarbageSseEventsAreReportedAndSkipped) {
  Fixture f([](const TestRequest& r, TestConnection& c) {
    c.head(200, "text/event-stream");
    c.write("data: not json\n\ndata: [1,2]\n\n" + sse(result(body_of(r)["id"])));
  });
  ASSERT_TRUE(f.transport->send(request(3, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  EXPECT_EQ(f.recorder.messages()[0], result(3));
  ASSERT_EQ(f.recorder.problems().size(), 2u);
  EXPECT_EQ(f.recorder.problems()[0].code(), codes::kMcpSseBadEvent);
  EXPECT_EQ(f.recorder.problems()[1].code(), codes::kMcpSseBadEvent);
}

TEST(HttpTransport, AJsonRpcErrorWithAnHttpErrorStatusIsDeliveredAsTheAnswer) {
  Fixture f([](const TestRequest&, TestConnection& c) {
    c.json(400, R"({"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"unsupported"}})");
  });
  ASSERT_TRUE(f.transport->send(request(4, "server/discover")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  const json answer = f.recorder.messages()[0];
  EXPECT_EQ(answer["id"], 4);  // the POST's own request: its id is put back
  EXPECT_EQ(answer["error"]["code"], -32022);
}

TEST(HttpTransport, AnHttpErrorStatusWithoutAJsonRpcBodyAnswersTheRequestWithHttpStatus) {
  Fixture f([](const TestRequest&, TestConnection& c) { c.json(503, "<html>down</html>"); });
  ASSERT_TRUE(f.transport->send(request(4, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  const json answer = f.recorder.messages()[0];
  EXPECT_EQ(answer["error"]["data"]["keel/code"], codes::kMcpHttpStatus);
  EXPECT_NE(answer["error"]["message"].get<std::string>().find("503"), std::string::npos);
  ASSERT_EQ(f.recorder.problems().size(), 1u);
  EXPECT_TRUE(f.recorder.problems()[0].retryable());
}

TEST(HttpTransport, AServerThatIsDownAnswersTheRequestWithHttpUnreachable) {
  providers::testing::RefusingPort refusing(/*listening=*/false);
  HttpTransportOptions options;
  options.url = "http://127.0.0.1:" + std::to_string(refusing.port()) + "/mcp";
  options.http_client = std::make_shared<providers::CurlHttpClient>(Fixture::direct());
  auto transport = make_http_transport(std::move(options));
  ASSERT_TRUE(transport);
  Recorder recorder;
  ASSERT_TRUE((*transport)->start(recorder.handlers()));
  ASSERT_TRUE((*transport)->send(request(1, "initialize")));
  ASSERT_TRUE(recorder.wait_messages(1));
  EXPECT_EQ(recorder.messages()[0]["error"]["data"]["keel/code"], codes::kMcpHttpUnreachable);
  ASSERT_EQ(recorder.problems().size(), 1u);
  EXPECT_EQ(recorder.problems()[0].code(), codes::kMcpHttpUnreachable);
  EXPECT_TRUE(recorder.problems()[0].retryable());
}

TEST(HttpTransport, RequestsRunConcurrentlyUpToTheBound) {
  Mutex mu;
  std::condition_variable all_in;
  int arrived = 0;
  HttpTransportOptions options;
  options.max_concurrent_requests = 3;
  Fixture f(
      [&](const TestRequest& r, TestConnection& c) {
        {
          MutexLock lock(mu);
          ++arrived;
          all_in.notify_all();
          const auto give_up = std::chrono::steady_clock::now() + kHangGuard;
          // Each answer waits for all three requests: only concurrent exchanges can get here.
          while (arrived < 3) {
            if (lock.wait_until(all_in, give_up) == std::cv_status::timeout) break;
          }
        }
        c.json(200, result(body_of(r)["id"]).dump());
      },
      options);
  ASSERT_TRUE(f.transport->send(request(1, "tools/list")));
  ASSERT_TRUE(f.transport->send(request(2, "tools/list")));
  ASSERT_TRUE(f.transport->send(request(3, "tools/list")));
  const auto refused = f.transport->send(request(4, "tools/list"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), codes::kMcpHttpBusy);
  EXPECT_TRUE(refused.error().retryable());
  ASSERT_TRUE(f.recorder.wait_messages(3));
  std::set<int> ids;
  for (const auto& m : f.recorder.messages()) ids.insert(m["id"].get<int>());
  EXPECT_EQ(ids, (std::set<int>{1, 2, 3}));
  EXPECT_TRUE(f.recorder.problems().empty());
}

TEST(HttpTransport, CloseDeletesTheSession) {
  Fixture f([](const TestRequest& r, TestConnection& c) {
    if (r.method == "DELETE") return c.head(200, "");
    answer_with_session(r, c);
  });
  ASSERT_TRUE(f.transport->send(request(1, "initialize")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  f.transport->close();
  ASSERT_TRUE(f.server.wait_requests(2));
  const TestRequest deleted = f.server.requests().at(1);
  EXPECT_EQ(deleted.method, "DELETE");
  EXPECT_EQ(deleted.header("mcp-session-id"), "sess-1");
  f.transport->close();  // idempotent
  EXPECT_EQ(f.transport->send(request(2, "tools/list")).error().code(), codes::kMcpTransportClosed);
}

TEST(HttpTransport, AnUnexpectedContentTypeAnswersTheRequestWithACodedError) {
  Fixture f([](const TestRequest&, TestConnection& c) {
    c.head(200, "text/html");
    c.write("<p>hi</p>");
  });
  ASSERT_TRUE(f.transport->send(request(1, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  EXPECT_EQ(f.recorder.messages()[0]["error"]["data"]["keel/code"], codes::kMcpHttpBadContentType);
}

TEST(HttpTransport, ANonHttpUrlIsRefused) {
  HttpTransportOptions options;
  options.url = "file:///etc/passwd";
  const auto made = make_http_transport(std::move(options));
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code(), codes::kInvalidArgument);
}

}  // namespace
}  // namespace keel::mcp

namespace keel::mcp {
namespace {

// An McpHttpAuth whose renewals are scripted: each on_challenge() records what it was told and answers with
// the next token (or the error) of its script.
class ScriptedAuth final : public McpHttpAuth {
 public:
  explicit ScriptedAuth(std::vector<Result<std::string>> renewals) : renewals_(std::move(renewals)) {}
  Result<std::string> token() override {
    MutexLock lock(mu_);
    return token_;
  }
  Result<void> on_challenge(int status, const std::string& www_authenticate,
                            const std::string& used_token) override {
    MutexLock lock(mu_);
    challenges_.push_back(std::to_string(status) + " " + www_authenticate + " used=" + used_token);
    if (next_ >= renewals_.size()) return fail(codes::kInvalidArgument, "no renewal left");
    Result<std::string> renewed = renewals_[next_++];
    if (!renewed) return std::unexpected(renewed.error());
    token_ = *renewed;
    return {};
  }
  std::vector<std::string> challenges() const {
    MutexLock lock(mu_);
    return challenges_;
  }

 private:
  mutable Mutex mu_;
  std::vector<Result<std::string>> renewals_ GUARDED_BY(mu_);
  size_t next_ GUARDED_BY(mu_) = 0;
  std::string token_ GUARDED_BY(mu_);
  std::vector<std::string> challenges_ GUARDED_BY(mu_);
};

TEST(HttpTransportAuth, A401IsAnsweredByRenewingTheCredentialsAndSendingTheRequestAgainWithTheNewToken) {
  auto auth = std::make_shared<ScriptedAuth>(std::vector<Result<std::string>>{std::string("tok-1")});
  HttpTransportOptions options;
  options.auth = auth;
  Fixture f(
      [](const TestRequest& r, TestConnection& c) {
        if (r.header("authorization") != "Bearer tok-1") {
          c.json(401, R"({"error":"unauthorized"})", {R"(WWW-Authenticate: Bearer scope="tools")"});
          return;
        }
        c.json(200, result(body_of(r)["id"], {{"ok", true}}).dump());
      },
      options);
  ASSERT_TRUE(f.transport->send(request(1, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  EXPECT_EQ(f.recorder.messages()[0], result(1, {{"ok", true}}));
  EXPECT_EQ(auth->challenges(), std::vector<std::string>{R"(401 Bearer scope="tools" used=)"});
  const auto requests = f.server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_FALSE(requests[0].header("authorization").has_value());
  EXPECT_EQ(requests[1].body, requests[0].body);
  EXPECT_TRUE(f.recorder.problems().empty());
}

TEST(HttpTransportAuth, ASecondRefusalOfTheSameRequestFailsItWithoutAnotherRenewal) {
  auto auth = std::make_shared<ScriptedAuth>(
      std::vector<Result<std::string>>{std::string("tok-1"), std::string("tok-2")});
  HttpTransportOptions options;
  options.auth = auth;
  Fixture f(
      [](const TestRequest&, TestConnection& c) {
        c.json(403, "{}", {R"(WWW-Authenticate: Bearer error="insufficient_scope")"});
      },
      options);
  ASSERT_TRUE(f.transport->send(request(1, "tools/call", {{"name", "t"}})));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  EXPECT_EQ(f.recorder.messages()[0]["error"]["data"]["keel/code"], codes::kMcpHttpUnauthorized);
  EXPECT_EQ(auth->challenges().size(), 1u);
  const auto requests = f.server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].header("authorization"), "Bearer tok-1");
}

TEST(HttpTransportAuth, ARenewalThatFailsFailsTheRequestWithItsCode) {
  auto auth = std::make_shared<ScriptedAuth>(
      std::vector<Result<std::string>>{std::unexpected(Error("mcp.auth_denied", "the person said no"))});
  HttpTransportOptions options;
  options.auth = auth;
  Fixture f([](const TestRequest&, TestConnection& c) { c.json(401, "{}"); }, options);
  ASSERT_TRUE(f.transport->send(request(1, "tools/list")));
  ASSERT_TRUE(f.recorder.wait_messages(1));
  EXPECT_EQ(f.recorder.messages()[0]["error"]["data"]["keel/code"], "mcp.auth_denied");
  EXPECT_EQ(auth->challenges(), std::vector<std::string>{"401  used="});
  EXPECT_EQ(f.server.requests().size(), 1u);
}

TEST(HttpTransportAuth, AServerThatAnswers401IsSignedInToWithOAuthAndTheRequestSentWithTheGrantedToken) {
  constexpr char kMetadata[] = "https://meta.example.com/prm";
  TestHttpServer server([&](const TestRequest& r, TestConnection& c) {
    if (r.header("authorization") != "Bearer at-1") {
      c.json(
          401, "{}",
          {std::string("WWW-Authenticate: Bearer resource_metadata=\"") + kMetadata + "\", scope=\"tools\""});
      return;
    }
    c.json(200, result(body_of(r)["id"], {{"ok", true}}).dump());
  });
  testing::FakeAuthorizationServer authorization;
  authorization.documents_[kMetadata] = {{"resource", server.url()},
                                         {"authorization_servers", {testing::kIssuer}}};
  OAuthHttpAuthOptions auth;
  auth.server_url = server.url();
  auth.redirect_uri = testing::kRedirect;
  auth.fetch = authorization.fetch();
  auth.authorizer = authorization.authorizer();
  HttpTransportOptions options;
  options.url = server.url();
  options.http_client = std::make_shared<providers::CurlHttpClient>(Fixture::direct());
  options.auth = make_oauth_http_auth(std::move(auth));
  auto transport = make_http_transport(std::move(options));
  ASSERT_TRUE(transport) << transport.error().to_string();
  Recorder recorder;
  ASSERT_TRUE((*transport)->start(recorder.handlers()));

  ASSERT_TRUE((*transport)->send(request(1, "tools/list")));
  ASSERT_TRUE(recorder.wait_messages(1));
  EXPECT_EQ(recorder.messages()[0], result(1, {{"ok", true}}));
  EXPECT_EQ(authorization.calls.front(), std::string("GET ") + kMetadata);
  EXPECT_EQ(find_param(authorization.authorization_query, "resource"), server.url());
  EXPECT_EQ(find_param(authorization.authorization_query, "scope"), "tools");
  EXPECT_EQ(authorization.registration["client_name"], "keel");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].header("authorization"), "Bearer at-1");
  (*transport)->close();
}

}  // namespace
}  // namespace keel::mcp
