// transport/json_rpc.h — the mapping between JSON-RPC 2.0 messages and keel's Ops and AgentEvents.
//
// Pure functions, no I/O and no state, shared by the stdio and WebSocket transports (docs/protocol.md,
// "JSON-RPC framing"; the schemas in docs/protocol/).
//
//   - A request {"jsonrpc":"2.0","id":..,"method":<op>,"params":{clientId?, submissionId?, ...}} becomes an
//     Op. Its clientId is the connection's principal — the identity the transport established, never a
//     claim of the message — with the message's clientId, when given, as a name inside it
//     ("<principal>/<clientId>"): receipts are found per principal (issue 15, point 10). A receipted op (one
//     whose duplicate must replay, not repeat: turn.submit, turn.steer, approval.response, ...) needs its own
//     submissionId; for the others the JSON-RPC id serves ("rpc:<connection>:<id>").
//   - The op's command.ack becomes the response's `result` (the ack's result, with `replayed: true` added
//     when the engine replayed a receipt); command.rejected becomes an `error` {code: a JSON-RPC integer,
//     message, data: {code: keel's dotted code, submissionId, method}}.
//   - Every other AgentEvent becomes the notification {"jsonrpc":"2.0","method":"event","params":{type,
//     threadId, seq, payload}}.
//
// Bad input earns a JSON-RPC error and never an exception: parse error -32700 (not JSON, invalid UTF-8, a
// repeated key), invalid request -32600 (not an object, wrong `jsonrpc`, an id of the wrong type, an empty or
// too large batch, a message over the size bound, nesting deeper than kMaxJsonDepth: json.too_deep), method
// not found -32601, invalid params -32602 (params that the protocol schema's `params.<method>` refuses:
// wrong type, enum value or bound, a required one missing; transport/rpc_params.h). A null parameter that is
// not required is dropped first. Each error carries keel's dotted code in `data.code`. The text is parsed by
// keel's parse_json (util/canonical_json.h), which bounds nesting before it builds anything.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "keel/protocol.h"
#include "protocol/ops.h"

namespace keel::rpc {

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// Server-defined range (-32000..-32099): the engine refused the command; data.code says why.
inline constexpr int kCommandRejected = -32000;

inline constexpr size_t kDefaultMaxMessageBytes = size_t{4} << 20;
inline constexpr size_t kDefaultMaxBatch = 64;

// The transport's own methods (the op table's route kSession, never sent to the engine): which threads'
// events the connection receives. session.subscribe {threadIds?: [string]} (none = all),
// session.unsubscribe {threadIds: [string]}.
// The notification sent just before the server closes a connection: {code, message}.
inline constexpr char kDisconnectMethod[] = "disconnect";

struct Limits {
  size_t max_message_bytes = kDefaultMaxMessageBytes;
  size_t max_batch = kDefaultMaxBatch;
};

// One well-formed request of an incoming message.
struct Call {
  nlohmann::json id;  // string, number or null; meaningless for a notification
  bool notification = false;
  std::string method;
  protocol::OpKind kind = protocol::OpKind::kInitialize;  // the method's row in the op table
  nlohmann::json params = nlohmann::json::object();       // without clientId and submissionId
  std::optional<std::string> client_id;
  std::optional<std::string> submission_id;
};

// What one incoming message holds: each entry a call to make or the error response it already earned.
struct Incoming {
  bool batch = false;
  std::vector<std::variant<Call, nlohmann::json>> entries;
};

Incoming parse_message(std::string_view text, const Limits& limits);

bool is_op_method(std::string_view method);
bool is_session_method(std::string_view method);
// A receipted op's duplicate replays its first outcome, so its submission id must come from the client.
bool is_receipted(std::string_view method);

// The clientId an op is recorded and answered under: `principal`, or "<principal>/<claimed>" when the client
// named a clientId of its own. A client can keep its own submissions apart with it, never reach into
// another principal's. `principal` must not contain '/'.
std::string bound_client_id(const std::string& principal, const std::optional<std::string>& claimed);

// The Op for `call`, bound to `principal` (bound_client_id); `fallback_submission` is used when the call has
// no submissionId of its own (the caller checked that it may: not receipted).
Op to_op(Call call, const std::string& principal, std::string fallback_submission);

// The JSON-RPC integer for a rejected command's dotted code.
int rpc_code_for(std::string_view keel_code);

nlohmann::json error_response(const nlohmann::json& id, int code, std::string message, std::string keel_code,
                              nlohmann::json data = nlohmann::json::object());
nlohmann::json result_response(const nlohmann::json& id, nlohmann::json result);
nlohmann::json notification(std::string method, nlohmann::json params);
// The notification for an event (not an op's answer).
nlohmann::json event_notification(const AgentEvent& event);
bool is_answer(const AgentEvent& event);
// The response an op's answer (command.ack / command.rejected) earns for the request `id`.
nlohmann::json answer_response(const AgentEvent& answer, const nlohmann::json& id);

// Serialization of an outgoing message: invalid UTF-8 from anywhere is replaced, never thrown on.
std::string dump(const nlohmann::json& message);

}  // namespace keel::rpc
