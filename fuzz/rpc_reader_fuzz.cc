// fuzz_rpc_reader — the JSON-RPC reader (transport/json_rpc.h: parse_message with its depth bound and the
// schema-driven params check, then to_op bound to a principal) on arbitrary bytes. It must never throw or
// crash, whatever the nesting, and what it returns must keep its promises: every entry is either a call of a
// method the schema defines, with object params holding no null that the method does not require, or a
// JSON-RPC error response carrying keel's dotted code; a batch is never larger than the bound; every response
// can be written out as JSON; every op stays inside the connection's principal, whatever clientId it claims.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "transport/json_rpc.h"
#include "transport/rpc_params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using keel::fuzz::require;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  keel::rpc::Limits limits;
  limits.max_message_bytes = 256 * 1024;
  limits.max_batch = 8;
  keel::rpc::Incoming incoming;
  try {
    incoming = keel::rpc::parse_message(text, limits);
  } catch (...) {
    require(false, "parse_message threw");
  }
  require(!incoming.entries.empty(), "a message earned neither a call nor an error");
  require(incoming.entries.size() <= limits.max_batch, "a batch over the bound was read");
  require(incoming.batch || incoming.entries.size() == 1, "a single message became several entries");
  for (auto& entry : incoming.entries) {
    if (const auto* error = std::get_if<nlohmann::json>(&entry)) {
      require(error->is_object() && error->value("jsonrpc", "") == "2.0",
              "an error response without jsonrpc");
      require((*error)["error"]["code"].is_number_integer(), "an error response without an integer code");
      require((*error)["error"]["data"]["code"].is_string(), "an error response without keel's code");
      require(nlohmann::json::accept(keel::rpc::dump(*error)), "an error response that is not JSON");
      continue;
    }
    auto& call = std::get<keel::rpc::Call>(entry);
    const keel::rpc::MethodParams* method = keel::rpc::find_method(call.method);
    require(method != nullptr, "a call of a method the schema does not define");
    require(call.params.is_object(), "a call whose params are not an object");
    for (const auto& [key, value] : call.params.items()) {
      require(!value.is_null() || method->required.contains(key),
              "a null optional parameter reached the call");
    }
    require(!method->receipted || call.submission_id.has_value(), "a receipted call without a submission id");
    const std::optional<std::string> claimed = call.client_id;
    keel::Op op = keel::rpc::to_op(std::move(call), "ws:fuzz", "rpc:fuzz:1");
    require(!op.client_id.empty() && !op.submission_id.empty(), "an op without its identity");
    // Whatever clientId the message claims, the op stays inside the connection's principal.
    require(op.client_id == "ws:fuzz" || op.client_id.starts_with("ws:fuzz/"), "an op outside its principal");
    require(claimed.has_value() == (op.client_id != "ws:fuzz"), "a claimed clientId lost or invented");
  }
  return 0;
}
