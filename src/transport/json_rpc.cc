#include "transport/json_rpc.h"

#include <algorithm>
#include <array>
#include <exception>

#include "keel/error_codes.h"
#include "transport/transport_errors.h"

namespace keel::rpc {

using nlohmann::json;

namespace {

enum class Kind { kString, kInteger, kBool, kObject, kArray, kAny };

struct Param {
  const char* name;
  Kind kind;
  bool required;
};

struct MethodSpec {
  const char* method;
  bool receipted;
  std::vector<Param> params;
};

// The parameter types each method takes (docs/protocol.md). Only types and presence are checked here; the
// engine judges the values (an unknown thread, a bad input) and answers with a coded rejection.
const std::vector<MethodSpec>& method_specs() {
  static const std::vector<MethodSpec> specs = {
      {"initialize", false, {{"subscribe", Kind::kBool, false}}},
      {"thread.create", true, {{"title", Kind::kString, false}}},
      {"thread.delete", true, {{"threadId", Kind::kString, true}}},
      {"thread.fork",
       true,
       {{"threadId", Kind::kString, true}, {"atNodeId", Kind::kString, false}, {"title", Kind::kString, false}}},
      {"thread.selectBranch",
       true,
       {{"threadId", Kind::kString, true},
        {"leafNodeId", Kind::kString, true},
        {"expectedRevision", Kind::kInteger, false}}},
      {"thread.list", false, {}},
      {"thread.read", false, {{"threadId", Kind::kString, true}}},
      {"turn.submit",
       true,
       {{"threadId", Kind::kString, true}, {"input", Kind::kAny, true}, {"budgetTokens", Kind::kInteger, false}}},
      {"turn.interrupt", false, {{"threadId", Kind::kString, true}, {"turnId", Kind::kString, false}}},
      {"turn.steer",
       true,
       {{"threadId", Kind::kString, true},
        {"expectedTurnId", Kind::kString, true},
        {"input", Kind::kAny, true},
        {"attachments", Kind::kArray, false}}},
      {"turn.input",
       true,
       {{"threadId", Kind::kString, true}, {"input", Kind::kAny, true}, {"attachments", Kind::kArray, false}}},
      {"turn.enqueue", true, {{"threadId", Kind::kString, true}, {"input", Kind::kAny, true}}},
      {"queue.start", true, {{"threadId", Kind::kString, true}}},
      {"queue.update",
       true,
       {{"threadId", Kind::kString, true},
        {"itemId", Kind::kString, true},
        {"input", Kind::kAny, true},
        {"expectedRevision", Kind::kInteger, false}}},
      {"queue.remove", true, {{"threadId", Kind::kString, true}, {"itemId", Kind::kString, true}}},
      {"queue.list", false, {{"threadId", Kind::kString, true}}},
      {"run.resume",
       false,
       {{"threadId", Kind::kString, true},
        {"runId", Kind::kString, false},
        {"additionalBudgetTokens", Kind::kInteger, false}}},
      {"run.resolveUncertain",
       true,
       {{"threadId", Kind::kString, true}, {"runId", Kind::kString, false}, {"resolution", Kind::kString, true}}},
      {"approval.response",
       true,
       {{"threadId", Kind::kString, true},
        {"approvalId", Kind::kString, true},
        {"decision", Kind::kString, true},
        {"reason", Kind::kString, false}}},
      {"interaction.response",
       true,
       {{"threadId", Kind::kString, true}, {"interactionId", Kind::kString, true}, {"response", Kind::kAny, true}}},
      {"policy.read", false, {}},
      {"policy.setMode", true, {{"threadId", Kind::kString, false}, {"mode", Kind::kString, true}}},
      {"policy.addRule",
       true,
       {{"scope", Kind::kString, true},
        {"tool", Kind::kString, false},
        {"effects", Kind::kAny, false},
        {"decision", Kind::kString, true}}},
      {"policy.removeRule", true, {{"ruleId", Kind::kAny, true}}},
      {"policy.setHostPermissions", true, {{"patterns", Kind::kArray, true}}},
      {kSubscribeMethod, false, {{"threadIds", Kind::kArray, false}}},
      {kUnsubscribeMethod, false, {{"threadIds", Kind::kArray, true}}},
  };
  return specs;
}

const MethodSpec* find_spec(std::string_view method) {
  for (const MethodSpec& spec : method_specs()) {
    if (method == spec.method) return &spec;
  }
  return nullptr;
}

bool has_kind(const json& value, Kind kind) {
  switch (kind) {
    case Kind::kString: return value.is_string();
    case Kind::kInteger: return value.is_number_integer();
    case Kind::kBool: return value.is_boolean();
    case Kind::kObject: return value.is_object();
    case Kind::kArray: return value.is_array();
    case Kind::kAny: return true;
  }
  return false;
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kString: return "a string";
    case Kind::kInteger: return "an integer";
    case Kind::kBool: return "a boolean";
    case Kind::kObject: return "an object";
    case Kind::kArray: return "an array";
    case Kind::kAny: return "a value";
  }
  return "a value";
}

bool valid_id(const json& id) { return id.is_string() || id.is_number() || id.is_null(); }

// Checks one request object; returns the call or the error response it earns.
std::variant<Call, json> check_request(const json& request) {
  if (!request.is_object())
    return error_response(nullptr, kInvalidRequest, "a request must be a JSON object", codes::kRpcInvalidRequest);
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
  const MethodSpec* spec = find_spec(name);
  if (spec == nullptr)
    return error_response(id, kMethodNotFound, "no method '" + name + "'", codes::kRpcMethodNotFound);

  json params = json::object();
  if (auto found = request.find("params"); found != request.end()) {
    if (!found->is_object()) {
      return error_response(id, kInvalidParams, "'params' must be an object (by-name parameters)",
                            codes::kRpcInvalidParams);
    }
    params = *found;
  }
  Call call;
  call.id = id;
  call.notification = notification;
  call.method = name;
  for (const char* key : {"clientId", "submissionId"}) {
    auto found = params.find(key);
    if (found == params.end()) continue;
    if (!found->is_string() || found->get_ref<const std::string&>().empty()) {
      return error_response(id, kInvalidParams, std::string("'") + key + "' must be a non-empty string",
                            codes::kRpcInvalidParams);
    }
    (std::string_view(key) == "clientId" ? call.client_id : call.submission_id) = found->get<std::string>();
    params.erase(found);
  }
  for (const Param& param : spec->params) {
    auto found = params.find(param.name);
    const bool absent = found == params.end() || (!param.required && found->is_null());
    if (absent) {
      if (param.required) {
        return error_response(id, kInvalidParams, std::string("'") + param.name + "' is required",
                              codes::kRpcInvalidParams);
      }
      continue;
    }
    if (!has_kind(*found, param.kind)) {
      return error_response(id, kInvalidParams,
                            std::string("'") + param.name + "' must be " + kind_name(param.kind) + ", got " +
                                found->type_name(),
                            codes::kRpcInvalidParams);
    }
  }
  if (spec->receipted && !call.submission_id) {
    return error_response(id, kInvalidParams, "'" + name + "' is receipted: params need a 'submissionId'",
                          codes::kRpcInvalidParams);
  }
  call.params = std::move(params);
  return call;
}

}  // namespace

Incoming parse_message(std::string_view text, const Limits& limits) {
  Incoming incoming;
  if (text.size() > limits.max_message_bytes) {
    incoming.entries.emplace_back(error_response(
        nullptr, kInvalidRequest,
        "message of " + std::to_string(text.size()) + " bytes is over the bound of " +
            std::to_string(limits.max_message_bytes),
        codes::kRpcMessageTooLarge, {{"maxBytes", limits.max_message_bytes}}));
    return incoming;
  }
  json message;
  try {
    message = json::parse(text);
  } catch (const json::exception& error) {
    incoming.entries.emplace_back(
        error_response(nullptr, kParseError, std::string("not JSON: ") + error.what(), codes::kRpcParseError));
    return incoming;
  }
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
    incoming.entries.emplace_back(error_response(
        nullptr, kInvalidRequest,
        "batch of " + std::to_string(message.size()) + " requests; at most " + std::to_string(limits.max_batch),
        codes::kRpcBatchTooLarge, {{"maxBatch", limits.max_batch}}));
    return incoming;
  }
  incoming.batch = true;
  for (const json& request : message) incoming.entries.push_back(check_request(request));
  return incoming;
}

bool is_op_method(std::string_view method) { return find_spec(method) != nullptr && !is_session_method(method); }

bool is_session_method(std::string_view method) {
  return method == kSubscribeMethod || method == kUnsubscribeMethod;
}

bool is_receipted(std::string_view method) {
  const MethodSpec* spec = find_spec(method);
  return spec != nullptr && spec->receipted;
}

Op to_op(Call call, const std::string& connection_id, std::string fallback_submission) {
  return Op{std::move(call.method), call.client_id.value_or(connection_id),
            call.submission_id.value_or(std::move(fallback_submission)), std::move(call.params)};
}

int rpc_code_for(std::string_view keel_code) {
  // Wrong values in the params are the client's mistake in the same sense as wrong types.
  if (keel_code == codes::kInvalidArgument || keel_code == "input.invalid") return kInvalidParams;
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
