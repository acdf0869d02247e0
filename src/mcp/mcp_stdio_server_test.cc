// The MCP stdio server over in-memory streams with fake tools: every method, calls answered out of order,
// cancellation, end of input mid-call and mid-line, and each kind of bad input getting its stable code.
#include "mcp/mcp_stdio_server.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <istream>
#include <optional>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <thread>

#include "mcp/fake_tools_test_util.h"
#include "mcp/mcp_errors.h"
#include "util/thread_annotations.h"

namespace keel::mcp {
namespace {

using nlohmann::json;
using testing::EchoTool;
using testing::FakeGatekeeper;
using testing::HeldTool;
using testing::registry_of;

// An input the test feeds line by line; reading blocks until data comes or the test closes it.
class FeedBuf final : public std::streambuf {
 public:
  void feed(const std::string& text) {
    MutexLock lock(mu_);
    pending_ += text;
    changed_.notify_all();
  }
  void close() {
    MutexLock lock(mu_);
    closed_ = true;
    changed_.notify_all();
  }

 protected:
  int_type underflow() override {
    MutexLock lock(mu_);
    while (pending_.empty() && !closed_) lock.wait(changed_);
    if (pending_.empty()) return traits_type::eof();
    current_.swap(pending_);
    pending_.clear();
    setg(current_.data(), current_.data(), current_.data() + current_.size());
    return traits_type::to_int_type(current_[0]);
  }

 private:
  Mutex mu_;
  std::condition_variable changed_;
  std::string pending_ GUARDED_BY(mu_);
  std::string current_;  // only the reading thread touches it
  bool closed_ GUARDED_BY(mu_) = false;
};

// An output the test reads lines from, waiting for them with a bound.
class CaptureBuf final : public std::streambuf {
 public:
  // The parsed lines written so far once `ready` holds for them; nullopt after a generous bound.
  std::optional<std::vector<json>> wait_for(const std::function<bool(const std::vector<json>&)>& ready) {
    MutexLock lock(mu_);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      std::vector<json> parsed = parse();
      if (ready(parsed)) return parsed;
      if (lock.wait_until(changed_, give_up) == std::cv_status::timeout) return std::nullopt;
    }
  }
  std::string text() {
    MutexLock lock(mu_);
    return text_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    MutexLock lock(mu_);
    text_.push_back(traits_type::to_char_type(c));
    changed_.notify_all();
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    MutexLock lock(mu_);
    text_.append(s, static_cast<size_t>(n));
    changed_.notify_all();
    return n;
  }

 private:
  // The whole lines written so far (a line still being written is left for later).
  std::vector<json> parse() const REQUIRES(mu_) {
    std::vector<json> lines;
    for (size_t start = 0, end = text_.find('\n'); end != std::string::npos;
         start = end + 1, end = text_.find('\n', start)) {
      lines.push_back(json::parse(text_.substr(start, end - start)));
    }
    return lines;
  }
  Mutex mu_;
  std::condition_variable changed_;
  std::string text_ GUARDED_BY(mu_);
};

const json* find_id(const std::vector<json>& lines, const json& id) {
  for (const json& line : lines) {
    if (line.contains("id") && line["id"] == id) return &line;
  }
  return nullptr;
}

// The tools/call results among `lines`, in the order they were written.
std::vector<json> tool_answers(const std::vector<json>& lines) {
  std::vector<json> answers;
  for (const json& line : lines) {
    if (line.contains("result") && line["result"].contains("content")) answers.push_back(line);
  }
  return answers;
}

json request(const json& id, const std::string& method, json params = json::object()) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json call(const json& id, const std::string& tool, json arguments = json::object()) {
  return request(id, "tools/call", json{{"name", tool}, {"arguments", std::move(arguments)}});
}

class McpStdioServerTest : public ::testing::Test {
 protected:
  McpStdioServerTest() {
    held_ = std::make_shared<HeldTool>();
    tools_ = registry_of(
        {std::make_shared<EchoTool>("echo"), std::make_shared<EchoTool>("put", ToolEffects::kWrite), held_});
  }
  ~McpStdioServerTest() override { finish(); }

  // Serves `input` to its end; the output lines.
  std::vector<json> serve(const std::string& input) {
    ToolBridge bridge(tools_, gate_);
    McpStdioServer server(bridge, options_);
    std::istringstream in(input);
    std::ostringstream out;
    server.run(in, out);
    std::vector<json> lines;
    std::istringstream text(out.str());
    for (std::string line; std::getline(text, line);) {
      auto parsed = json::parse(line, nullptr, /*allow_exceptions=*/false);
      EXPECT_FALSE(parsed.is_discarded()) << "not JSON on the output: " << line;
      lines.push_back(parsed);
    }
    return lines;
  }
  std::vector<json> serve_lines(const std::vector<json>& messages) {
    std::string input;
    for (const json& message : messages) input += message.dump() + "\n";
    return serve(input);
  }
  // The error one bad line earns, from a server that answers a ping after it (so it is still serving).
  json error_for(const std::string& line) {
    const std::vector<json> lines = serve(line + "\n" + request(99, "ping").dump() + "\n");
    EXPECT_NE(find_id(lines, 99), nullptr) << "the server stopped serving after: " << line;
    for (const json& reply : lines) {
      if (reply.contains("error")) return reply;
    }
    ADD_FAILURE() << "no error for: " << line;
    return json();
  }

  // A server running on a thread, fed by the test.
  void start() {
    bridge_ = std::make_unique<ToolBridge>(tools_, gate_);
    server_ = std::make_unique<McpStdioServer>(*bridge_, options_);
    in_ = std::make_unique<std::istream>(&feed_);
    out_ = std::make_unique<std::ostream>(&capture_);
    thread_ = std::thread([this] { server_->run(*in_, *out_); });
  }
  void send(const json& message) { feed_.feed(message.dump() + "\n"); }
  std::vector<json> wait_ids(const std::vector<json>& ids) {
    auto lines = capture_.wait_for([&](const std::vector<json>& seen) {
      for (const json& id : ids) {
        if (find_id(seen, id) == nullptr) return false;
      }
      return true;
    });
    EXPECT_TRUE(lines) << "no answer to every id; output so far:\n" << capture_.text();
    return lines.value_or(std::vector<json>{});
  }
  void finish() {
    if (!thread_.joinable()) return;
    feed_.close();
    thread_.join();
  }
  std::vector<json> output() {
    return capture_.wait_for([](const std::vector<json>&) { return true; }).value_or(std::vector<json>{});
  }

  std::shared_ptr<HeldTool> held_;
  std::shared_ptr<const ToolRegistryGeneration> tools_;
  FakeGatekeeper gate_;
  McpServerOptions options_;
  FeedBuf feed_;
  CaptureBuf capture_;
  std::unique_ptr<ToolBridge> bridge_;
  std::unique_ptr<McpStdioServer> server_;
  std::unique_ptr<std::istream> in_;
  std::unique_ptr<std::ostream> out_;
  std::thread thread_;
};

TEST(NegotiateProtocolVersionTest, AnswersAKnownRevisionWithItselfAndAnyOtherWithTheLatest) {
  EXPECT_EQ(negotiate_protocol_version("2025-11-25"), "2025-11-25");
  EXPECT_EQ(negotiate_protocol_version("2025-06-18"), "2025-06-18");
  EXPECT_EQ(negotiate_protocol_version("2025-03-26"), "2025-03-26");
  EXPECT_EQ(negotiate_protocol_version("2024-11-05"), "2025-11-25");
  EXPECT_EQ(negotiate_protocol_version("2099-01-01"), "2025-11-25");
}

TEST_F(McpStdioServerTest, InitializeAnswersTheVersionCapabilitiesAndServerInfo) {
  const std::vector<json> lines =
      serve_lines({request(1, "initialize",
                           {{"protocolVersion", "2025-06-18"},
                            {"capabilities", json::object()},
                            {"clientInfo", {{"name", "t"}, {"version", "1"}}}}),
                   json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                   request(2, "initialize", {{"protocolVersion", "1999-01-01"}})});
  ASSERT_EQ(lines.size(), 2u) << "the initialized notification is not answered";
  const json& first = lines[0]["result"];
  EXPECT_EQ(lines[0]["id"], 1);
  EXPECT_EQ(first["protocolVersion"], "2025-06-18");
  EXPECT_EQ(first["capabilities"], (json{{"tools", {{"listChanged", false}}}}));
  EXPECT_EQ(first["serverInfo"]["name"], "keel");
  EXPECT_TRUE(first["serverInfo"]["version"].is_string());
  EXPECT_EQ(lines[1]["result"]["protocolVersion"], "2025-11-25");
}

TEST_F(McpStdioServerTest, InitializeWithoutAProtocolVersionIsInvalidParams) {
  const json reply = error_for(request(1, "initialize", json::object()).dump());
  EXPECT_EQ(reply["id"], 1);
  EXPECT_EQ(reply["error"]["code"], -32602);
  EXPECT_EQ(reply["error"]["data"]["code"], "rpc.invalid_params");
}

TEST_F(McpStdioServerTest, PingAnswersAnEmptyResult) {
  const std::vector<json> lines =
      serve_lines({request("p", "ping"), json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}}});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], (json{{"jsonrpc", "2.0"}, {"id", "p"}, {"result", json::object()}}));
  EXPECT_EQ(lines[1]["result"], json::object());
}

TEST_F(McpStdioServerTest, ToolsListNamesEveryToolWithItsAnnotations) {
  const std::vector<json> lines = serve_lines({request(1, "tools/list")});
  ASSERT_EQ(lines.size(), 1u);
  const json& tools = lines[0]["result"]["tools"];
  ASSERT_EQ(tools.size(), 3u);
  EXPECT_EQ(tools[0]["name"], "echo");
  EXPECT_EQ(tools[1]["name"], "held");
  EXPECT_EQ(tools[2]["name"], "put");
  EXPECT_EQ(tools[2]["annotations"]["destructiveHint"], true);
  EXPECT_FALSE(lines[0]["result"].contains("nextCursor"));
}

TEST_F(McpStdioServerTest, ToolsListRefusesACursorItNeverGave) {
  const json reply = error_for(request(1, "tools/list", {{"cursor", "abc"}}).dump());
  EXPECT_EQ(reply["error"]["code"], -32602);
}

TEST_F(McpStdioServerTest, ToolsCallAnswersContentAndToolErrorsAsIsError) {
  const std::vector<json> lines =
      serve_lines({call(1, "echo", {{"text", "hi"}, {"image", true}}),
                   call(2, "echo", {{"fail", "tool.io_error"}}), call(3, "echo", {{"text", 7}})});
  ASSERT_EQ(lines.size(), 3u);
  const json* ok = find_id(lines, 1);
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ((*ok)["result"]["isError"], false);
  EXPECT_EQ((*ok)["result"]["content"][0]["text"], "hi");
  EXPECT_EQ((*ok)["result"]["content"][1]["type"], "image");
  const json* failed = find_id(lines, 2);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ((*failed)["result"]["isError"], true);
  EXPECT_EQ((*failed)["result"]["_meta"]["keel/code"], "tool.io_error");
  const json* invalid = find_id(lines, 3);
  ASSERT_NE(invalid, nullptr);
  EXPECT_EQ((*invalid)["result"]["isError"], true);
  EXPECT_EQ((*invalid)["result"]["_meta"]["keel/code"], "invalid_argument");
}

TEST_F(McpStdioServerTest, ToolsCallWithoutArgumentsCallsWithAnEmptyObject) {
  const std::vector<json> lines = serve_lines({request(1, "tools/call", {{"name", "echo"}})});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["result"]["content"][0]["text"], "ok");
}

TEST_F(McpStdioServerTest, AWriteTheGateAsksAboutIsRefusedAndNotRun) {
  gate_.verdict = GateVerdict{.kind = GateVerdict::Kind::kAsk, .reason = "put writes"};
  const std::vector<json> lines = serve_lines({call(1, "put", {{"text", "x"}})});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["result"]["isError"], true);
  EXPECT_EQ(lines[0]["result"]["_meta"]["keel/code"], codes::kMcpCallRefused);
  EXPECT_EQ(gate_.checked, std::vector<std::string>{"put"});
}

TEST_F(McpStdioServerTest, ProgressReportsGoToTheCallsProgressToken) {
  json params = {{"name", "echo"}, {"arguments", {{"progress", 2}}}, {"_meta", {{"progressToken", "tok"}}}};
  const std::vector<json> lines = serve_lines({request(1, "tools/call", params)});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["method"], "notifications/progress");
  EXPECT_EQ(lines[0]["params"]["progressToken"], "tok");
  EXPECT_EQ(lines[0]["params"]["progress"], 1);
  EXPECT_EQ(lines[1]["params"]["progress"], 2);
  EXPECT_EQ(lines[2]["id"], 1);
}

TEST_F(McpStdioServerTest, AnUnknownToolIsInvalidParams) {
  const json reply = error_for(call(1, "nope").dump());
  EXPECT_EQ(reply["id"], 1);
  EXPECT_EQ(reply["error"]["code"], -32602);
  EXPECT_EQ(reply["error"]["data"]["code"], "tool.not_found");
}

struct BadInput {
  std::string name;
  std::string line;
  int code;
  std::string keel_code;
  json id;
};

TEST_F(McpStdioServerTest, EachKindOfBadInputGetsItsStableError) {
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "[";
  for (int i = 0; i < 200; ++i) deep += "]";
  const std::vector<BadInput> cases = {
      {"not JSON", "hello", -32700, "rpc.parse_error", nullptr},
      {"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xff\"}", -32700, "rpc.parse_error",
       nullptr},
      {"repeated key", R"({"jsonrpc":"2.0","id":1,"id":2,"method":"ping"})", -32700, "rpc.parse_error",
       nullptr},
      {"too deep", deep, -32600, "json.too_deep", nullptr},
      {"a batch", R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", -32600, "rpc.invalid_request", nullptr},
      {"a number", "42", -32600, "rpc.invalid_request", nullptr},
      {"no jsonrpc", R"({"id":1,"method":"ping"})", -32600, "rpc.invalid_request", 1},
      {"jsonrpc 1.0", R"({"jsonrpc":"1.0","id":1,"method":"ping"})", -32600, "rpc.invalid_request", 1},
      {"a null id", R"({"jsonrpc":"2.0","id":null,"method":"ping"})", -32600, "rpc.invalid_request", nullptr},
      {"an object id", R"({"jsonrpc":"2.0","id":{},"method":"ping"})", -32600, "rpc.invalid_request",
       nullptr},
      {"no method", R"({"jsonrpc":"2.0","id":1})", -32600, "rpc.invalid_request", 1},
      {"a numeric method", R"({"jsonrpc":"2.0","id":1,"method":5})", -32600, "rpc.invalid_request", 1},
      {"an unknown method", R"({"jsonrpc":"2.0","id":1,"method":"resources/list"})", -32601,
       "rpc.method_not_found", 1},
      {"array params", R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[]})", -32602,
       "rpc.invalid_params", 1},
      {"call without name", R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})", -32602,
       "rpc.invalid_params", 1},
      {"call with a numeric name", R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":3}})",
       -32602, "rpc.invalid_params", 1},
      {"call with string arguments",
       R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":"x"}})", -32602,
       "rpc.invalid_params", 1},
  };
  for (const BadInput& bad : cases) {
    SCOPED_TRACE(bad.name);
    const json reply = error_for(bad.line);
    EXPECT_EQ(reply["jsonrpc"], "2.0");
    EXPECT_EQ(reply["id"], bad.id);
    EXPECT_EQ(reply["error"]["code"], bad.code);
    EXPECT_EQ(reply["error"]["data"]["code"], bad.keel_code);
    EXPECT_TRUE(reply["error"]["message"].is_string());
  }
}

TEST_F(McpStdioServerTest, ALineOverTheBoundIsSkippedToItsEndAndRefused) {
  options_.max_line_bytes = 1024;
  const std::string huge =
      R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":")" + std::string(5000, 'a') + "\"}}";
  const std::vector<json> lines = serve(huge + "\n" + request(2, "ping").dump() + "\n");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["error"]["code"], -32600);
  EXPECT_EQ(lines[0]["error"]["data"]["code"], "rpc.message_too_large");
  EXPECT_EQ(lines[1]["id"], 2) << "the line after the huge one is read whole";
}

TEST_F(McpStdioServerTest, NotificationsAndStrayResponsesAreNeverAnswered) {
  const std::vector<json> lines = serve_lines(
      {json{{"jsonrpc", "2.0"}, {"method", "notifications/whatever"}},
       json{{"jsonrpc", "2.0"}, {"method", "tools/call"}, {"params", {{"name", "nope"}}}},
       json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 5}}}},
       json{{"jsonrpc", "2.0"}, {"id", 7}, {"result", json::object()}}, request(1, "ping")});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["id"], 1);
}

TEST_F(McpStdioServerTest, EndOfInputInTheMiddleOfALineIsAParseError) {
  const std::vector<json> lines =
      serve(request(1, "ping").dump() + "\n" + R"({"jsonrpc":"2.0","id":2,"meth)");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["id"], 1);
  EXPECT_EQ(lines[1]["error"]["code"], -32700);
  EXPECT_EQ(lines[1]["error"]["data"]["code"], "rpc.parse_error");
}

TEST_F(McpStdioServerTest, AWholeMessageWithoutItsNewlineAtTheEndIsStillAnswered) {
  const std::vector<json> lines = serve(request(1, "ping").dump() + "\r\n" + request(2, "ping").dump());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1]["id"], 2);
}

TEST_F(McpStdioServerTest, CallsRunAtOnceAndAreAnsweredInTheOrderTheyFinish) {
  start();
  send(call(1, "held"));
  send(call(2, "held"));
  ASSERT_TRUE(held_->wait_started(2)) << "both calls run at once";
  send(request(3, "ping"));
  wait_ids({3});      // answered while both calls still run
  held_->release(1);  // the call that started second, whichever id it has
  ASSERT_TRUE(
      capture_.wait_for([](const std::vector<json>& seen) { return tool_answers(seen).size() == 1; }));
  held_->release(0);
  const std::vector<json> lines = wait_ids({1, 2});
  finish();
  // The call answered first is the one released first, whichever id it had.
  const std::vector<json> answers = tool_answers(lines);
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0]["result"]["content"][0]["text"], "released 1");
  EXPECT_EQ(answers[1]["result"]["content"][0]["text"], "released 0");
}

TEST_F(McpStdioServerTest, ACancelledCallIsCancelledAndNeverAnswered) {
  start();
  send(call("c", "held"));
  ASSERT_TRUE(held_->wait_started(1));
  send(json{{"jsonrpc", "2.0"},
            {"method", "notifications/cancelled"},
            {"params", {{"requestId", "c"}, {"reason", "stop"}}}});
  ASSERT_TRUE(held_->wait_cancelled(0)) << "the call's token was cancelled";
  // The id is free again: a new call may use it.
  send(call("c", "echo", {{"text", "again"}}));
  const std::vector<json> lines = wait_ids({"c"});
  finish();
  const std::vector<json> all = output();
  int answers = 0;
  for (const json& line : all) answers += line.contains("id") && line["id"] == "c" ? 1 : 0;
  EXPECT_EQ(answers, 1) << "only the second call with id c is answered";
  ASSERT_NE(find_id(lines, "c"), nullptr);
  EXPECT_EQ((*find_id(lines, "c"))["result"]["content"][0]["text"], "again");
}

TEST_F(McpStdioServerTest, AnIdStillInFlightIsRefused) {
  start();
  send(call(1, "held"));
  ASSERT_TRUE(held_->wait_started(1));
  send(call(1, "echo"));
  const std::vector<json> lines = wait_ids({1});
  ASSERT_NE(find_id(lines, 1), nullptr);
  EXPECT_EQ((*find_id(lines, 1))["error"]["code"], -32600);
  EXPECT_EQ((*find_id(lines, 1))["error"]["data"]["code"], codes::kMcpDuplicateId);
  held_->release(0);
  finish();
}

TEST_F(McpStdioServerTest, CallsOverTheBoundAreRefused) {
  options_.max_calls_in_flight = 1;
  start();
  send(call(1, "held"));
  ASSERT_TRUE(held_->wait_started(1));
  send(call(2, "echo"));
  const std::vector<json> lines = wait_ids({2});
  EXPECT_EQ((*find_id(lines, 2))["error"]["code"], -32000);
  EXPECT_EQ((*find_id(lines, 2))["error"]["data"]["code"], codes::kMcpTooManyCalls);
  held_->release(0);
  finish();
}

TEST_F(McpStdioServerTest, EndOfInputMidCallCancelsItAndAnswersWithACode) {
  options_.eof_grace = std::chrono::milliseconds(0);
  start();
  send(call(1, "held"));
  ASSERT_TRUE(held_->wait_started(1));
  finish();  // closes the input: run() returns only once the call is answered
  const std::vector<json> lines = output();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["id"], 1);
  EXPECT_EQ(lines[0]["error"]["code"], -32000);
  EXPECT_EQ(lines[0]["error"]["data"]["code"], "cancelled");
  EXPECT_TRUE(held_->wait_cancelled(0));
}

TEST_F(McpStdioServerTest, EndOfInputLetsACallFinishWithinTheGrace) {
  start();
  send(call(1, "held"));
  ASSERT_TRUE(held_->wait_started(1));
  feed_.close();  // run() now waits for the call
  held_->release(0);
  thread_.join();
  const std::vector<json> lines = output();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["result"]["content"][0]["text"], "released 0");
}

}  // namespace
}  // namespace keel::mcp
