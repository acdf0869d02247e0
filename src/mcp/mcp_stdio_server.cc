// mcp/mcp_stdio_server.cc — see mcp_stdio_server.h.
#include "mcp/mcp_stdio_server.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <istream>
#include <map>
#include <ostream>
#include <streambuf>
#include <thread>
#include <utility>
#include <vector>

#include "keel/error_codes.h"
#include "mcp/mcp_errors.h"
#include "tools/tool_errors.h"
#include "transport/transport_errors.h"
#include "util/canonical_json.h"
#include "util/thread_annotations.h"

namespace keel::mcp {

using nlohmann::json;

namespace {

// JSON-RPC 2.0 error codes; -32000 is the server-defined range's first, for refusals of our own.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kServerError = -32000;

json error_response(const json& id, int code, const std::string& message, const std::string& keel_code) {
  return json{{"jsonrpc", "2.0"},
              {"id", id},
              {"error", json{{"code", code}, {"message", message}, {"data", json{{"code", keel_code}}}}}};
}

json result_response(const json& id, json result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

// MCP request ids are strings or numbers, never null.
bool valid_id(const json& id) { return id.is_string() || id.is_number(); }

// The same id spelled the same way: 1 and "1" are different requests.
std::string id_key(const json& id) { return id.dump(); }

enum class LineStatus { kLine, kTooLong, kEnd };

// Reads one line (without its '\n') into `line`, keeping at most `max_bytes` of it in memory: a longer line
// is read to its end and dropped (kTooLong). At the end of input a partial line is returned as a line.
LineStatus read_line(std::streambuf& input, size_t max_bytes, std::string& line) {
  line.clear();
  bool too_long = false;
  for (;;) {
    const int c = input.sbumpc();
    if (c == std::char_traits<char>::eof()) {
      if (too_long) return LineStatus::kTooLong;
      return line.empty() ? LineStatus::kEnd : LineStatus::kLine;
    }
    if (c == '\n') return too_long ? LineStatus::kTooLong : LineStatus::kLine;
    if (too_long) continue;
    if (line.size() >= max_bytes) {
      too_long = true;
      std::string().swap(line);
      continue;
    }
    line.push_back(static_cast<char>(c));
  }
}

bool blank(const std::string& text) { return text.find_first_not_of(" \t\r") == std::string::npos; }

}  // namespace

std::string negotiate_protocol_version(const std::string& requested) {
  for (const char* known : {"2025-11-25", "2025-06-18", "2025-03-26"}) {
    if (requested == known) return requested;
  }
  return kLatestProtocolVersion;
}

// What the reader, the workers and the tools' callbacks share. Callbacks hold it by shared_ptr, so a tool
// that reports after run() returned finds it alive, with no output to write to.
struct McpStdioServer::Session {
  struct Call {
    json id;
    std::string tool_call_id;
    CancellationSource source;
    json progress_token;   // null: the client asked for no progress
    int64_t progress = 0;  // under Session::mu (a mutex of another object: not annotated)
  };

  Mutex mu;
  std::condition_variable changed;  // a call ended, a job was queued, or the workers must stop
  std::ostream* out GUARDED_BY(mu) = nullptr;
  std::map<std::string, std::shared_ptr<Call>> calls GUARDED_BY(mu);  // in flight, by id_key
  std::deque<std::function<void()>> jobs GUARDED_BY(mu);
  bool stopping GUARDED_BY(mu) = false;
  uint64_t next_call GUARDED_BY(mu) = 1;
  std::function<void(const std::string&)> log;

  void write(const json& message) REQUIRES(mu) {
    if (out == nullptr) return;
    // Tool output may hold invalid UTF-8 (a file's bytes); it is replaced rather than failing the answer.
    *out << message.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    out->flush();
  }

  void send(const json& message) EXCLUDES(mu) {
    MutexLock lock(mu);
    write(message);
  }

  void note(const std::string& line) const {
    if (log) log(line);
  }

  // Answers `call` with `response`, unless it was already answered or cancelled by the client (it is no
  // longer the call in flight under its id).
  void finish(const std::shared_ptr<Call>& call, const json& response) EXCLUDES(mu) {
    MutexLock lock(mu);
    auto found = calls.find(id_key(call->id));
    if (found == calls.end() || found->second != call) return;
    calls.erase(found);
    write(response);
    changed.notify_all();
  }

  void report_progress(const std::shared_ptr<Call>& call, const ToolProgress& progress) EXCLUDES(mu) {
    if (call->progress_token.is_null()) return;
    MutexLock lock(mu);
    auto found = calls.find(id_key(call->id));
    if (found == calls.end() || found->second != call) return;
    json params = {{"progressToken", call->progress_token}, {"progress", ++call->progress}};
    if (!progress.text.empty()) params["message"] = progress.text;
    write(json{{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", std::move(params)}});
  }

  void work() EXCLUDES(mu) {
    for (;;) {
      std::function<void()> job;
      {
        MutexLock lock(mu);
        while (jobs.empty() && !stopping) lock.wait(changed);
        if (jobs.empty()) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      job();
    }
  }
};

McpStdioServer::McpStdioServer(const ToolBridge& bridge, McpServerOptions options)
    : bridge_(bridge), options_(std::move(options)), session_(std::make_shared<Session>()) {
  session_->log = options_.log;
}

McpStdioServer::~McpStdioServer() = default;

namespace {

// One parsed line's request or notification, checked against JSON-RPC 2.0.
struct Message {
  bool has_id = false;
  json id;  // valid when has_id
  std::string method;
  json params = json::object();
};

}  // namespace

void McpStdioServer::run(std::istream& in, std::ostream& out) {
  Session& session = *session_;
  {
    MutexLock lock(session.mu);
    session.out = &out;
  }
  std::vector<std::thread> workers;
  const size_t worker_count = options_.worker_threads == 0 ? 1 : options_.worker_threads;
  for (size_t i = 0; i < worker_count; ++i) workers.emplace_back([session = session_] { session->work(); });

  const json tools = bridge_.list_tools();

  // Answers one tools/call request: checks its params here, runs it on a worker.
  auto start_call = [&](const json& id, const json& params) {
    if (!params.contains("name") || !params["name"].is_string()) {
      session.send(error_response(id, kInvalidParams, "tools/call needs params.name, a string",
                                  codes::kRpcInvalidParams));
      return;
    }
    const std::string name = params["name"].get<std::string>();
    json arguments = params.value("arguments", json::object());
    if (arguments.is_null()) arguments = json::object();
    if (!arguments.is_object()) {
      session.send(error_response(id, kInvalidParams, "tools/call params.arguments must be an object",
                                  codes::kRpcInvalidParams));
      return;
    }
    if (!bridge_.has_tool(name)) {
      session.send(error_response(id, kInvalidParams, "Unknown tool: " + name, codes::kToolNotFound));
      return;
    }
    auto call = std::make_shared<Session::Call>();
    call->id = id;
    if (params.contains("_meta") && params["_meta"].is_object()) {
      const json& token = params["_meta"].value("progressToken", json());
      if (token.is_string() || token.is_number()) call->progress_token = token;
    }
    MutexLock lock(session.mu);
    if (session.calls.contains(id_key(id))) {
      session.write(error_response(id, kInvalidRequest, "a call with this id is still in flight",
                                   codes::kMcpDuplicateId));
      return;
    }
    if (session.calls.size() >= options_.max_calls_in_flight) {
      session.write(error_response(
          id, kServerError,
          "too many tool calls in flight (at most " + std::to_string(options_.max_calls_in_flight) + ")",
          codes::kMcpTooManyCalls));
      return;
    }
    call->tool_call_id = "mcp-call-" + std::to_string(session.next_call++);
    session.calls.emplace(id_key(id), call);
    session.jobs.push_back([session = session_, bridge = &bridge_, call, name, arguments]() mutable {
      try {
        bridge->call(
            name, std::move(arguments), call->tool_call_id, call->source.token(),
            [session, call](ToolProgress progress) { session->report_progress(call, progress); },
            [session, call](CallOutcome outcome) {
              session->finish(call, result_response(call->id, std::move(outcome.result)));
            });
      } catch (const std::exception& e) {
        session->finish(
            call, error_response(call->id, kInternalError,
                                 std::string("keel failed on the call: ") + e.what(), codes::kInternal));
      }
    });
    session.changed.notify_all();
  };

  auto handle_request = [&](const Message& message) {
    const json& id = message.id;
    const json& params = message.params;
    if (message.method == "initialize") {
      if (!params.contains("protocolVersion") || !params["protocolVersion"].is_string()) {
        session.send(error_response(id, kInvalidParams, "initialize needs params.protocolVersion, a string",
                                    codes::kRpcInvalidParams));
        return;
      }
      json result = {
          {"protocolVersion", negotiate_protocol_version(params["protocolVersion"].get<std::string>())},
          {"capabilities", json{{"tools", json{{"listChanged", false}}}}},
          {"serverInfo", json{{"name", options_.server_name},
                              {"title", options_.server_name},
                              {"version", options_.server_version}}}};
      if (!options_.instructions.empty()) result["instructions"] = options_.instructions;
      session.send(result_response(id, std::move(result)));
    } else if (message.method == "ping") {
      session.send(result_response(id, json::object()));
    } else if (message.method == "tools/list") {
      if (params.contains("cursor") && !params["cursor"].is_null()) {
        session.send(error_response(id, kInvalidParams,
                                    "unknown cursor: tools/list returns every tool at once",
                                    codes::kRpcInvalidParams));
        return;
      }
      session.send(result_response(id, json{{"tools", tools}}));
    } else if (message.method == "tools/call") {
      start_call(id, params);
    } else {
      session.send(error_response(id, kMethodNotFound, "Method not found: " + message.method,
                                  codes::kRpcMethodNotFound));
    }
  };

  auto handle_notification = [&](const Message& message) {
    if (message.method != "notifications/cancelled") return;  // initialized and the rest need nothing
    const json& request_id = message.params.value("requestId", json());
    if (!valid_id(request_id)) return;  // a malformed cancellation is ignored, as the spec says
    std::shared_ptr<Session::Call> call;
    {
      MutexLock lock(session.mu);
      auto found = session.calls.find(id_key(request_id));
      if (found == session.calls.end()) return;  // finished already, or never known
      call = found->second;
      session.calls.erase(found);  // never answered now; the id is free again
      session.changed.notify_all();
    }
    // Outside the lock: the token's callbacks may finish the call at once, which takes the lock.
    const std::string reason = message.params.value("reason", json()).is_string()
                                   ? message.params["reason"].get<std::string>()
                                   : std::string("cancelled by the client");
    call->source.cancel(reason);
    session.note("mcp: call " + id_key(request_id) + " cancelled by the client");
  };

  auto handle_line = [&](std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (blank(line)) return;
    auto parsed = parse_json(line);
    if (!parsed) {
      if (parsed.error().code() == codes::kJsonTooDeep) {
        session.send(error_response(nullptr, kInvalidRequest, parsed.error().message(), codes::kJsonTooDeep));
      } else {
        session.send(error_response(nullptr, kParseError, "Parse error: " + parsed.error().message(),
                                    codes::kRpcParseError));
      }
      return;
    }
    const json& value = *parsed;
    if (!value.is_object()) {
      session.send(error_response(nullptr, kInvalidRequest,
                                  value.is_array() ? "batches are not supported (MCP 2025-06-18 and later)"
                                                   : "a JSON-RPC message is an object",
                                  codes::kRpcInvalidRequest));
      return;
    }
    Message message;
    message.has_id = value.contains("id");
    if (message.has_id) {
      if (!valid_id(value["id"])) {
        session.send(error_response(nullptr, kInvalidRequest, "id must be a string or a number",
                                    codes::kRpcInvalidRequest));
        return;
      }
      message.id = value["id"];
    }
    const json reply_id = message.has_id ? message.id : json();
    if (value.value("jsonrpc", json()) != "2.0") {
      session.send(
          error_response(reply_id, kInvalidRequest, "jsonrpc must be \"2.0\"", codes::kRpcInvalidRequest));
      return;
    }
    if (!value.contains("method")) {
      if (message.has_id && (value.contains("result") || value.contains("error"))) {
        session.note("mcp: a response to no request of ours was ignored");
        return;
      }
      session.send(
          error_response(reply_id, kInvalidRequest, "a request needs a method", codes::kRpcInvalidRequest));
      return;
    }
    if (!value["method"].is_string()) {
      session.send(
          error_response(reply_id, kInvalidRequest, "method must be a string", codes::kRpcInvalidRequest));
      return;
    }
    message.method = value["method"].get<std::string>();
    if (value.contains("params") && !value["params"].is_null()) {
      if (!value["params"].is_object()) {
        if (message.has_id) {
          session.send(
              error_response(reply_id, kInvalidParams, "params must be an object", codes::kRpcInvalidParams));
        }
        return;
      }
      message.params = value["params"];
    }
    if (message.has_id) {
      handle_request(message);
    } else {
      handle_notification(message);
    }
  };

  std::streambuf* input = in.rdbuf();
  std::string line;
  for (LineStatus status = LineStatus::kLine; input != nullptr && status != LineStatus::kEnd;) {
    status = read_line(*input, options_.max_line_bytes, line);
    if (status == LineStatus::kTooLong) {
      session.send(error_response(
          nullptr, kInvalidRequest,
          "the message is longer than " + std::to_string(options_.max_line_bytes) + " bytes; it was skipped",
          codes::kRpcMessageTooLarge));
    } else if (status == LineStatus::kLine) {
      try {
        handle_line(std::move(line));
      } catch (const std::exception& e) {
        // A bug of ours on this message; the next message is served as usual.
        session.send(error_response(nullptr, kInternalError,
                                    std::string("keel failed on the message: ") + e.what(),
                                    codes::kInternal));
      }
    }
  }

  // The input ended: the calls read before may finish within the grace; the rest are cancelled and answered.
  std::vector<std::shared_ptr<Session::Call>> unfinished;
  {
    MutexLock lock(session.mu);
    const auto due = std::chrono::steady_clock::now() + options_.eof_grace;
    while (!session.calls.empty() && std::chrono::steady_clock::now() < due) {
      lock.wait_until(session.changed, due);
    }
    for (auto& [key, call] : session.calls) {
      session.write(error_response(call->id, kServerError,
                                   "the client closed its input before the call finished; it was cancelled",
                                   codes::kCancelled));
      unfinished.push_back(call);
    }
    session.calls.clear();
    session.jobs.clear();
    session.stopping = true;
    session.changed.notify_all();
  }
  for (const auto& call : unfinished) call->source.cancel("the client closed its input");
  for (std::thread& worker : workers) worker.join();
  MutexLock lock(session.mu);
  session.out = nullptr;
}

}  // namespace keel::mcp
