// transport/rpc_params.h — the parameters of each JSON-RPC method, read from the protocol's JSON Schema.
//
// The methods are the rows of the op table (protocol/ops.h), which also says which are receipted.
// docs/protocol/keel-protocol-v1.schema.json is compiled into keel (rpc_schema_text.cc is generated from it
// at build time), and its `params.<method>` definitions are what every request's params are checked against
// before anything reaches the engine or a receipt is written: types, required members, enum values, bounds
// and the string patterns the schema states. The schema test holds the table and the schema to each other
// (every op has a definition and vice versa; an op is receipted exactly when its definition requires a
// `submissionId`), so the documented schema, the server's checks and the list of methods cannot drift apart.
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
#include "protocol/ops.h"

namespace keel::rpc {

struct MethodParams {
  std::string method;
  const protocol::OpSpec* op = nullptr;  // the op table's row (static storage)
  bool receipted = false;
  std::set<std::string> required;
  std::shared_ptr<const ParameterValidator> validator;
};

// The method's entry; nullptr when the op table has no such method.
const MethodParams* find_method(std::string_view method);
// Every method of the op table, sorted by name.
std::vector<std::string> method_names();

// Prepares and checks a request's params (an object) for `method`: a member whose value is null and which
// the method does not require is absent, so it is removed (a client may send `"turnId": null` for "none");
// then the params must match the schema. invalid_argument naming each violation ("/decision: ...").
Result<void> check_params(const MethodParams& method, nlohmann::json& params);

// The embedded schema document's text (generated from docs/protocol/keel-protocol-v1.schema.json).
std::string_view protocol_schema_text();

}  // namespace keel::rpc
