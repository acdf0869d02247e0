// model_server/response_selector.h — which scripted response answers a request.
//
// A response with a `match` is chosen whenever its text occurs in the request's last user or tool-result
// message (the first such response in script order wins; "" matches every request). That choice depends
// on the request alone, so a client that restarts and sends the same conversation again gets the same
// answer. Requests that no match claims take the responses without a `match`, in order, each once.
// Not thread-safe: the server calls it from its one I/O thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "model_server/script.h"
#include "model_server/wire_encoder.h"

namespace keel::model_server {

// The text of the request body's last user or tool-result message, in the API's request format (text parts
// joined with "\n"); "" when there is none.
std::string last_input_text(Api api, const nlohmann::json& body);

class ResponseSelector {
 public:
  // `script` must outlive the selector.
  explicit ResponseSelector(const Script& script) : script_(script) {}

  // nullptr when no match applies and the ordered responses are used up.
  const ScriptedResponse* choose(std::string_view last_input);

 private:
  const Script& script_;
  size_t next_ordered_ = 0;  // index into script_.responses of the next unmatched response to consider
};

}  // namespace keel::model_server
