// mcp/client/mcp_session_impl.cc — see mcp_session_impl.h.
#include "mcp/client/mcp_session_impl.h"

#include <future>
#include <mutex>
#include <set>
#include <utility>

#include "keel/error_codes.h"
#include "mcp/client/mcp_results.h"
#include "mcp/mcp_errors.h"

namespace keel::mcp {

using nlohmann::json;
using Context = McpSessionImpl::Context;

namespace {

// params with the generation's _meta merged in.
json with_meta(const Context& context, json params) {
  if (!params.is_object()) params = json::object();
  if (context.meta.empty()) return params;
  json& meta = params["_meta"];
  if (!meta.is_object()) meta = json::object();
  for (const auto& [key, value] : context.meta.items()) meta[key] = value;
  return params;
}

struct ListState {
  std::vector<McpToolInfo> tools;
  std::set<std::string> names;
  size_t pages = 0;
  std::function<void(Result<std::vector<McpToolInfo>>)> done;
};

void fetch_tool_page(std::shared_ptr<Context> context, std::shared_ptr<ListState> state,
                     std::optional<std::string> cursor) {
  json params = json::object();
  if (cursor) params["cursor"] = *cursor;
  RpcRequestOptions options;
  options.idle_timeout = context->options.list_timeout;
  options.max_total = context->options.list_timeout;
  JsonRpcClient& core = *context->core;
  core.request(
      "tools/list", with_meta(*context, std::move(params)), std::move(options),
      [context, state](Result<json> reply) {
        if (!reply) return state->done(fail(reply.error()));
        Result<McpToolPage> page = parse_tool_page(*reply, context->check_param_headers);
        if (!page) return state->done(fail(page.error()));
        ++state->pages;
        for (const std::string& skipped : page->skipped)
          context->problem(Error(codes::kMcpBadResponse, "tools/list: skipped " + skipped), false);
        for (McpToolInfo& tool : page->tools) {
          if (!state->names.insert(tool.name).second) {
            context->problem(Error(codes::kMcpBadResponse, "tools/list: a second tool named " +
                                                               tool.name.substr(0, 128) + " was skipped"),
                             false);
            continue;
          }
          state->tools.push_back(std::move(tool));
        }
        if (state->tools.size() > context->options.max_tools)
          return state->done(
              fail(codes::kMcpTooManyTools,
                   "the server lists more than " + std::to_string(context->options.max_tools) + " tools"));
        if (!page->next_cursor) return state->done(std::move(state->tools));
        if (state->pages >= context->options.max_tool_pages)
          return state->done(
              fail(codes::kMcpTooManyTools, "the server's tool list runs over more than " +
                                                std::to_string(context->options.max_tool_pages) + " pages"));
        fetch_tool_page(context, state, page->next_cursor);
      });
}

// Ties a call to its cancellation token: the registration lives until the call completes.
struct CallState {
  std::mutex mu;
  bool finished = false;
  CancellationRegistration registration;
};

}  // namespace

McpSessionImpl::McpSessionImpl(std::unique_ptr<McpTransport> transport, McpClientOptions options,
                               McpSessionEvents events)
    : context_(std::make_shared<Context>()), transport_(std::move(transport)) {
  context_->options = std::move(options);
  context_->events = std::move(events);
  JsonRpcClient::Handlers handlers;
  McpTransport* channel = transport_.get();  // outlives the core's use of it: close() stops the core first
  handlers.send = [channel](const json& message) { return channel->send(message); };
  std::weak_ptr<Context> weak = context_;
  handlers.on_problem = [weak](const Error& problem) {
    if (auto context = weak.lock()) context->problem(problem, false);
  };
  handlers.on_notification = [weak](const std::string& method, const json& params) {
    auto context = weak.lock();
    if (!context) return;
    if (method == "notifications/tools/list_changed") {
      if (context->events.on_tools_changed) context->events.on_tools_changed();
    } else if (method == "notifications/message") {
      if (context->events.on_log) context->events.on_log(parse_log_message(params));
    }
    // Other notifications (resources, prompts, a server's own cancellation) concern nothing keel uses yet.
  };
  context_->core = JsonRpcClient::create(std::move(handlers), context_->options.clock);
}

McpSessionImpl::~McpSessionImpl() { close(); }

Result<void> McpSessionImpl::start() {
  McpTransport::Handlers handlers;
  std::shared_ptr<Context> context = context_;
  handlers.on_message = [context](json message) { context->core->handle_message(message); };
  handlers.on_problem = [context](const Error& problem, bool is_log) { context->problem(problem, is_log); };
  handlers.on_closed = [context](const Error& reason) {
    context->core->close(reason);
    if (context->events.on_closed) context->events.on_closed(reason);
  };
  return transport_->start(std::move(handlers));
}

Result<json> McpSessionImpl::request_blocking(const std::string& method, json params,
                                              std::chrono::milliseconds timeout, bool cancel_on_timeout,
                                              bool errors_as_values) {
  auto promise = std::make_shared<std::promise<Result<json>>>();
  std::future<Result<json>> future = promise->get_future();
  RpcRequestOptions options;
  options.idle_timeout = timeout;
  options.max_total = timeout;
  options.cancel_on_timeout = cancel_on_timeout;
  options.errors_as_values = errors_as_values;
  const int64_t id =
      context_->core->request(method, std::move(params), std::move(options),
                              [promise](Result<json> reply) { promise->set_value(std::move(reply)); });
  // The core's timer ends the request on its clock; this real-time bound only guards a clock that does not
  // move (a test's manual clock).
  if (future.wait_for(timeout + std::chrono::seconds(1)) != std::future_status::ready) {
    context_->core->cancel(id, "timed out");
    return fail(codes::kMcpCallTimedOut, method + " got no answer in time");
  }
  return future.get();
}

Result<void> McpSessionImpl::notify(const std::string& method, json params) {
  return context_->core->notify(method, with_meta(*context_, std::move(params)));
}

json McpSessionImpl::client_info() const {
  return {{"name", context_->options.client_name}, {"version", context_->options.client_version}};
}

json McpSessionImpl::modern_meta() const {
  return {{"io.modelcontextprotocol/protocolVersion", kModernRevision},
          // Only what keel implements: no elicitation, sampling or roots yet.
          {"io.modelcontextprotocol/clientCapabilities", json::object()},
          {"io.modelcontextprotocol/clientInfo", client_info()}};
}

void McpSessionImpl::become_ready(McpServerInfo info, bool modern) {
  info_ = std::move(info);
  if (modern) context_->meta = modern_meta();
  context_->check_param_headers = info_.protocol_version == kModernRevision;
  transport_->set_protocol_version(info_.protocol_version);
  if (!modern) transport_->open_server_stream();
}

void McpSessionImpl::request_log_level(std::string level) {
  RpcRequestOptions options;
  options.idle_timeout = context_->options.list_timeout;
  options.max_total = context_->options.list_timeout;
  std::weak_ptr<Context> weak = context_;
  context_->core->request("logging/setLevel", with_meta(*context_, json{{"level", level}}),
                          std::move(options), [weak, level](Result<json> reply) {
                            if (reply) return;
                            if (auto context = weak.lock())
                              context->problem(reply.error().with_context("logging/setLevel " + level),
                                               false);
                          });
}

void McpSessionImpl::list_tools(std::function<void(Result<std::vector<McpToolInfo>>)> done) {
  auto state = std::make_shared<ListState>();
  state->done = std::move(done);
  fetch_tool_page(context_, std::move(state), std::nullopt);
}

void McpSessionImpl::call_tool(McpCallRequest request, std::function<void(Result<McpCallResult>)> done) {
  if (request.cancel.is_cancelled())
    return done(
        fail(codes::kCancelled, "tools/call " + request.tool + " was cancelled: " + request.cancel.reason()));
  auto state = std::make_shared<CallState>();
  RpcRequestOptions options;
  options.idle_timeout = request.idle_timeout;
  options.max_total = request.max_total;
  options.with_progress = true;  // always: without a token a server cannot report progress at all
  options.on_progress = std::move(request.on_progress);
  json params = {{"name", request.tool}, {"arguments", std::move(request.arguments)}};
  std::shared_ptr<JsonRpcClient> core = context_->core;
  const int64_t id = core->request("tools/call", with_meta(*context_, std::move(params)), std::move(options),
                                   [state, done = std::move(done)](Result<json> reply) {
                                     CancellationRegistration registration;
                                     {
                                       std::lock_guard lock(state->mu);
                                       state->finished = true;
                                       registration = std::move(state->registration);
                                     }
                                     registration =
                                         CancellationRegistration();  // unregistered outside the lock
                                     if (!reply) return done(fail(reply.error()));
                                     done(parse_call_result(*reply));
                                   });
  std::weak_ptr<JsonRpcClient> weak_core = core;
  CancellationToken token = request.cancel;
  CancellationRegistration registration = token.on_cancel([weak_core, id, token] {
    if (auto live = weak_core.lock()) live->cancel(id, token.reason());
  });
  std::lock_guard lock(state->mu);
  if (!state->finished) state->registration = std::move(registration);
  // Otherwise `registration` is dropped when this returns: the call is over.
}

void McpSessionImpl::close() {
  if (closed_.exchange(true)) return;
  context_->core->close(Error(codes::kMcpTransportClosed, "the MCP session was closed"));
  transport_->close();
}

}  // namespace keel::mcp
