#include "transport/json_rpc.h"

#include <algorithm>
#include <array>
#include <exception>

#include "engine/engine_errors.h"
#include "keel/error_codes.h"
#include "protocol/ops.h"
#include "transport/rpc_params.h"
#include "transport/transport_errors.h"
#include "util/canonical_json.h"

namespace keel::rpc {

using nlohmann::json;

namespace {

bool valid_id(const json& id) { return id.is_string() || id.is_number() || id.is_null(); }

// Checks one request object; returns the call or the error response it earns.
std::variant<Call, json> check_request(const json& request) {
  if (!request.is_object())
    return error_response(nullptr, kInvalidRequest, "a request must be a JSON object",
                          codes::kRpcInvalidRequest);
  json id = nullptr;
  const bool notification = !request.contains("id");
  if (!notification) {
    if (!valid_id(request["id"])) {
      return error_response(nullptr, kInvalidRequest, "'id' must be a string, a number or null",
                            codes::kRpcInvalidRequest);
    }
    id = request["id"];
  }
  auto jsonrpc = request.find("jsonrpc");
  if (jsonrpc == request.end() || *jsonrpc != "2.0")
    return error_response(id, kInvalidRequest, "'jsonrpc' must be \"2.0\"", codes::kRpcInvalidRequest);
  auto method = request.find("method");
  if (method == request.end() || !method->is_string())
    return error_response(id, kInvalidRequest, "'method' must be a string", codes::kRpcInvalidRequest);
  const std::string name = method->get<std::string>();
  const MethodParams* spec = find_method(name);
  if (spec == nullptr)
    return error_response(id, kMethodNotFound, "no method '" + name + "'", codes::kRpcMethodNotFound);

  json params = json::object();
  if (auto found = request.find("params"); found != request.end() && !found->is_null()) {
    if (!found->is_object()) {
      return error_response(id, kInvalidParams, "'params' must be an object (by-name parameters)",
                            codes::kRpcInvalidParams);
    }
    params = *found;
  }
  // Every parameter is checked against the protocol's schema here, before the engine sees the op and so
  // before any receipt is written: a wrong value must not be recorded as the submission's answer.
  if (auto checked = check_params(*spec, params); !checked) {
    return error_response(id, kInvalidParams,
                          "invalid params of '" + name + "': " + checked.error().message(),
                          codes::kRpcInvalidParams);
  }
  Call call;
  call.id = id;
  call.notification = notification;
  call.method = name;
  call.kind = spec->op->kind;
  for (const char* key : {"clientId", "submissionId"}) {
    auto found = params.find(key);
    if (found == params.end()) continue;
    (std::string_view(key) == "clientId" ? call.client_id : call.submission_id) = found->get<std::string>();
    params.erase(found);
  }
  call.params = std::move(params);
  return call;
}

}  // namespace

Incoming parse_message(std::string_view text, const Limits& limits) {
  Incoming incoming;
  if (text.size() > limits.max_message_bytes) {
    incoming.entries.emplace_back(
        error_response(nullptr, kInvalidRequest,
                       "message of " + std::to_string(text.size()) + " bytes is over the bound of " +
                           std::to_string(limits.max_message_bytes),
                       codes::kRpcMessageTooLarge, {{"maxBytes", limits.max_message_bytes}}));
    return incoming;
  }
  // keel's one parser for untrusted JSON text: invalid UTF-8 and repeated keys are refused, and nesting is
  // bounded before anything is built, so a deep message costs a scan, not a recursion (copies, schema
  // checks and encoders of the parsed value recurse).
  auto parsed = parse_json(text);
  if (!parsed) {
    if (parsed.error().code() == codes::kJsonTooDeep) {
      incoming.entries.emplace_back(error_response(nullptr, kInvalidRequest, parsed.error().message(),
                                                   codes::kJsonTooDeep, {{"maxDepth", kMaxJsonDepth}}));
    } else {
      incoming.entries.emplace_back(error_response(
          nullptr, kParseError, "not JSON: " + parsed.error().message(), codes::kRpcParseError));
    }
    return incoming;
  }
  json message = std::move(*parsed);
  if (!message.is_array()) {
    incoming.entries.push_back(check_request(message));
    return incoming;
  }
  if (message.empty()) {
    incoming.entries.emplace_back(
        error_response(nullptr, kInvalidRequest, "an empty batch", codes::kRpcInvalidRequest));
    return incoming;
  }
  if (message.size() > limits.max_batch) {
    incoming.entries.emplace_back(error_response(nullptr, kInvalidRequest,
                                                 "batch of " + std::to_string(message.size()) +
                                                     " requests; at most " + std::to_string(limits.max_batch),
                                                 codes::kRpcBatchTooLarge, {{"maxBatch", limits.max_batch}}));
    return incoming;
  }
  incoming.batch = true;
  for (const json& request : message) incoming.entries.push_back(check_request(request));
  return incoming;
}

bool is_op_method(std::string_view method) {
  return find_method(method) != nullptr && !is_session_method(method);
}

bool is_session_method(std::string_view method) {
  const protocol::OpSpec* op = protocol::find_op(method);
  return op != nullptr && op->route == protocol::OpRoute::kSession;
}

bool is_receipted(std::string_view method) {
  const protocol::OpSpec* op = protocol::find_op(method);
  return op != nullptr && op->receipted;
}

std::string bound_client_id(const std::string& principal, const std::optional<std::string>& claimed) {
  return claimed ? principal + "/" + *claimed : principal;
}

Op to_op(Call call, const std::string& principal, std::string fallback_submission) {
  std::string client_id = bound_client_id(principal, call.client_id);
  return Op{std::move(call.method), std::move(client_id),
            call.submission_id.value_or(std::move(fallback_submission)), std::move(call.params)};
}

int rpc_code_for(std::string_view keel_code) {
  // Wrong values in the params are the client's mistake in the same sense as wrong types.
  if (keel_code == codes::kInvalidArgument || keel_code == codes::kInputInvalid) return kInvalidParams;
  return kCommandRejected;
}

json error_response(const json& id, int code, std::string message, std::string keel_code, json data) {
  if (!data.is_object()) data = json::object();
  data["code"] = std::move(keel_code);
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"error", {{"code", code}, {"message", std::move(message)}, {"data", std::move(data)}}}};
}

json result_response(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json notification(std::string method, json params) {
  return {{"jsonrpc", "2.0"}, {"method", std::move(method)}, {"params", std::move(params)}};
}

json event_notification(const AgentEvent& event) { return notification("event", event.to_json()); }

bool is_answer(const AgentEvent& event) {
  return event.type == "command.ack" || event.type == "command.rejected";
}

json answer_response(const AgentEvent& answer, const json& id) {
  const json& payload = answer.payload;
  json data = {{"submissionId", payload.value("submissionId", "")}, {"method", payload.value("method", "")}};
  if (answer.type == "command.ack") {
    json result = payload.contains("result") ? payload["result"] : json::object();
    if (payload.value("replayed", false) && result.is_object()) result["replayed"] = true;
    return result_response(id, std::move(result));
  }
  const json error = payload.value("error", json::object());
  const std::string code = error.value("code", std::string(codes::kInvalidCommand));
  return error_response(id, rpc_code_for(code), error.value("message", "the command was refused"), code,
                        std::move(data));
}

std::string dump(const json& message) { return message.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace keel::rpc
