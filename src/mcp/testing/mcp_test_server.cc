// mcp/testing/mcp_test_server.cc — keel-mcp-test-server: a deliberately misbehaving MCP server over stdio,
// for the client's tests. It speaks both protocol generations (server/discover with per-request _meta, and
// initialize), and each of its tools misbehaves in one way on purpose:
//   echo {text}        answers with the text (and refuses a call that carries no _meta.progressToken)
//   add {a, b}         structuredContent {sum} and the same as text
//   fail               an isError result
//   die                exits (status 3) without answering
//   hang               never answers
//   slow               answers only... never; a notifications/cancelled for it is logged on stderr
//   progress {steps}   `steps` notifications/progress, then the result
//   flood {count}      `count` notifications/message, then the result
//   big {bytes}        a text result of `bytes` bytes
//   stray              a line of plain text on stdout before the result
//   garbage            a line of broken JSON before the result
//   dup                the result twice
//   unknown_id         a response to an id nobody sent, then the result
//   change             notifications/tools/list_changed, then the result
//   ping_client        pings the client and answers once the client answered the ping
//   elicit             sends elicitation/create to the client (which declared no elicitation capability)
//                      and answers with the client's response, as JSON text
//   log {params}       one notifications/message whose params are `params` (any JSON), then the result
// Flags: --mode=both|legacy|modern|silent (legacy answers server/discover with -32601; modern answers
// initialize with -32601; silent never answers server/discover), --initialize-version=V (the version its
// InitializeResult names; default: the one asked for), --tools=N (N more tools t0..), --page-size=N
// (tools/list pages), --garbage-at-start (two non-JSON lines before anything), --stderr-banner (a line on
// stderr at start). A logging/setLevel request is answered and its level written on stderr ("log level
// \"debug\"").
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using nlohmann::json;

constexpr char kModern[] = "2026-07-28";
constexpr char kVersionKey[] = "io.modelcontextprotocol/protocolVersion";

struct Options {
  std::string mode = "both";
  std::string initialize_version;
  int extra_tools = 0;
  int page_size = 0;  // 0: one page
  bool garbage_at_start = false;
  bool stderr_banner = false;
};

class Server {
 public:
  explicit Server(Options options) : options_(std::move(options)) {}

  int run() {
    if (options_.stderr_banner) std::cerr << "keel-mcp-test-server starting" << std::endl;
    if (options_.garbage_at_start) {
      std::cout << "this is not JSON" << '\n' << "{\"broken\": " << std::endl;
    }
    std::string line;
    while (std::getline(std::cin, line)) {
      json message = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!message.is_object()) continue;
      handle(message);
    }
    return 0;
  }

 private:
  static void write(const json& message) {
    std::cout << message.dump() << std::endl;  // one line, flushed: the client reads lines
  }
  static void reply(const json& id, json result) {
    write({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
  }
  static void error(const json& id, int code, const std::string& text) {
    write({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", text}}}});
  }
  static json text_result(const std::string& text, bool is_error = false) {
    json result = {{"content", json::array({{{"type", "text"}, {"text", text}}})}};
    if (is_error) result["isError"] = true;
    return result;
  }

  json tool_list() const {
    json tools = json::array();
    for (const char* name :
         {"echo", "add", "fail", "die", "hang", "slow", "progress", "flood", "big", "stray", "garbage", "dup",
          "unknown_id", "change", "ping_client", "elicit", "log"}) {
      tools.push_back({{"name", name},
                       {"description", std::string("the ") + name + " tool"},
                       {"inputSchema", {{"type", "object"}}}});
    }
    tools[1]["outputSchema"] = {{"type", "object"}, {"properties", {{"sum", {{"type", "number"}}}}}};
    tools[0]["annotations"] = {{"readOnlyHint", true}};
    for (int i = 0; i < options_.extra_tools; ++i)
      tools.push_back({{"name", "t" + std::to_string(i)}, {"inputSchema", {{"type", "object"}}}});
    return tools;
  }

  void handle(const json& message) {
    const bool is_request = message.contains("id") && message.contains("method");
    if (!message.contains("method")) {
      handle_response(message);
      return;
    }
    const std::string method = message["method"].is_string() ? message["method"].get<std::string>() : "";
    const json params = message.value("params", json::object());
    if (!is_request) {
      handle_notification(method, params);
      return;
    }
    const json& id = message["id"];
    if (method == "server/discover") {
      if (options_.mode == "silent") return;
      if (options_.mode == "legacy") return error(id, -32601, "Method not found");
      modern_ = true;
      return reply(id, {{"supportedVersions", json::array({kModern})},
                        {"capabilities", {{"tools", {{"listChanged", true}}}}},
                        {"serverInfo", {{"name", "keel-mcp-test-server"}, {"version", "1.0.0"}}},
                        {"instructions", "a broken server for tests"}});
    }
    if (method == "initialize") {
      if (options_.mode == "modern") return error(id, -32601, "Method not found");
      std::string version = options_.initialize_version;
      if (version.empty()) version = params.value("protocolVersion", "2025-11-25");
      return reply(id, {{"protocolVersion", version},
                        {"capabilities", {{"tools", {{"listChanged", true}}}, {"logging", json::object()}}},
                        {"serverInfo", {{"name", "keel-mcp-test-server"}, {"version", "1.0.0"}}}});
    }
    if (method == "ping") return reply(id, json::object());
    if (modern_) {
      const json meta = params.value("_meta", json::object());
      if (!meta.is_object() || meta.value(kVersionKey, "") != kModern)
        return error(id, -32600, "a 2026-07-28 request must carry its protocol version in _meta");
    } else if (!initialized_) {
      return error(id, -32002, "not initialized");
    }
    if (method == "logging/setLevel") {
      std::cerr << "log level " << params.value("level", json()).dump() << std::endl;
      return reply(id, json::object());
    }
    if (method == "tools/list") return list_tools(id, params);
    if (method == "tools/call") return call_tool(id, params);
    error(id, -32601, "Method not found");
  }

  void handle_notification(const std::string& method, const json& params) {
    if (method == "notifications/initialized") initialized_ = true;
    if (method == "notifications/cancelled") {
      std::cerr << "cancelled " << params.value("requestId", json()).dump() << " reason "
                << params.value("reason", std::string()) << std::endl;
    }
  }

  void handle_response(const json& message) {
    if (message.value("id", json()) == "srv-ping" && awaiting_ping_) {
      reply(*awaiting_ping_, text_result("the client answered ping"));
      awaiting_ping_.reset();
    }
    if (message.value("id", json()) == "srv-elicit" && awaiting_elicit_) {
      reply(*awaiting_elicit_, text_result(message.dump()));
      awaiting_elicit_.reset();
    }
  }

  void list_tools(const json& id, const json& params) {
    const json tools = tool_list();
    size_t start = 0;
    if (params.contains("cursor")) start = std::stoul(params["cursor"].get<std::string>());
    const size_t size = options_.page_size > 0 ? static_cast<size_t>(options_.page_size) : tools.size();
    json page = json::array();
    for (size_t i = start; i < tools.size() && i < start + size; ++i) page.push_back(tools[i]);
    json result = {{"tools", page}};
    if (start + size < tools.size()) result["nextCursor"] = std::to_string(start + size);
    reply(id, result);
  }

  void call_tool(const json& id, const json& params) {
    const std::string name = params.value("name", "");
    const json args = params.value("arguments", json::object());
    const json token = params.value("_meta", json::object()).value("progressToken", json());
    if (name == "echo") {
      if (token.is_null()) return reply(id, text_result("tools/call without a progressToken", true));
      return reply(id, text_result(args.value("text", "")));
    }
    if (name == "add") {
      const double sum = args.value("a", 0.0) + args.value("b", 0.0);
      json result = text_result(json{{"sum", sum}}.dump());
      result["structuredContent"] = {{"sum", sum}};
      return reply(id, result);
    }
    if (name == "fail") return reply(id, text_result("the tool failed", true));
    if (name == "die") std::exit(3);
    if (name == "hang" || name == "slow") return;
    if (name == "progress") {
      const int steps = args.value("steps", 3);
      for (int i = 1; i <= steps; ++i)
        write(
            {{"jsonrpc", "2.0"},
             {"method", "notifications/progress"},
             {"params", {{"progressToken", token}, {"progress", i}, {"total", steps}, {"message", "step"}}}});
      return reply(id, text_result("done after " + std::to_string(steps) + " steps"));
    }
    if (name == "flood") {
      const int count = args.value("count", 1000);
      for (int i = 0; i < count; ++i)
        write({{"jsonrpc", "2.0"},
               {"method", "notifications/message"},
               {"params", {{"level", "info"}, {"logger", "flood"}, {"data", i}}}});
      return reply(id, text_result("flooded"));
    }
    if (name == "big") return reply(id, text_result(std::string(args.value("bytes", size_t{1000}), 'x')));
    if (name == "stray") {
      std::cout << "Server listening... (a log line on the wrong stream)" << std::endl;
      return reply(id, text_result("after stray"));
    }
    if (name == "garbage") {
      std::cout << "{\"jsonrpc\": \"2.0\", \"id\": " << std::endl;
      return reply(id, text_result("after garbage"));
    }
    if (name == "dup") {
      reply(id, text_result("first"));
      return reply(id, text_result("second"));
    }
    if (name == "unknown_id") {
      reply(json(987654), text_result("nobody asked"));
      return reply(id, text_result("after unknown id"));
    }
    if (name == "change") {
      write({{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}});
      return reply(id, text_result("changed"));
    }
    if (name == "ping_client") {
      awaiting_ping_ = id;
      return write({{"jsonrpc", "2.0"}, {"id", "srv-ping"}, {"method", "ping"}});
    }
    if (name == "elicit") {
      awaiting_elicit_ = id;
      const json schema = {{"type", "object"}, {"properties", {{"name", {{"type", "string"}}}}}};
      const json request = {{"message", "Your name?"}, {"requestedSchema", schema}};
      return write(
          {{"jsonrpc", "2.0"}, {"id", "srv-elicit"}, {"method", "elicitation/create"}, {"params", request}});
    }
    if (name == "log") {
      write({{"jsonrpc", "2.0"},
             {"method", "notifications/message"},
             {"params", args.value("params", json())}});
      return reply(id, text_result("logged"));
    }
    reply(id, text_result("unknown tool " + name, true));
  }

  const Options options_;
  bool modern_ = false;
  bool initialized_ = false;
  std::optional<json> awaiting_ping_;
  std::optional<json> awaiting_elicit_;
};

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    const auto value = [&](std::string_view flag) { return std::string(arg.substr(flag.size())); };
    if (arg.starts_with("--mode=")) {
      options.mode = value("--mode=");
    } else if (arg.starts_with("--initialize-version=")) {
      options.initialize_version = value("--initialize-version=");
    } else if (arg.starts_with("--tools=")) {
      options.extra_tools = std::atoi(value("--tools=").c_str());
    } else if (arg.starts_with("--page-size=")) {
      options.page_size = std::atoi(value("--page-size=").c_str());
    } else if (arg == "--garbage-at-start") {
      options.garbage_at_start = true;
    } else if (arg == "--stderr-banner") {
      options.stderr_banner = true;
    } else {
      std::cerr << "keel-mcp-test-server: unknown flag " << arg << std::endl;
      return 2;
    }
  }
  return Server(std::move(options)).run();
}
