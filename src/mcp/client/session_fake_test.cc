// mcp/client/session_fake_test.cc — open_mcp_session and McpSession over an in-process fake transport whose
// server is a function of what keel sent: the probe's decisions on modern errors, the handshake's bounds,
// what every request carries, and results keel must refuse.
#include <gtest/gtest.h>

#include <future>
#include <mutex>

#include "keel/cancellation.h"
#include "keel/error_codes.h"
#include "mcp/client/session_open.h"
#include "mcp/mcp_errors.h"

namespace keel::mcp {
namespace {

using nlohmann::json;

// What the fake transport saw; shared with the test after the transport moved into the session.
struct Wire {
  std::mutex mu;
  std::vector<json> sent;
  std::vector<std::string> versions;  // set_protocol_version calls
  int server_streams = 0;             // open_server_stream calls
};

// Answers each message keel sends with what `server` returns (nothing when null), synchronously.
class FakeTransport final : public McpTransport {
 public:
  using Server = std::function<json(const json& message)>;
  FakeTransport(std::shared_ptr<Wire> wire, Server server)
      : wire_(std::move(wire)), server_(std::move(server)) {}
  Result<void> start(Handlers handlers) override {
    handlers_ = std::move(handlers);
    return {};
  }
  Result<void> send(const json& message) override {
    {
      std::lock_guard lock(wire_->mu);
      wire_->sent.push_back(message);
    }
    json reply = server_(message);
    if (!reply.is_null()) handlers_.on_message(std::move(reply));
    return {};
  }
  void close() override {}
  void set_protocol_version(std::string version) override {
    std::lock_guard lock(wire_->mu);
    wire_->versions.push_back(std::move(version));
  }
  void open_server_stream() override {
    std::lock_guard lock(wire_->mu);
    ++wire_->server_streams;
  }
  std::string endpoint() const override { return "fake"; }

 private:
  std::shared_ptr<Wire> wire_;
  Server server_;
  Handlers handlers_;
};

json result_for(const json& request, json result) {
  return {{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", std::move(result)}};
}
json error_for(const json& request, int code, json data = nullptr) {
  json error = {{"code", code}, {"message", "m"}};
  if (!data.is_null()) error["data"] = std::move(data);
  return {{"jsonrpc", "2.0"}, {"id", request["id"]}, {"error", std::move(error)}};
}

const json kInitializeResult = {{"protocolVersion", "2025-06-18"},
                                {"capabilities", json::object()},
                                {"serverInfo", {{"name", "fake"}, {"version", "1"}}}};

class SessionFakeTest : public ::testing::Test {
 protected:
  Result<std::shared_ptr<McpSession>> open(FakeTransport::Server server, McpClientOptions options = {}) {
    McpSessionEvents events;
    events.on_problem = [this](const Error& problem, bool) {
      std::lock_guard lock(wire_->mu);
      problems_.push_back(problem);
    };
    return open_mcp_session(std::make_unique<FakeTransport>(wire_, std::move(server)), options,
                            std::move(events));
  }
  std::vector<json> sent() {
    std::lock_guard lock(wire_->mu);
    return wire_->sent;
  }
  std::shared_ptr<Wire> wire_ = std::make_shared<Wire>();
  std::vector<Error> problems_;
};

// A modern server: discover answered, every other request answered by `rest`.
FakeTransport::Server modern(std::function<json(const json&)> rest) {
  return [rest](const json& message) -> json {
    if (!message.contains("id")) return nullptr;
    if (message["method"] == "server/discover")
      return result_for(message, {{"supportedVersions", {"2026-07-28"}}, {"serverInfo", {{"name", "m"}}}});
    return rest(message);
  };
}

// An older server: server/discover is an unknown method, initialize answers with `capabilities`, and every
// other request is answered by `rest`.
FakeTransport::Server legacy(json capabilities, std::function<json(const json&)> rest) {
  return [capabilities, rest](const json& message) -> json {
    if (!message.contains("id")) return nullptr;
    if (message["method"] == "server/discover") return error_for(message, -32601);
    if (message["method"] == "initialize") {
      json result = kInitializeResult;
      result["capabilities"] = capabilities;
      return result_for(message, result);
    }
    return rest(message);
  };
}

std::vector<json> with_method(const std::vector<json>& messages, const std::string& method) {
  std::vector<json> out;
  for (const json& message : messages)
    if (message.value("method", "") == method) out.push_back(message);
  return out;
}

TEST_F(SessionFakeTest, AServerWithTheLoggingCapabilityIsAskedForTheConfiguredLevel) {
  McpClientOptions options;
  options.log_level = "warning";
  auto session =
      open(legacy({{"logging", json::object()}}, [](const json& m) { return result_for(m, {}); }), options);
  ASSERT_TRUE(session.has_value()) << session.error().to_string();
  const std::vector<json> asked = with_method(sent(), "logging/setLevel");
  ASSERT_EQ(asked.size(), 1U);
  EXPECT_EQ(asked[0]["params"], json({{"level", "warning"}}));
  EXPECT_TRUE(problems_.empty());
}

TEST_F(SessionFakeTest, NoLevelIsAskedWithoutTheCapabilityOrAConfiguredLevelOrOfAModernServer) {
  McpClientOptions options;
  options.log_level = "info";
  auto answer = [](const json& m) { return result_for(m, json::object()); };
  ASSERT_TRUE(open(legacy(json::object(), answer), options).has_value());        // no logging capability
  ASSERT_TRUE(open(legacy({{"logging", json::object()}}, answer)).has_value());  // no level configured
  ASSERT_TRUE(open(modern(answer), options).has_value());  // the stateless generation has no session
  EXPECT_TRUE(with_method(sent(), "logging/setLevel").empty());
}

TEST_F(SessionFakeTest, ARefusedLogLevelIsAProblemAndTheSessionGoesOn) {
  McpClientOptions options;
  options.log_level = "debug";
  auto session = open(legacy({{"logging", json::object()}},
                             [](const json& m) {
                               if (m["method"] == "logging/setLevel") return error_for(m, -32602);
                               return result_for(m, {{"tools", json::array()}});
                             }),
                      options);
  ASSERT_TRUE(session.has_value()) << session.error().to_string();
  ASSERT_EQ(problems_.size(), 1U);
  EXPECT_EQ(problems_[0].code(), codes::kMcpRpcError);
  EXPECT_NE(problems_[0].message().find("logging/setLevel debug"), std::string::npos)
      << problems_[0].message();
  std::promise<Result<std::vector<McpToolInfo>>> promise;
  (*session)->list_tools([&](Result<std::vector<McpToolInfo>> r) { promise.set_value(std::move(r)); });
  EXPECT_TRUE(promise.get_future().get().has_value());
}

TEST_F(SessionFakeTest, TheServerStreamIsOpenedAfterAnOlderHandshakeOnly) {
  auto answer = [](const json& m) { return result_for(m, json::object()); };
  ASSERT_TRUE(open(modern(answer)).has_value());
  EXPECT_EQ(wire_->server_streams, 0);
  ASSERT_TRUE(open(legacy(json::object(), answer)).has_value());
  EXPECT_EQ(wire_->server_streams, 1);
}

TEST_F(SessionFakeTest, TheProbeCarriesTheModernMetaAndDeclaresNoCapabilities) {
  auto session = open(modern([](const json& m) { return result_for(m, json::object()); }));
  ASSERT_TRUE(session.has_value()) << session.error().to_string();
  const json probe = sent().at(0);
  EXPECT_EQ(probe["method"], "server/discover");
  const json& meta = probe["params"]["_meta"];
  EXPECT_EQ(meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
  EXPECT_EQ(meta["io.modelcontextprotocol/clientCapabilities"], json::object());
  EXPECT_EQ(meta["io.modelcontextprotocol/clientInfo"]["name"], "keel");
  EXPECT_EQ(wire_->versions, std::vector<std::string>{"2026-07-28"});
}

TEST_F(SessionFakeTest, AModernCallCarriesTheMetaAndAProgressToken) {
  auto session = open(modern([](const json& m) { return result_for(m, {{"content", json::array()}}); }));
  ASSERT_TRUE(session.has_value());
  std::promise<Result<McpCallResult>> promise;
  McpCallRequest request;
  request.tool = "t";
  request.arguments = {{"x", 1}};
  (*session)->call_tool(std::move(request),
                        [&](Result<McpCallResult> r) { promise.set_value(std::move(r)); });
  ASSERT_TRUE(promise.get_future().get().has_value());
  const json call = sent().back();
  EXPECT_EQ(call["method"], "tools/call");
  EXPECT_EQ(call["params"]["name"], "t");
  EXPECT_EQ(call["params"]["arguments"]["x"], 1);
  EXPECT_EQ(call["params"]["_meta"]["progressToken"], call["id"]);
  EXPECT_EQ(call["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
}

TEST_F(SessionFakeTest, UnsupportedProtocolVersionNamingAnOlderRevisionLeadsToInitialize) {
  auto session = open([](const json& m) -> json {
    if (!m.contains("id")) return nullptr;
    if (m["method"] == "server/discover") return error_for(m, -32022, {{"supported", {"2025-06-18"}}});
    if (m["method"] == "initialize") return result_for(m, kInitializeResult);
    return result_for(m, json::object());
  });
  ASSERT_TRUE(session.has_value()) << session.error().to_string();
  EXPECT_EQ((*session)->server_info().protocol_version, "2025-06-18");
  const auto wire = sent();
  ASSERT_EQ(wire.size(), 3u);
  EXPECT_EQ(wire[1]["params"]["protocolVersion"], "2025-11-25");
  EXPECT_EQ(wire[1]["params"]["capabilities"], json::object());
  EXPECT_EQ(wire[2]["method"], "notifications/initialized");
  EXPECT_EQ(wire_->versions, std::vector<std::string>{"2025-06-18"});
}

TEST_F(SessionFakeTest, UnsupportedProtocolVersionWithNothingInCommonIsRefused) {
  auto session = open([](const json& m) -> json {
    if (m["method"] == "server/discover") return error_for(m, -32022, {{"supported", {"2027-01-01"}}});
    return nullptr;
  });
  ASSERT_FALSE(session.has_value());
  EXPECT_EQ(session.error().code(), codes::kMcpVersionUnsupported);
}

TEST_F(SessionFakeTest, AnInitializeThatNeverComesBackIsAHandshakeTimeout) {
  McpClientOptions options;
  options.probe_timeout = std::chrono::milliseconds(50);
  options.handshake_timeout = std::chrono::milliseconds(300);
  auto session = open([](const json&) -> json { return nullptr; }, options);
  ASSERT_FALSE(session.has_value());
  EXPECT_EQ(session.error().code(), codes::kMcpHandshakeTimedOut);
}

TEST_F(SessionFakeTest, AnInputRequiredResultIsRefusedUntilKeelDeclaresItsCapability) {
  auto session = open(modern([](const json& m) {
    return result_for(m, {{"resultType", "input_required"}});
  }));
  ASSERT_TRUE(session.has_value());
  std::promise<Result<McpCallResult>> promise;
  McpCallRequest request;
  request.tool = "t";
  (*session)->call_tool(std::move(request),
                        [&](Result<McpCallResult> r) { promise.set_value(std::move(r)); });
  auto result = promise.get_future().get();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), codes::kMcpBadResponse);
}

TEST_F(SessionFakeTest, AToolListThatNeverEndsIsBounded) {
  McpClientOptions options;
  options.max_tool_pages = 5;
  auto session = open(modern([](const json& m) {
                        return result_for(m, {{"tools", json::array()}, {"nextCursor", "again"}});
                      }),
                      options);
  ASSERT_TRUE(session.has_value());
  std::promise<Result<std::vector<McpToolInfo>>> promise;
  (*session)->list_tools([&](Result<std::vector<McpToolInfo>> r) { promise.set_value(std::move(r)); });
  auto listed = promise.get_future().get();
  ASSERT_FALSE(listed.has_value());
  EXPECT_EQ(listed.error().code(), codes::kMcpTooManyTools);
  EXPECT_EQ(sent().size(), 6u);  // the probe and five pages
}

TEST_F(SessionFakeTest, MalformedAndRepeatedToolsAreSkippedAndReported) {
  auto session = open(modern([](const json& m) {
    return result_for(m, {{"tools",
                           {{{"name", "a"}, {"inputSchema", {{"type", "object"}}}},
                            {{"name", "a"}, {"inputSchema", {{"type", "object"}}}},
                            {{"description", "nameless"}}}}});
  }));
  ASSERT_TRUE(session.has_value());
  std::promise<Result<std::vector<McpToolInfo>>> promise;
  (*session)->list_tools([&](Result<std::vector<McpToolInfo>> r) { promise.set_value(std::move(r)); });
  auto listed = promise.get_future().get();
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ(listed->size(), 1u);
  std::lock_guard lock(wire_->mu);
  ASSERT_EQ(problems_.size(), 2u);
  EXPECT_EQ(problems_[0].code(), codes::kMcpBadResponse);
}

const json kParamHeaderTools = {
    {{"name", "valid"},
     {"inputSchema",
      {{"type", "object"}, {"properties", {{"r", {{"type", "string"}, {"x-mcp-header", "Region"}}}}}}}},
    {{"name", "duplicate"},
     {"inputSchema",
      {{"type", "object"},
       {"properties",
        {{"a", {{"type", "string"}, {"x-mcp-header", "Field"}}},
         {"b", {{"type", "string"}, {"x-mcp-header", "field"}}}}}}}}};

TEST_F(SessionFakeTest, AModernToolWithInvalidParamHeadersIsDroppedAndReported) {
  auto session = open(modern([](const json& m) { return result_for(m, {{"tools", kParamHeaderTools}}); }));
  ASSERT_TRUE(session.has_value());
  std::promise<Result<std::vector<McpToolInfo>>> promise;
  (*session)->list_tools([&](Result<std::vector<McpToolInfo>> r) { promise.set_value(std::move(r)); });
  auto listed = promise.get_future().get();
  ASSERT_TRUE(listed.has_value());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "valid");
  std::lock_guard lock(wire_->mu);
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_EQ(problems_[0].code(), codes::kMcpBadResponse);
  EXPECT_NE(problems_[0].message().find("duplicate"), std::string::npos);
}

TEST_F(SessionFakeTest, AnOlderRevisionKeepsToolsWhateverTheirParamHeaders) {
  auto session = open(legacy(json::object(), [](const json& m) {
    return result_for(m, {{"tools", kParamHeaderTools}});
  }));
  ASSERT_TRUE(session.has_value());
  std::promise<Result<std::vector<McpToolInfo>>> promise;
  (*session)->list_tools([&](Result<std::vector<McpToolInfo>> r) { promise.set_value(std::move(r)); });
  auto listed = promise.get_future().get();
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ(listed->size(), 2u);
}

TEST_F(SessionFakeTest, AnAlreadyCancelledCallIsNotSent) {
  auto session = open(modern([](const json& m) { return result_for(m, json::object()); }));
  ASSERT_TRUE(session.has_value());
  CancellationSource source;
  source.cancel("before");
  McpCallRequest request;
  request.tool = "t";
  request.cancel = source.token();
  std::optional<Result<McpCallResult>> result;
  (*session)->call_tool(std::move(request), [&](Result<McpCallResult> r) { result = std::move(r); });
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->error().code(), codes::kCancelled);
  EXPECT_EQ(sent().size(), 1u);  // only the probe
}

}  // namespace
}  // namespace keel::mcp
