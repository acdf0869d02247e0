// transport/transport_errors.h — error codes of the JSON-RPC transports (stable, part of the protocol).
//
// They travel in a JSON-RPC error's `data.code` beside the JSON-RPC integer code, and in the `disconnect`
// notification that tells a client why the server is closing its connection.
#pragma once

namespace keel::codes {

inline constexpr char kRpcParseError[] = "rpc.parse_error";          // not JSON, or not valid UTF-8
inline constexpr char kRpcInvalidRequest[] = "rpc.invalid_request";  // not a JSON-RPC 2.0 request
inline constexpr char kRpcBatchTooLarge[] = "rpc.batch_too_large";  // more requests in one batch than allowed
inline constexpr char kRpcMethodNotFound[] = "rpc.method_not_found";  // not an op nor a session method
inline constexpr char kRpcInvalidParams[] =
    "rpc.invalid_params";  // a parameter of the wrong type, or missing
inline constexpr char kRpcMessageTooLarge[] = "rpc.message_too_large";  // over the message size bound
inline constexpr char kRpcClientTooSlow[] = "rpc.client_too_slow";      // its outbound queue overflowed
inline constexpr char kRpcUnauthorized[] = "rpc.unauthorized";          // wrong or missing token (HTTP 401)
inline constexpr char kRpcListenFailed[] = "rpc.listen_failed";         // the WebSocket port cannot be bound

}  // namespace keel::codes
