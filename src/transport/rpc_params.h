// transport/rpc_params.h — the parameters of each JSON-RPC method, read from the protocol's JSON Schema.
//
// One source of truth: docs/protocol/keel-protocol-v1.schema.json is compiled into keel (rpc_schema_text.cc
// is generated from it at build time), and its `params.<method>` definitions are what every request's params
// are checked against before anything reaches the engine or a receipt is written: types, required members,
// enum values, bounds and the string patterns the schema states. A method exists when the schema defines its
// params; it is receipted when that definition requires a `submissionId`. So the documented schema, the
// server's checks and the list of methods cannot drift apart, and a test of the schema is a test of the server.
//
// Thread-safe: the table is built once, on first use, and only read afterwards.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"
#include "keel/tool_registry.h"

namespace keel::rpc {

struct MethodParams {
  std::string method;
  bool receipted = false;
  std::set<std::string> required;
  std::shared_ptr<const ParameterValidator> validator;
};

// The method's entry; nullptr when the schema defines no such method.
const MethodParams* find_method(std::string_view method);
// Every method the schema defines, sorted by name.
std::vector<std::string> method_names();

// Prepares and checks a request's params (an object) for `method`: a member whose value is null and which
// the method does not require is absent, so it is removed (a client may send `"turnId": null` for "none");
// then the params must match the schema. invalid_argument naming each violation ("/decision: ...").
Result<void> check_params(const MethodParams& method, nlohmann::json& params);

// The embedded schema document's text (generated from docs/protocol/keel-protocol-v1.schema.json).
std::string_view protocol_schema_text();

}  // namespace keel::rpc
