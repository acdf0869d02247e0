// mcp/client/http_transport.cc — Streamable HTTP: one Exchange per outbound message (its POST and any GET
// resumptions), one StreamHandler per HTTP transfer, and the Shared state both see (session id, revision,
// handlers, the exchanges in flight, the resumption timer).
#include "mcp/client/http_transport.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "keel/cancellation.h"
#include "keel/error_codes.h"
#include "mcp/client/http_errors.h"
#include "mcp/mcp_errors.h"
#include "providers/http/http_errors.h"
#include "providers/provider_errors.h"
#include "providers/sse/sse_parser.h"
#include "util/thread_annotations.h"

namespace keel::mcp {
namespace {

using nlohmann::json;
using providers::HttpHeader;
using providers::HttpRequest;
using providers::SseEvent;
using providers::SseParser;

constexpr char kMetaProtocolVersion[] = "io.modelcontextprotocol/protocolVersion";
constexpr char kFirstStatelessRevision[] = "2026-07-28";
constexpr int kTransportErrorCode = -32000;  // JSON-RPC "server error" range: the exchange failed

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// The media type of a Content-Type value, lower case, without parameters.
std::string media_type(std::string_view value) {
  std::string type = lower(value.substr(0, value.find(';')));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.erase(type.begin());
  return type;
}

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n = (uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                       uint32_t{static_cast<unsigned char>(bytes[i + 2])};
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i < bytes.size()) {
    uint32_t n = uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
    if (i + 1 < bytes.size()) n |= uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// A session id is visible ASCII only (the specification's rule); anything else could smuggle header lines.
bool valid_session_id(std::string_view id) {
  return !id.empty() && id.size() <= 1024 &&
         std::all_of(id.begin(), id.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

// An HTTP token (RFC 9110 tchar): what a header name may hold.
bool valid_header_token(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

constexpr size_t kMaxToolsWithParamHeaders = 10'000;

// A short, printable excerpt of a body for an error message.
std::string excerpt(std::string_view body) {
  std::string out;
  for (const char c : body.substr(0, 200)) out += (c >= 0x20 && c <= 0x7e) ? c : ' ';
  return out;
}

bool is_response(const json& message) {
  return message.is_object() && message.contains("id") &&
         (message.contains("result") || message.contains("error"));
}

// The transport's part of a failed exchange, in the error's message: "mcp.http_status: ...".
json local_error_response(const json& id, const Error& error) {
  return json{{"jsonrpc", "2.0"},
              {"id", id},
              {"error",
               {{"code", kTransportErrorCode},
                {"message", error.to_string()},
                {"data", {{"keel/code", error.code()}}}}}};
}

class Exchange;

// What the transport and its exchanges share. Outlives the transport while a transfer still runs.
class Shared : public std::enable_shared_from_this<Shared> {
 public:
  Shared(HttpTransportOptions options, providers::HttpClient* client)
      : options_(std::move(options)), client_(client) {}
  ~Shared() { stop_timer(); }

  const HttpTransportOptions& options() const { return options_; }
  providers::HttpClient& client() const { return *client_; }

  void set_handlers(McpTransport::Handlers handlers) {
    MutexLock lock(mu_);
    handlers_ = std::move(handlers);
    started_ = true;
  }
  bool started() const {
    MutexLock lock(mu_);
    return started_;
  }
  bool ended() const {
    MutexLock lock(mu_);
    return ended_;
  }

  // --- Delivery to the handlers: never after the channel ended, one call at a time (the client's worker).
  // ---
  void deliver_message(json message) {
    if (!enter()) return;
    handlers_.on_message(std::move(message));
    leave();
  }
  void deliver_problem(const Error& problem) {
    if (!enter()) return;
    if (handlers_.on_problem) handlers_.on_problem(problem, /*is_log=*/false);
    leave();
  }
  // Ends the channel (no message follows), cancels every exchange, then tells on_closed.
  void end(const Error& reason) {
    {
      MutexLock lock(mu_);
      if (ended_) return;
      ended_ = true;
      ++delivering_;
      delivering_thread_ = std::this_thread::get_id();
    }
    cancel_all(reason.message());
    if (handlers_.on_closed) handlers_.on_closed(reason);
    leave();
  }

  // --- Session id and revision. ---
  void set_session_id(std::string id) {
    MutexLock lock(mu_);
    session_id_ = std::move(id);
  }
  std::string session_id() const {
    MutexLock lock(mu_);
    return session_id_;
  }
  void set_protocol_version(std::string version) {
    MutexLock lock(mu_);
    protocol_version_ = std::move(version);
  }
  std::string protocol_version() const {
    MutexLock lock(mu_);
    return protocol_version_;
  }

  // The headers every request carries (session, revision unless `version` overrides it, credentials).
  Result<std::vector<HttpHeader>> common_headers(const std::string& version_override) const {
    std::vector<HttpHeader> headers;
    const std::string session = session_id();
    if (!session.empty()) headers.push_back({"Mcp-Session-Id", session});
    const std::string version = version_override.empty() ? protocol_version() : version_override;
    if (!version.empty()) headers.push_back({"MCP-Protocol-Version", version});
    if (options_.auth) {
      Result<std::string> token = options_.auth->token();
      if (!token) return fail(token.error().with_context("getting the MCP server's bearer token"));
      if (!token->empty()) headers.push_back({"Authorization", "Bearer " + *token});
    } else if (options_.bearer_token) {
      Result<std::string> token = options_.bearer_token();
      if (!token) return fail(token.error().with_context("getting the MCP server's bearer token"));
      headers.push_back({"Authorization", "Bearer " + *token});
    }
    return headers;
  }

  // --- x-mcp-header declarations (2026-07-28), learnt from the tools/list answers that pass through. ---
  void learn_param_headers(const json& result) {
    const auto tools = result.find("tools");
    if (!result.is_object() || tools == result.end() || !tools->is_array()) return;
    MutexLock lock(mu_);
    for (const json& tool : *tools) {
      if (!tool.is_object() || !tool.contains("name") || !tool["name"].is_string()) continue;
      std::vector<std::pair<std::string, std::string>> declared;
      const json schema = tool.value("inputSchema", json::object());
      const json properties = schema.is_object() ? schema.value("properties", json::object()) : json();
      if (properties.is_object()) {
        for (const auto& [property, definition] : properties.items()) {
          if (!definition.is_object()) continue;
          const auto header = definition.find("x-mcp-header");
          if (header == definition.end() || !header->is_string() ||
              !valid_header_token(header->get<std::string>()))
            continue;
          declared.emplace_back(property, header->get<std::string>());
        }
      }
      if (declared.empty()) {
        param_headers_.erase(tool["name"].get<std::string>());
      } else if (param_headers_.size() < kMaxToolsWithParamHeaders) {
        param_headers_[tool["name"].get<std::string>()] = std::move(declared);
      }
    }
  }
  // Mcp-Param-<Name> headers for a tools/call: each declared argument that is a string, number or boolean.
  std::vector<HttpHeader> param_headers(const json& params) const {
    std::vector<HttpHeader> headers;
    if (!params.is_object() || !params.contains("name") || !params["name"].is_string()) return headers;
    const json arguments = params.value("arguments", json::object());
    if (!arguments.is_object()) return headers;
    MutexLock lock(mu_);
    const auto tool = param_headers_.find(params["name"].get<std::string>());
    if (tool == param_headers_.end()) return headers;
    for (const auto& [property, name] : tool->second) {
      const auto value = arguments.find(property);
      if (value == arguments.end()) continue;
      std::string text;
      if (value->is_string())
        text = encode_header_value(value->get<std::string>());
      else if (value->is_boolean())
        text = value->get<bool>() ? "true" : "false";
      else if (value->is_number())
        text = value->dump();
      else
        continue;  // null, arrays and objects are not mirrored
      headers.push_back({"Mcp-Param-" + name, text});
    }
    return headers;
  }

  // --- Exchanges in flight. ---
  Result<uint64_t> admit(std::shared_ptr<CancellationSource> cancel) {
    MutexLock lock(mu_);
    if (ended_) return fail(codes::kMcpTransportClosed, "the MCP HTTP transport is closed");
    if (exchanges_.size() >= options_.max_concurrent_requests) {
      return fail(codes::kMcpHttpBusy,
                  "more than " + std::to_string(options_.max_concurrent_requests) + " requests in flight",
                  /*retryable=*/true);
    }
    const uint64_t number = next_exchange_++;
    exchanges_.emplace(number, std::move(cancel));
    return number;
  }
  void retire(uint64_t number) {
    MutexLock lock(mu_);
    exchanges_.erase(number);
  }
  size_t in_flight() const {
    MutexLock lock(mu_);
    return exchanges_.size();
  }

  // Runs `task` on the timer thread after `delay` (dropped when the transport closes first).
  void schedule(std::chrono::milliseconds delay, std::function<void()> task) {
    MutexLock lock(timer_mu_);
    if (timer_stopped_) return;
    timer_queue_.emplace(std::chrono::steady_clock::now() + delay, std::move(task));
    if (!timer_.joinable()) {
      timer_ = std::thread([this] { timer_loop(); });
    }
    timer_wake_.notify_all();
  }

  // close(): ends deliveries, and returns the session id to DELETE ("" when none or expired) and whether the
  // calling thread is inside a handler.
  std::pair<std::string, bool> begin_close() {
    MutexLock lock(mu_);
    const bool expired = ended_;
    ended_ = true;
    const bool in_handler = delivering_ > 0 && delivering_thread_ == std::this_thread::get_id();
    return {expired ? std::string() : session_id_, in_handler};
  }
  void cancel_all(const std::string& reason) {
    std::vector<std::shared_ptr<CancellationSource>> sources;
    {
      MutexLock lock(mu_);
      for (const auto& [number, source] : exchanges_) sources.push_back(source);
    }
    for (const auto& source : sources) source->cancel(reason);
  }
  void wait_idle() {
    MutexLock lock(mu_);
    while (delivering_ > 0) lock.wait(idle_);
  }
  void stop_timer() {
    std::thread timer;
    {
      MutexLock lock(timer_mu_);
      timer_stopped_ = true;
      timer_queue_.clear();
      timer_wake_.notify_all();
      timer.swap(timer_);
    }
    if (timer.joinable() && timer.get_id() != std::this_thread::get_id()) timer.join();
    if (timer.joinable()) timer.detach();  // only reachable from the timer's own task; it ends right after
  }

 private:
  bool enter() {
    MutexLock lock(mu_);
    if (ended_ || !started_) return false;
    ++delivering_;
    delivering_thread_ = std::this_thread::get_id();
    return true;
  }
  void leave() {
    MutexLock lock(mu_);
    if (--delivering_ == 0) delivering_thread_ = {};
    idle_.notify_all();
  }
  void timer_loop() {
    MutexLock lock(timer_mu_);
    while (!timer_stopped_) {
      if (timer_queue_.empty()) {
        lock.wait(timer_wake_);
        continue;
      }
      const auto due = timer_queue_.begin()->first;
      if (std::chrono::steady_clock::now() < due) {
        (void)lock.wait_until(timer_wake_, due);  // woken early or not, the loop looks again
        continue;
      }
      std::function<void()> task = std::move(timer_queue_.begin()->second);
      timer_queue_.erase(timer_queue_.begin());
      lock.unlock();
      task();
      lock.lock();
    }
  }

  const HttpTransportOptions options_;
  providers::HttpClient* const client_;  // owned by the transport, which outlives every use of it

  mutable Mutex mu_;
  std::condition_variable idle_;
  McpTransport::Handlers handlers_;  // set once by start(), before any delivery
  bool started_ GUARDED_BY(mu_) = false;
  bool ended_ GUARDED_BY(mu_) = false;
  int delivering_ GUARDED_BY(mu_) = 0;
  std::thread::id delivering_thread_ GUARDED_BY(mu_);
  std::string session_id_ GUARDED_BY(mu_);
  std::string protocol_version_ GUARDED_BY(mu_);
  uint64_t next_exchange_ GUARDED_BY(mu_) = 1;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> param_headers_ GUARDED_BY(mu_);
  std::map<uint64_t, std::shared_ptr<CancellationSource>> exchanges_ GUARDED_BY(mu_);

  Mutex timer_mu_;
  std::condition_variable timer_wake_;
  bool timer_stopped_ GUARDED_BY(timer_mu_) = false;
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> timer_queue_
      GUARDED_BY(timer_mu_);
  std::thread timer_;
};

// One outbound message: its POST, and the GETs that resume its answer's stream. Every member below the
// constants is touched only on the client's worker thread (handlers) or by the timer task that starts a
// resumption, which the worker hands over through Shared::schedule (a happens-before edge).
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<Shared> shared, json message, std::string body, std::vector<HttpHeader> headers)
      : shared_(std::move(shared)), body_(std::move(body)), post_headers_(std::move(headers)) {
    if (message.is_object()) {
      if (const auto method = message.find("method"); method != message.end() && method->is_string())
        method_ = method->get<std::string>();
      if (const auto id = message.find("id"); id != message.end() && !method_.empty()) id_ = *id;
    }
    had_session_ = std::any_of(post_headers_.begin(), post_headers_.end(),
                               [](const HttpHeader& h) { return h.name == "Mcp-Session-Id"; });
  }

  std::shared_ptr<CancellationSource> cancel_source() const { return cancel_; }
  void set_number(uint64_t number) { number_ = number; }
  // The standalone GET stream (no POST): its messages are the server's unasked ones; an end reconnects.
  void make_standalone() { standalone_ = true; }
  bool is_standalone() const { return standalone_; }
  bool is_request() const { return id_.has_value(); }
  // An answer to this POST whose id is null (a server that could not read the request's id, as in a 400
  // to a request it rejects) is this request's answer: the id is put back so the caller can match it.
  json adopt(json message) const {
    if (id_ && is_response(message) && message["id"].is_null()) message["id"] = *id_;
    return message;
  }
  bool is_initialize() const { return method_ == "initialize"; }
  bool had_session() const { return had_session_; }
  bool answered() const { return answered_; }
  Shared& shared() const { return *shared_; }
  // Whether a refusal of this POST (401, 403) may be answered by renewing the credentials once.
  bool may_reauthorize() const { return shared_->options().auth != nullptr && !reauthorized_; }

  // The POST was refused with `status` and `challenge` (its WWW-Authenticate): off the client's worker (the
  // sign-in may block, and may use an HTTP client of its own), ask the auth layer for new credentials, then
  // send the POST again with them, once.
  void reauthorize(int status, std::string challenge) {
    reauthorized_ = true;
    shared_->schedule(std::chrono::milliseconds(0),
                      [self = shared_from_this(), status, challenge = std::move(challenge)] {
                        self->retry_with_new_credentials(status, challenge);
                      });
  }

  void start_post();
  void start_get();
  void retry_with_new_credentials(int status, const std::string& challenge);

  // A message from the server, from either transfer.
  void received(json message) {
    if (standalone_) resumptions_ = 0;  // the stream works: count reconnects afresh
    if (id_ && is_response(message) && message["id"] == *id_) {
      answered_ = true;
      if (method_ == "tools/list" && message.contains("result"))
        shared_->learn_param_headers(message["result"]);
    }
    shared_->deliver_message(std::move(message));
    if (answered_)
      cancel_->cancel("answered");  // a stream kept open after the answer has nothing more for us
  }
  void note_stream_position(const std::string& last_event_id, std::optional<int64_t> retry_ms) {
    if (!last_event_id.empty()) last_event_id_ = last_event_id;
    if (retry_ms) retry_ms_ = *retry_ms;
  }

  // The stream of the answer ended before the answer: resume it, or give up with `why`.
  void stream_ended(const std::string& why) {
    if (standalone_) return reconnect(why);
    if (!is_request() || answered_) return finish();
    if (shared_->ended()) return finish();
    if (last_event_id_.empty()) {
      return fail(Error(codes::kMcpHttpStreamEnded,
                        method_ + ": " + why + ", and the server gave no event id to resume it from", true));
    }
    if (resumptions_ >= shared_->options().max_resumptions) {
      return fail(Error(codes::kMcpHttpStreamEnded,
                        method_ + ": " + why + " (resumed " + std::to_string(resumptions_) + " times)",
                        true));
    }
    ++resumptions_;
    std::chrono::milliseconds delay = shared_->options().default_retry;
    if (retry_ms_) delay = std::chrono::milliseconds(*retry_ms_);
    delay = std::clamp(delay, std::chrono::milliseconds(0), shared_->options().max_retry);
    shared_->schedule(delay, [self = shared_from_this()] { self->start_get(); });
  }

  // The standalone stream ended: open it again after the retry delay (resuming after its last event id),
  // at most options.max_resumptions times in a row without a message in between.
  void reconnect(const std::string& why) {
    if (shared_->ended()) return finish();
    if (resumptions_ >= shared_->options().max_resumptions) {
      return fail(Error(codes::kMcpHttpStreamEnded,
                        "the server's stream for unasked messages: " + why + " (reopened " +
                            std::to_string(resumptions_) + " times in a row)",
                        true));
    }
    ++resumptions_;
    std::chrono::milliseconds delay = shared_->options().default_retry;
    if (retry_ms_) delay = std::chrono::milliseconds(*retry_ms_);
    delay = std::clamp(delay, std::chrono::milliseconds(0), shared_->options().max_retry);
    shared_->schedule(delay, [self = shared_from_this()] { self->start_get(); });
  }

  // The exchange failed: tell on_problem, and answer a request locally so its caller stops waiting.
  void fail(const Error& error) {
    shared_->deliver_problem(error);
    if (id_ && !answered_) {
      answered_ = true;
      shared_->deliver_message(local_error_response(*id_, error));
    }
    finish();
  }
  void finish() {
    if (finished_) return;
    finished_ = true;
    shared_->retire(number_);
  }

 private:
  const std::shared_ptr<Shared> shared_;
  const std::shared_ptr<CancellationSource> cancel_ = std::make_shared<CancellationSource>();
  const std::string body_;
  std::vector<HttpHeader> post_headers_;  // Authorization replaced by a renewal
  std::string method_;
  std::optional<json> id_;
  bool had_session_ = false;
  uint64_t number_ = 0;

  bool standalone_ = false;
  bool answered_ = false;
  bool finished_ = false;
  bool reauthorized_ = false;
  int resumptions_ = 0;
  std::string last_event_id_;
  std::optional<int64_t> retry_ms_;
};

// One HTTP transfer of an exchange (its POST, or one GET resumption).
class StreamHandler final : public providers::HttpStreamHandler {
 public:
  StreamHandler(std::shared_ptr<Exchange> exchange, bool is_post)
      : exchange_(std::move(exchange)),
        is_post_(is_post),
        parser_(providers::SseParserOptions{exchange_->shared().options().max_message_bytes}) {}

  void on_response_head(int status, const std::vector<HttpHeader>& headers) override {
    status_ = status;
    head_received_ = true;
    Shared& shared = exchange_->shared();
    if (is_post_ && exchange_->is_initialize() && status >= 200 && status < 300) {
      if (const auto id = providers::find_header(headers, "Mcp-Session-Id")) {
        if (valid_session_id(*id)) {
          shared.set_session_id(std::string(*id));
        } else {
          shared.deliver_problem(
              Error(codes::kMcpBadResponse,
                    "the server's Mcp-Session-Id is not visible ASCII (1..1024 bytes): ignored"));
        }
      }
    }
    if (status == 404 && exchange_->had_session()) {
      mode_ = Mode::kIgnore;
      shared.end(Error(codes::kMcpSessionExpired,
                       "the server answered 404 to a request of session " + shared.session_id() +
                           ": the session is gone; open a new one",
                       /*retryable=*/true));
      return;
    }
    if (!is_post_ && exchange_->is_standalone() && status == 405) {
      mode_ = Mode::kIgnore;  // the server offers no stream for unasked messages: allowed, nothing to say
      return;
    }
    if (status < 200 || status >= 300) {
      mode_ = Mode::kErrorBody;
      if (status == 401 || status == 403) {
        if (const auto value = providers::find_header(headers, "WWW-Authenticate"))
          www_authenticate_ = std::string(*value);
      }
      return;
    }
    if (!exchange_->is_request() && is_post_) {
      mode_ = Mode::kIgnore;  // a notification's or a response's answer carries nothing for us
      return;
    }
    if (status == 202 || status == 204) {
      mode_ = Mode::kIgnore;
      failure_ = Error(codes::kMcpHttpStatus, "the server answered " + std::to_string(status) +
                                                  " to a request, without its response");
      return;
    }
    const auto content_type = providers::find_header(headers, "Content-Type");
    const std::string type = content_type ? media_type(*content_type) : "";
    if (type == "application/json") {
      mode_ = Mode::kJson;
    } else if (type == "text/event-stream") {
      mode_ = Mode::kSse;
    } else {
      mode_ = Mode::kIgnore;
      failure_ = Error(codes::kMcpHttpBadContentType,
                       "the server answered with Content-Type '" + excerpt(content_type.value_or("")) +
                           "', neither application/json nor text/event-stream");
    }
  }

  void on_body(std::string_view chunk) override {
    if (failure_) return;
    switch (mode_) {
      case Mode::kIgnore:
        return;
      case Mode::kJson:
      case Mode::kErrorBody:
        if (body_.size() + chunk.size() > exchange_->shared().options().max_message_bytes) {
          abort(Error(codes::kMcpMessageTooLarge,
                      "the server's answer is over " +
                          std::to_string(exchange_->shared().options().max_message_bytes) + " bytes"));
          return;
        }
        body_.append(chunk);
        return;
      case Mode::kSse: {
        std::vector<SseEvent> events;
        const Result<void> fed = parser_.feed(chunk, events);
        for (SseEvent& event : events) take_event(event);
        exchange_->note_stream_position(parser_.last_event_id(), parser_.retry_ms());
        if (!fed) {
          const bool too_large = fed.error().code() == codes::kProviderEventTooLarge;
          abort(Error(too_large ? codes::kMcpMessageTooLarge : codes::kMcpSseBadEvent,
                      "the server's event stream: " + fed.error().message()));
        }
        return;
      }
    }
  }

  void on_complete(Result<void> result) override {
    if (failure_) return exchange_->fail(*failure_);
    if ((head_received_ && mode_ == Mode::kIgnore) || exchange_->answered()) return exchange_->finish();
    if (!result) {
      if (result.error().code() == codes::kCancelled) return exchange_->finish();  // close(), or answered
      if (mode_ == Mode::kSse)
        return exchange_->stream_ended("the event stream broke (" + result.error().message() + ")");
      if (!head_received_) {
        return exchange_->fail(Error(codes::kMcpHttpUnreachable,
                                     "cannot reach the MCP server: " + result.error().to_string(),
                                     result.error().retryable()));
      }
      return exchange_->fail(Error(codes::kMcpHttpStreamEnded,
                                   "the answer broke off: " + result.error().to_string(),
                                   /*retryable=*/true));
    }
    switch (mode_) {
      case Mode::kErrorBody:
        return complete_error_status();
      case Mode::kJson:
        return complete_json();
      case Mode::kSse: {
        (void)
            parser_.finish();  // an event cut by the end is lost either way: the stream is resumed or failed
        return exchange_->stream_ended("the event stream ended before the response");
      }
      case Mode::kIgnore:
        break;
    }
    exchange_->finish();
  }

 private:
  enum class Mode { kIgnore, kJson, kSse, kErrorBody };

  void abort(Error error) {
    failure_ = std::move(error);
    exchange_->cancel_source()->cancel("the exchange failed");
  }

  void take_event(const SseEvent& event) {
    if (event.data.empty()) return;        // a priming event (an id and a retry time, no message)
    if (event.event != "message") return;  // other event types are not MCP's
    json message = json::parse(event.data, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded() || !message.is_object()) {
      exchange_->shared().deliver_problem(Error(
          codes::kMcpSseBadEvent, "an SSE event whose data is not a JSON object: " + excerpt(event.data)));
      return;
    }
    exchange_->received(std::move(message));
  }

  void complete_json() {
    json parsed = json::parse(body_, nullptr, /*allow_exceptions=*/false);
    const bool not_json = parsed.is_discarded();
    if (parsed.is_object()) {
      exchange_->received(exchange_->adopt(std::move(parsed)));
    } else if (parsed.is_array()) {  // a batch (2025-03-26 allowed servers to answer with one)
      for (json& element : parsed) {
        if (element.is_object()) exchange_->received(std::move(element));
      }
    }
    if (exchange_->answered()) return exchange_->finish();
    if (not_json) {
      return exchange_->fail(
          Error(codes::kMcpBadResponse, "the server's JSON answer is not JSON: " + excerpt(body_)));
    }
    exchange_->fail(
        Error(codes::kMcpBadResponse, "the server's JSON answer holds no response to the request"));
  }

  void complete_error_status() {
    if (is_post_ && (status_ == 401 || status_ == 403) && exchange_->may_reauthorize())
      return exchange_->reauthorize(status_, www_authenticate_);
    json parsed = json::parse(body_, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object() && parsed.contains("jsonrpc") &&
        (parsed.contains("error") || parsed.contains("result"))) {
      // A JSON-RPC answer with an HTTP error status (a 400 the 2026 version probe reads): it is the answer.
      exchange_->received(exchange_->adopt(std::move(parsed)));
      if (exchange_->answered() || !exchange_->is_request()) return exchange_->finish();
    }
    const bool auth = status_ == 401 || status_ == 403;
    const bool retryable = status_ == 408 || status_ == 429 || status_ >= 500;
    exchange_->fail(Error(auth ? codes::kMcpHttpUnauthorized : codes::kMcpHttpStatus,
                          "the MCP server answered HTTP " + std::to_string(status_) +
                              (body_.empty() ? std::string() : ": " + excerpt(body_)),
                          retryable));
  }

  const std::shared_ptr<Exchange> exchange_;
  const bool is_post_;
  int status_ = 0;
  bool head_received_ = false;
  Mode mode_ = Mode::kIgnore;
  std::string body_;
  std::string www_authenticate_;
  SseParser parser_;
  std::optional<Error> failure_;
};

void Exchange::start_post() {
  HttpRequest request;
  request.method = "POST";
  request.url = shared_->options().url;
  request.headers = post_headers_;
  request.body = body_;
  request.connect_timeout = shared_->options().connect_timeout;
  request.idle_timeout = shared_->options().idle_timeout;
  shared_->client().start(std::move(request), cancel_->token(),
                          std::make_shared<StreamHandler>(shared_from_this(), /*is_post=*/true));
}

void Exchange::retry_with_new_credentials(int status, const std::string& challenge) {
  if (shared_->ended()) return finish();
  const std::shared_ptr<McpHttpAuth>& auth = shared_->options().auth;
  std::string used;
  const auto old = std::find_if(post_headers_.begin(), post_headers_.end(),
                                [](const HttpHeader& h) { return h.name == "Authorization"; });
  if (old != post_headers_.end() && old->value.starts_with("Bearer ")) used = old->value.substr(7);
  const Result<void> renewed = auth->on_challenge(status, challenge, used);
  if (!renewed) {
    return fail(renewed.error().with_context("the MCP server answered HTTP " + std::to_string(status) +
                                             " and the credentials could not be renewed"));
  }
  Result<std::string> token = auth->token();
  if (!token) return fail(token.error().with_context("getting the MCP server's bearer token"));
  if (old != post_headers_.end()) post_headers_.erase(old);
  if (!token->empty()) post_headers_.push_back({"Authorization", "Bearer " + *token});
  start_post();
}

void Exchange::start_get() {
  if (shared_->ended()) return finish();
  Result<std::vector<HttpHeader>> headers = shared_->common_headers("");
  if (!headers) return fail(headers.error());
  HttpRequest request;
  request.method = "GET";
  request.url = shared_->options().url;
  request.headers = std::move(*headers);
  request.headers.push_back({"Accept", "text/event-stream"});
  if (!last_event_id_.empty()) request.headers.push_back({"Last-Event-ID", last_event_id_});
  request.connect_timeout = shared_->options().connect_timeout;
  request.idle_timeout = shared_->options().idle_timeout;
  shared_->client().start(std::move(request), cancel_->token(),
                          std::make_shared<StreamHandler>(shared_from_this(), /*is_post=*/false));
}

class HttpTransport final : public McpTransport {
 public:
  HttpTransport(HttpTransportOptions options, std::shared_ptr<providers::HttpClient> client)
      : client_(std::move(client)), shared_(std::make_shared<Shared>(std::move(options), client_.get())) {}
  ~HttpTransport() override {
    close();
    shared_->stop_timer();
  }
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  Result<void> start(Handlers handlers) override {
    if (!handlers.on_message)
      return fail(codes::kInvalidArgument, "the transport needs an on_message handler");
    if (shared_->started()) return fail(codes::kInvalidArgument, "the transport was started already");
    shared_->set_handlers(std::move(handlers));
    return {};
  }

  Result<void> send(const json& message) override {
    if (!shared_->started() || shared_->ended())
      return fail(codes::kMcpTransportClosed, "the MCP HTTP transport is not open");
    std::string body = message.dump(-1, ' ', false, json::error_handler_t::replace);
    if (body.size() > shared_->options().max_message_bytes) {
      return fail(codes::kMcpMessageTooLarge, "a message of " + std::to_string(body.size()) +
                                                  " bytes is over the bound of " +
                                                  std::to_string(shared_->options().max_message_bytes));
    }
    std::string method;
    json params = json::object();
    std::string meta_version;
    if (message.is_object()) {
      if (const auto m = message.find("method"); m != message.end() && m->is_string())
        method = m->get<std::string>();
      if (const auto p = message.find("params"); p != message.end() && p->is_object()) params = *p;
      if (const auto meta = params.find("_meta"); meta != params.end() && meta->is_object()) {
        if (const auto v = meta->find(kMetaProtocolVersion); v != meta->end() && v->is_string())
          meta_version = v->get<std::string>();
      }
    }
    Result<std::vector<HttpHeader>> headers = shared_->common_headers(meta_version);
    if (!headers) return fail(headers.error());
    headers->push_back({"Content-Type", "application/json"});
    headers->push_back({"Accept", "application/json, text/event-stream"});
    const std::string version = meta_version.empty() ? shared_->protocol_version() : meta_version;
    if (!method.empty() && version >= kFirstStatelessRevision) {
      headers->push_back({"Mcp-Method", method});
      if (const std::string name = mcp_name_header(method, params); !name.empty())
        headers->push_back({"Mcp-Name", encode_header_value(name)});
      if (method == "tools/call") {
        for (HttpHeader& header : shared_->param_headers(params)) headers->push_back(std::move(header));
      }
    }
    auto exchange = std::make_shared<Exchange>(shared_, message, std::move(body), std::move(*headers));
    Result<uint64_t> number = shared_->admit(exchange->cancel_source());
    if (!number) return fail(number.error());
    exchange->set_number(*number);
    exchange->start_post();
    return {};
  }

  void close() override {
    auto [session, in_handler] = shared_->begin_close();
    if (closed_.exchange(true)) {
      if (!in_handler) shared_->wait_idle();
      return;
    }
    shared_->stop_timer();
    if (!session.empty()) delete_session(in_handler);
    shared_->cancel_all("the MCP HTTP transport closed");
    if (!in_handler) shared_->wait_idle();
  }

  void set_protocol_version(std::string version) override {
    shared_->set_protocol_version(std::move(version));
  }

  // The standalone GET stream, once: what the server sends there is delivered like any message. A 405 (the
  // server offers none) ends it quietly; its end reconnects (Exchange::reconnect).
  void open_server_stream() override {
    if (!shared_->started() || shared_->ended() || server_stream_opened_.exchange(true)) return;
    // The stream's GETs take their headers from common_headers(); the session id is named here only so a 404
    // to them means, as for any request of the session, that the server forgot the session.
    std::vector<HttpHeader> session;
    if (const std::string id = shared_->session_id(); !id.empty()) session.push_back({"Mcp-Session-Id", id});
    auto exchange = std::make_shared<Exchange>(shared_, json(), std::string(), std::move(session));
    exchange->make_standalone();
    Result<uint64_t> number = shared_->admit(exchange->cancel_source());
    if (!number) {
      shared_->deliver_problem(number.error().with_context("the server's stream for unasked messages"));
      return;
    }
    exchange->set_number(*number);
    exchange->start_get();
  }
  std::string endpoint() const override { return shared_->options().url; }

 private:
  // Tells the server the session is over. Best effort: its answer (405 when the server does not allow it)
  // changes nothing.
  void delete_session(bool in_handler) {
    class Done final : public providers::HttpStreamHandler {
     public:
      void on_response_head(int, const std::vector<HttpHeader>&) override {}
      void on_body(std::string_view) override {}
      void on_complete(Result<void>) override {
        MutexLock lock(mu_);
        done_ = true;
        cv_.notify_all();
      }
      void wait(std::chrono::milliseconds bound) {
        MutexLock lock(mu_);
        const auto give_up = std::chrono::steady_clock::now() + bound;
        while (!done_) {
          if (lock.wait_until(cv_, give_up) == std::cv_status::timeout) return;
        }
      }

     private:
      Mutex mu_;
      std::condition_variable cv_;
      bool done_ GUARDED_BY(mu_) = false;
    };
    Result<std::vector<HttpHeader>> headers = shared_->common_headers("");
    if (!headers) return;  // no credentials now: the server ends the session by itself
    HttpRequest request;
    request.method = "DELETE";
    request.url = shared_->options().url;
    request.headers = std::move(*headers);
    request.connect_timeout = shared_->options().delete_timeout;
    request.total_timeout = shared_->options().delete_timeout;
    auto done = std::make_shared<Done>();
    client_->start(std::move(request), delete_cancel_.token(), done);
    if (!in_handler) done->wait(shared_->options().delete_timeout);
  }

  const std::shared_ptr<providers::HttpClient> client_;
  const std::shared_ptr<Shared> shared_;
  CancellationSource delete_cancel_;
  std::atomic<bool> closed_ = false;  // close() ran
  std::atomic<bool> server_stream_opened_ = false;
};

}  // namespace

std::string mcp_name_header(const std::string& method, const json& params) {
  const char* field = nullptr;
  if (method == "tools/call" || method == "prompts/get")
    field = "name";
  else if (method == "resources/read")
    field = "uri";
  else if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel")
    field = "taskId";
  if (field == nullptr || !params.is_object()) return "";
  const auto value = params.find(field);
  if (value == params.end() || !value->is_string()) return "";
  return value->get<std::string>();
}

std::string encode_header_value(const std::string& value) {
  const bool plain = std::all_of(value.begin(), value.end(), [](char c) { return c >= 0x20 && c <= 0x7e; }) &&
                     (value.empty() || (value.front() != ' ' && value.back() != ' ')) &&
                     !value.starts_with("=?base64?");
  if (plain) return value;
  return "=?base64?" + base64(value) + "?=";
}

Result<std::unique_ptr<McpTransport>> make_http_transport(HttpTransportOptions options) {
  const std::string scheme = lower(options.url.substr(0, options.url.find("://")));
  if (options.url.find("://") == std::string::npos || (scheme != "http" && scheme != "https")) {
    return fail(codes::kInvalidArgument, "an MCP server URL must be http:// or https://");
  }
  std::shared_ptr<providers::HttpClient> client = options.http_client;
  if (!client) client = std::make_shared<providers::CurlHttpClient>();
  options.http_client = nullptr;  // the transport holds it; Shared must not keep it alive
  return std::unique_ptr<McpTransport>(
      std::make_unique<HttpTransport>(std::move(options), std::move(client)));
}

}  // namespace keel::mcp
